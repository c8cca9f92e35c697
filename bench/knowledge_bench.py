"""Knowledge retrieval quality: does the answering passage reach the model, at 300 to 4,000 tokens?

Five public corpora of different kinds, each with questions worded away from the answer text and an
answer that is a verbatim span of the corpus (bench/data/*/README.md has provenance and licences):

* ``sqlite``: 13 pages of the SQLite documentation (HTML, public domain);
* ``licences``: 8 free-software licences from Debian's /usr/share/common-licenses (plain text);
* ``manuals``: 25 manuals from a Debian system: man pages rendered to text, Markdown and HTML from
  /usr/share/doc, with 10 questions the corpus cannot answer (abstention);
* ``sysdocs``: 26 system and developer documents from a Debian system, none used to tune tda: configuration
  file man pages (section 5) rendered to text, Markdown guides (pip, systemd), HTML manuals (libffi, zlib)
  and plain-text FAQs and READMEs, with 10 unanswerable questions;
* ``prose``: 41 documents that are not software documentation (Debian's dict-elements grouped by family, The Devil's
  Dictionary's first entries of 20 letters, 8 narrative chapters of the King James Version), with 10 unanswerable
  questions: chunks that hold many unrelated entries, and questions worded far from their answers.

"Answered" = the answer span is inside the text that would be sent to the model:

* tda: the real ``knowledge_context`` module, driven directly with the real retriever
  (``tda.knowledge``: structure-aware chunks, embeddings, BM25 with rank fusion, packing by parts);
* naive: 1,000-character chunks with 200 overlap, the same embedder, top-k by similarity as
  "Source: file" blocks, either whole chunks while they fit or (generous) cut at the budget;
* hybrids (written here, not tda's BM25 or packing; each budget's column is the best of them):
  - chunks: the same chunks ranked by BM25 and the embedder, fused by reciprocal rank (k 60), packed as
    sentence windows (the best-matching sentence and one on each side, best chunk first), then every window
    widened by a sentence on each side, round after round, while the budget allows;
  - sentence windows (±1, ±2), a retrieval library's recipe: every sentence embedded alone and matched by BM25
    with its neighbours, fused by reciprocal rank, each hit sent with 1 or 2 sentences each side (touching
    windows of a document merged), best first, while they fit. Stronger than the chunk hybrid on every corpus
    (licences, 300 / 500 / 1,000 / 2,000 / 4,000 tokens: 24 / 28 / 34 / 37 / 39 answered by chunks, 28 / 35 / 40 /
    42 / 43 by ±1 windows, 27 / 31 / 43 / 43 / 44 by ±2).

Unanswerable questions count as abstained when tda sends no text; answerable questions it abstained
on are reported too (abstaining must not cost answers).

Also reported: ingestion throughput (chunks/s, model loaded) and the module's contribute latency for
a query whose embedding is cached. Run from the repository root:
``python bench/knowledge_bench.py [--corpus sqlite|licences|manuals|sysdocs|prose|all] [--embedder NAME] [--variants]``;
``--speed`` (the embedder alone) and ``--footprint`` (`tda serve`'s memory) measure one embedder.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import numpy as np  # noqa: E402

from components.context_window.base import AssemblyContext, Directives, Profile, Session  # noqa: E402
from components.context_window.module_registry import load_folder  # noqa: E402
from components.context_window.token_estimator import TokenEstimator, estimator_for  # noqa: E402
from tda.config import offline_library_defaults  # noqa: E402
from tda.knowledge.embeddings import DEFAULT_EMBEDDER, EMBEDDERS, make_embedder  # noqa: E402
from tda.knowledge.ingest import ingest_paths  # noqa: E402
from tda.knowledge.readers import read_document  # noqa: E402
from tda.knowledge.retrieval import ChromaKnowledgeRetriever, RetrievalSettings  # noqa: E402
from tda.knowledge.store import KnowledgeStore, open_client  # noqa: E402

offline_library_defaults()  # tiktoken loads litellm's bundled encodings, as in the service

DATA = ROOT / "bench" / "data"
CORPORA = {
    "sqlite": DATA / "knowledge",
    "licences": DATA / "licences",
    "manuals": DATA / "manuals",
    "sysdocs": DATA / "sysdocs",
    "prose": DATA / "prose",
}
MODEL = "gpt-4o"
BUDGETS = (300, 500, 1000, 2000, 4000)
TARGET_MARGIN = 0.10
MARGIN_BUDGETS = (500, 1000, 2000)
"""Where the margin over the naive baselines is a target (at 300 and 4,000 the target is the hybrid's count)."""
TARGET_AT_2000 = 0.92
SENTENCE_RADII = (1, 2)
"""The sentence-window hybrid's windows: sentences each side of a hit (1 is best at 300-500 tokens, 2 at 1,000)."""
CACHE = Path(tempfile.gettempdir()) / "tda-knowledge-bench"


def normalise(text: str) -> str:
    return " ".join(text.split())


@dataclass
class Result:
    name: str
    hits: list[bool]
    latencies_ms: list[float]
    max_tokens: int
    mean_tokens: float = 0.0
    abstained: int = 0

    @property
    def rate(self) -> float:
        return sum(self.hits) / len(self.hits)


def load_unanswerable(folder: Path) -> list[dict]:
    return json.loads((folder / "questions.json").read_text(encoding="utf-8")).get("unanswerable", [])


def load_questions(folder: Path) -> list[dict]:
    questions = json.loads((folder / "questions.json").read_text(encoding="utf-8"))["questions"]
    texts = {p.name: normalise(read_document(p).text) for p in (folder / "corpus").iterdir()}
    for q in questions:  # a question whose answer is not verbatim in the corpus would make the score a lie
        if normalise(q["answer"]) not in texts[q["document"]]:
            raise SystemExit(f"question {q['id']}: answer not found verbatim in {q['document']}")
    return questions


# --- tda ---------------------------------------------------------------------------------------


def ingest_tda(data_dir: Path, corpus: Path, collection: str, embedder: str) -> tuple[KnowledgeStore, float, int]:
    store = KnowledgeStore(open_client(data_dir), embedder)
    make_embedder(embedder)(["load the model before the clock starts"])
    started = time.perf_counter()
    report = ingest_paths(store, [corpus], collection, base=corpus)
    seconds = time.perf_counter() - started
    if report.errors:
        raise SystemExit(f"ingestion failed: {report.errors}")
    return store, seconds, report.chunks


async def run_tda(
    retriever: ChromaKnowledgeRetriever,
    collection: str,
    questions: list[dict],
    budget: int,
    name: str,
    config: dict | None = None,
) -> Result:
    """The module as a turn runs it; each query is contributed twice, in two assemblies, and the second
    (query embedding cached, as in a turn after the champion-case search) is timed."""
    definition = load_folder(ROOT / "modules" / "knowledge_context", "builtin")
    module = definition.cls(definition.manifest)
    tokens = estimator_for(MODEL)
    hits, latencies, worst, used, abstained = [], [], 0, [], 0
    for q in questions:

        def context(q: dict = q) -> AssemblyContext:
            return AssemblyContext(
                query=q["question"],
                profile=Profile(id="bench", type="rag_focused", knowledge_collections=(collection,)),
                session=Session(id=f"bench-{q['id']}"),
                model=MODEL,
                knowledge=retriever,
            ).for_module(Directives(config=config or {}), tokens)

        await module.contribute(budget, context())  # embeds the query (a turn's champion-case search does)
        started = time.perf_counter()
        contribution = await module.contribute(budget, context())  # a fresh assembly: retrieval and packing
        latencies.append((time.perf_counter() - started) * 1000)
        text = contribution.text()
        worst = max(worst, tokens.count(text))
        used.append(tokens.count(text))
        abstained += not text
        hits.append("answer" in q and normalise(q["answer"]) in normalise(text))
    return Result(name, hits, latencies, worst, statistics.mean(used) if used else 0.0, abstained)


# --- the naive baseline ------------------------------------------------------------------------


def naive_chunks(text: str, size: int = 1000, overlap: int = 200) -> list[str]:
    step = size - overlap
    return [text[i : i + size] for i in range(0, max(len(text) - overlap, 1), step)]


def embedded(name: str, embed: Callable[[list[str]], list], texts: list[str]) -> np.ndarray:
    """``texts``' vectors, kept in CACHE between runs: a baseline's vectors do not change between runs of one model
    (a probe vector tells models apart: an embedder's name stays when its arithmetic changes)."""
    probe = np.asarray(embed(["the naive baseline's cache key"])[0], dtype=np.float32).round(4).tobytes()
    digest = hashlib.sha256(b"\0".join([name.encode(), probe, *(t.encode() for t in texts)])).hexdigest()
    cached = CACHE / f"vectors-{digest[:16]}.npy"
    if cached.exists():
        return np.load(cached)
    matrix = np.asarray(embed(texts), dtype=np.float32)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(cached, matrix)
    return matrix


class NaiveBaseline:
    def __init__(self, corpus: Path, embedder: str) -> None:
        self.corpus = corpus
        self.embedder = embedder
        self.embed = make_embedder(embedder)
        self.chunks: list[tuple[str, str]] = []
        self.matrix = np.zeros((0, 1), dtype=np.float32)

    def ingest(self) -> None:
        for path in sorted((self.corpus / "corpus").iterdir()):
            self.chunks += [(path.name, c) for c in naive_chunks(read_document(path).text)]
        self.matrix = embedded(self.embedder, self.embed, [c for _, c in self.chunks])

    def context(self, query: str, budget: int, tokens: TokenEstimator, *, cut: bool, k: int = 20) -> str:
        """Top chunks by similarity as "Source: file" blocks: whole chunks while they fit, or (``cut``)
        concatenated and cut at the budget, which also gives the baseline part of one more chunk."""
        q = np.asarray(self.embed([query])[0], dtype=np.float32)
        blocks = [f"Source: {self.chunks[i][0]}\n{self.chunks[i][1]}" for i in np.argsort(-(self.matrix @ q))[:k]]
        if cut:
            return cut_to_budget("\n\n".join(blocks), budget, tokens)
        text = ""
        for block in blocks:
            longer = f"{text}\n\n{block}" if text else block
            if tokens.count(longer) > budget:
                break
            text = longer
        return text

    def run(self, questions: list[dict], budget: int, *, cut: bool) -> Result:
        tokens = estimator_for(MODEL)
        hits, latencies, worst = [], [], 0
        for q in questions:
            started = time.perf_counter()
            text = self.context(q["question"], budget, tokens, cut=cut)
            latencies.append((time.perf_counter() - started) * 1000)
            worst = max(worst, tokens.count(text))
            hits.append(normalise(q["answer"]) in normalise(text))
        return Result("naive, cut at budget" if cut else "naive, whole chunks", hits, latencies, worst)


def cut_to_budget(text: str, budget: int, tokens: TokenEstimator) -> str:
    """The longest prefix of ``text`` within ``budget`` tokens (binary search on characters)."""
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if tokens.count(text[:mid]) <= budget:
            low = mid
        else:
            high = mid - 1
    return text[:low]


# --- the hybrid baseline (written here, independently of tda's retrieval) ----------------------

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an and are as at be by can do does for from has have how i if in is it of on or so "
    "that the this to was what when where which who why will with you your my me".split()
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n\s*\n")


def words(text: str) -> list[str]:
    """Lower-case words without function words, cut to 5 letters (a crude stem, unlike tda's Snowball)."""
    return [w[:5] for w in _WORD.findall(text.lower()) if w not in _STOP]


class Okapi:
    """BM25 (k1 1.2, b 0.75) over ``texts``, by ``words``."""

    def __init__(self, texts: list[str]) -> None:
        self.bags = [Counter(words(t)) for t in texts]
        self.lengths = np.array([sum(b.values()) for b in self.bags], dtype=np.float64)
        df = Counter(w for b in self.bags for w in b)
        n = len(self.bags)
        self.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in df.items()}

    def scores(self, query: str, k1: float = 1.2, b: float = 0.75) -> np.ndarray:
        avg = float(self.lengths.mean())
        scores = np.zeros(len(self.bags))
        for w in set(words(query)):
            if w not in self.idf:
                continue
            tf = np.array([bag.get(w, 0) for bag in self.bags], dtype=np.float64)
            scores += self.idf[w] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * self.lengths / avg))
        return scores


def fused(dense: np.ndarray, lexical: np.ndarray, depth: int) -> list[int]:
    """Positions by reciprocal-rank fusion (k 60) of the ``depth`` best of each ranking, best first."""
    score: dict[int, float] = {}
    for order in (np.argsort(-dense, kind="stable")[:depth], np.argsort(-lexical, kind="stable")[:depth]):
        for rank, i in enumerate(order, start=1):
            score[int(i)] = score.get(int(i), 0.0) + 1 / (60 + rank)
    return sorted(score, key=lambda i: -score[i])


class HybridBaseline(NaiveBaseline):
    """The naive chunks ranked by BM25 and by the embedder, fused by reciprocal rank, packed as
    sentence windows around each chunk's best-matching sentence, then widened to whole chunks."""

    def ingest(self) -> None:
        super().ingest()
        self.okapi = Okapi([c for _, c in self.chunks])

    def ranked(self, query: str, depth: int = 40) -> list[int]:
        q = np.asarray(self.embed([query])[0], dtype=np.float32)
        return fused(self.matrix @ q, self.okapi.scores(query), depth)

    def context(self, query: str, budget: int, tokens: TokenEstimator, *, cut: bool = False, k: int = 40) -> str:
        """Sentence windows (the best-matching sentence and one each side) of the top chunks while they
        fit, then every window widened by a sentence a side, best chunk first, round after round."""
        wanted = set(words(query))
        picks: list[tuple[int, int, int]] = []  # (chunk, best sentence, radius)
        split = {i: [x for x in _SENTENCE.split(self.chunks[i][1]) if x.strip()] for i in self.ranked(query)[:k]}

        def text_of(parts: list[tuple[int, int, int]]) -> str:
            return "\n\n".join(
                f"Source: {self.chunks[i][0]}\n" + " ".join(split[i][max(0, b - r) : b + r + 1]) for i, b, r in parts
            )

        for i, sentences in split.items():
            best = max(range(len(sentences)), key=lambda j: len(wanted & set(words(sentences[j]))))
            if tokens.count(text_of([*picks, (i, best, 1)])) <= budget:
                picks.append((i, best, 1))
        grown = True
        while grown:
            grown = False
            for n, (i, b, r) in enumerate(picks):
                if b - r <= 0 and b + r + 1 >= len(split[i]):
                    continue  # already the whole chunk
                trial = [*picks[:n], (i, b, r + 1), *picks[n + 1 :]]
                if tokens.count(text_of(trial)) <= budget:
                    picks, grown = trial, True
        return text_of(picks)

    def run(self, questions: list[dict], budget: int, *, cut: bool = False) -> Result:
        result = super().run(questions, budget, cut=False)
        result.name = "chunks"
        return result


def sentences_of(text: str, longest: int = 600) -> list[str]:
    """``text``'s sentences (a run longer than ``longest`` characters, a table or a listing, split at its lines)."""
    out: list[str] = []
    for sentence in (s.strip() for s in _SENTENCE.split(text)):
        if len(sentence) > longest:
            out += [line.strip() for line in sentence.splitlines() if line.strip()]
        elif sentence:
            out.append(sentence)
    return out


class SentenceWindowBaseline(NaiveBaseline):
    """Sentence-window retrieval, as a retrieval library's recipe builds it: every sentence embedded alone and
    matched by BM25 with its neighbours, the two rankings fused by reciprocal rank, and each hit sent as a window of
    ``radius`` sentences on each side (windows of one document that touch are merged), best first, while they fit."""

    def __init__(self, corpus: Path, embedder: str, radius: int) -> None:
        super().__init__(corpus, embedder)
        self.radius = radius

    def ingest(self) -> None:
        self.docs = [(p.name, sentences_of(read_document(p).text)) for p in sorted((self.corpus / "corpus").iterdir())]
        self.where = [(d, i) for d, (_, sents) in enumerate(self.docs) for i in range(len(sents))]
        self.matrix = embedded(self.embedder, self.embed, [self.docs[d][1][i] for d, i in self.where])
        self.okapi = Okapi([" ".join(self.docs[d][1][max(0, i - 1) : i + 2]) for d, i in self.where])

    def context(self, query: str, budget: int, tokens: TokenEstimator, *, cut: bool = False, k: int = 100) -> str:
        q = np.asarray(self.embed([query])[0], dtype=np.float32)
        spans: list[tuple[int, int, int]] = []  # (document, first sentence, last sentence), in pick order
        text = ""
        for hit in fused(self.matrix @ q, self.okapi.scores(query), k):
            d, i = self.where[hit]
            trial = _merged(spans, (d, max(0, i - self.radius), min(len(self.docs[d][1]) - 1, i + self.radius)))
            rendered = self._text(trial)
            if tokens.count(rendered) <= budget:
                spans, text = trial, rendered
        return text

    def _text(self, spans: list[tuple[int, int, int]]) -> str:
        return "\n\n".join(f"Source: {self.docs[d][0]}\n" + " ".join(self.docs[d][1][a : b + 1]) for d, a, b in spans)

    def run(self, questions: list[dict], budget: int, *, cut: bool = False) -> Result:
        result = super().run(questions, budget, cut=False)
        result.name = f"windows ±{self.radius}"
        return result


def _merged(spans: list[tuple[int, int, int]], new: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    """``spans`` with ``new`` added: joined to a span of its document that it overlaps or touches (in its place)."""
    d, a, b = new
    for n, (d2, a2, b2) in enumerate(spans):
        if d2 == d and a <= b2 + 1 and a2 <= b + 1:
            return [*spans[:n], (d, min(a, a2), max(b, b2)), *spans[n + 1 :]]
    return [*spans, new]


# --- report ------------------------------------------------------------------------------------

VARIANTS: dict[str, tuple[RetrievalSettings, dict]] = {
    "dense only": (RetrievalSettings(lexical_weight=0.0), {}),
    "RRF, BM25 weight 0.3": (RetrievalSettings(lexical_weight=0.3), {}),
    "no floor": (RetrievalSettings(relative_floor=0.0), {}),
    "k=8": (RetrievalSettings(), {"k": 8}),
    "k=12": (RetrievalSettings(), {"k": 12}),
    "no neighbours": (RetrievalSettings(), {"max_expansion": 0}),
}


def pct(r: Result) -> str:
    return f"{r.rate:.1%}"


async def bench_corpus(name: str, args: argparse.Namespace) -> bool:
    folder = CORPORA[name]
    questions, unanswerable = load_questions(folder), load_unanswerable(folder)
    corpus = folder / "corpus"
    files = list(corpus.iterdir())
    size_kb = sum(p.stat().st_size for p in files) / 1024
    print(
        f"\n## {name}: {len(files)} files, {size_kb:.0f} KB, "
        f"{len(questions)} questions, {len(unanswerable)} unanswerable"
    )
    collection = f"bench-{name}"
    baseline = NaiveBaseline(folder, args.embedder)
    hybrids = [HybridBaseline(folder, args.embedder)]
    hybrids += [SentenceWindowBaseline(folder, args.embedder, radius) for radius in SENTENCE_RADII]
    for ingested in (baseline, *hybrids):
        ingested.ingest()
    with tempfile.TemporaryDirectory() as tmp:
        store, seconds, chunks = ingest_tda(Path(tmp), corpus, collection, args.embedder)
        rate = chunks / seconds
        print(f"ingestion (model loaded): {chunks} chunks in {seconds:.2f} s = {rate:.1f} chunks/s")
        rows, ok, latencies = [], True, []
        variants = VARIANTS if args.variants else {}
        extra: dict[str, list[str]] = {v: [] for v in variants}
        for budget in args.budgets:
            tda = await run_tda(ChromaKnowledgeRetriever(store), collection, questions, budget, "tda")
            mixed = max((h.run(questions, budget) for h in hybrids), key=lambda r: sum(r.hits))
            whole = baseline.run(questions, budget, cut=False)
            cut = baseline.run(questions, budget, cut=True)
            margin = tda.rate - max(whole.rate, cut.rate)
            passed = (
                (margin >= TARGET_MARGIN or budget not in MARGIN_BUDGETS)
                and tda.max_tokens <= budget
                and (budget != 2000 or tda.rate >= TARGET_AT_2000)
                and sum(tda.hits) >= sum(mixed.hits)
            )
            ok &= passed
            latencies += tda.latencies_ms
            none = ""
            if unanswerable:
                off = await run_tda(ChromaKnowledgeRetriever(store), collection, unanswerable, budget, "unanswerable")
                none = f"{off.abstained}/{len(unanswerable)}"
            cells = [
                f"{budget:,}",
                f"{sum(tda.hits)} ({pct(tda)})",
                f"{sum(mixed.hits)} ({pct(mixed)}, {mixed.name})",
                pct(whole),
                pct(cut),
                f"{margin * 100:+.1f}",
                f"{tda.mean_tokens:,.0f} / {tda.max_tokens:,}",
                str(tda.abstained),
                none or "-",
            ]
            rows.append("| " + " | ".join([*cells, "yes" if passed else "NO"]) + " |")
            for v, (settings, config) in variants.items():
                r = await run_tda(ChromaKnowledgeRetriever(store, settings), collection, questions, budget, v, config)
                extra[v].append(f"{sum(r.hits)}")
            if args.show_misses:
                print(f"missed at {budget}: {[q['id'] for q, hit in zip(questions, tda.hits, strict=True) if not hit]}")
                print(
                    f"hybrid missed at {budget}: "
                    f"{[q['id'] for q, h in zip(questions, mixed.hits, strict=True) if not h]}"
                )
    print(
        "\n| budget | tda | best hybrid | naive: whole | naive: cut | margin over naive | tokens mean / max "
        "| answerable abstained | unanswerable abstained | met |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if variants:
        print("\n| variant | " + " | ".join(f"{b:,}" for b in args.budgets) + " |")
        print("|---|" + "---|" * len(args.budgets))
        for v, counts in extra.items():
            print(f"| {v} | " + " | ".join(counts) + " |")
    lat = sorted(latencies)
    p50, p90 = statistics.median(lat), lat[int(len(lat) * 0.9)]
    print(f"\nknowledge_context contribute, query embedding cached: p50 {p50:.1f} ms, p90 {p90:.1f} ms")
    return ok


def speed(embedder: str, corpus: str) -> None:
    """The embedder alone on ``corpus``'s chunks (what ingestion embeds), in this process: chunks/s
    (wall, and per CPU-second: what two idle cores would give is about twice that), then one short
    query at a time (ms each), and the process's peak RSS."""
    import resource

    from tda.knowledge.chunking import chunk_document
    from tda.knowledge.store import embedding_text

    count = estimator_for(MODEL).count
    texts = []
    for path in sorted((CORPORA[corpus] / "corpus").iterdir()):
        doc = read_document(path)
        texts += [embedding_text(doc.title, c) for c in chunk_document(doc, count)]
    embed = make_embedder(embedder)
    embed(["load the model before the clock starts"])
    wall, cpu = time.perf_counter(), time.process_time()
    embed(texts)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    queries = [q["question"] for q in load_questions(CORPORA[corpus])][:20]
    started = time.perf_counter()
    for q in queries:
        embed([q])
    query_ms = (time.perf_counter() - started) / len(queries) * 1000
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"embedder {embedder} on {corpus} ({len(texts)} chunks): {len(texts) / wall:.1f} chunks/s wall, "
        f"{len(texts) / cpu:.1f} chunks per CPU-second; {query_ms:.1f} ms a query; peak RSS {peak:.0f} MB"
    )


def footprint(embedder: str, turns: int = 30) -> None:
    """`tda serve` with ``embedder``: `tda demo` seeds a temp data dir (its knowledge embedded with the
    embedder), the server starts (warm-up loads the model), ``turns`` turns run on the demo session
    (each retrieves knowledge), then the server's resident memory is read from /proc."""
    import os
    import socket
    import subprocess

    import httpx

    with tempfile.TemporaryDirectory() as tmp, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        env = {**os.environ, "TDA_DATA_DIR": tmp, "TDA_MODULES_DIR": f"{tmp}/modules", "TDA_PORT": str(port)}
        env |= {"TDA_MOCK_MODEL": "1", "TDA_EMBEDDER": embedder, "PYTHONPATH": str(ROOT)}
        demo = subprocess.run(
            [sys.executable, "-m", "tda.cli", "demo"], env=env, cwd=ROOT, capture_output=True, text=True, check=True
        )
        token = demo.stdout.strip().splitlines()[-1].split()[-1]
        server = subprocess.Popen(
            [sys.executable, "-m", "tda.cli", "serve"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=120) as client:
                for _ in range(600):
                    try:
                        if client.get("/healthz").status_code == 200:
                            break
                    except httpx.TransportError:
                        time.sleep(0.2)
                started = time.perf_counter()
                for i in range(turns):
                    r = client.post("/v1/sessions/demo/turns", json={"query": f"How are refunds handled, case {i}?"})
                    r.raise_for_status()
                seconds = time.perf_counter() - started
            status = Path(f"/proc/{server.pid}/status").read_text()
            rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
            modules = "torch loaded" if "torch" in Path(f"/proc/{server.pid}/maps").read_text() else "no torch"
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(
        f"tda serve, embedder {embedder}: RSS {rss / 1024:.0f} MB after {turns} turns ({modules}); "
        f"{seconds / turns * 1000:.0f} ms a turn"
    )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="all", choices=["all", *CORPORA])
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER, choices=sorted(EMBEDDERS))
    parser.add_argument("--budgets", type=lambda v: [int(b) for b in v.split(",")], default=list(BUDGETS))
    parser.add_argument("--variants", action="store_true", help="also run ranking/packing variants (ablation)")
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--footprint", action="store_true", help="only measure `tda serve`'s memory with the embedder")
    parser.add_argument("--speed", action="store_true", help="only measure the embedder's speed and peak memory")
    args = parser.parse_args()
    if args.speed:
        speed(args.embedder, "licences" if args.corpus == "all" else args.corpus)
        return 0
    if args.footprint:
        footprint(args.embedder)
        return 0
    print(
        f"embedder {args.embedder}; budgets in {MODEL} tokens; targets: >= +{TARGET_MARGIN * 100:.0f} points over "
        f"the better naive variant at 500-2,000, >= {TARGET_AT_2000:.0%} at 2,000, at least the best hybrid's count"
    )
    ok = True
    for name in CORPORA if args.corpus == "all" else [args.corpus]:
        ok &= await bench_corpus(name, args)
    print(f"\ntargets: {'PASS' if ok else 'MISS'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
