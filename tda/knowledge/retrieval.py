"""Retrieval for the context modules: the ``KnowledgeRetriever`` provider backed by the store.

Pipeline: candidate pool (dense, plus BM25 when hybrid) -> reciprocal-rank fusion -> floor -> dedupe ->
optional reranker -> top k. Scores are 0..1, higher is better.

Fusion is by rank, not by score: similarity and BM25 scores live on different scales, and mixing them
let one signal bury the other's best hits. The fusion is the relevance engine's (``relevance.fuse``, the
one reciprocal-rank fusion in the codebase), over the pool's BM25 and cosine scores. The floor is per
signal: a candidate is dropped only when BOTH signals rate it below ``relative_floor`` of their own best,
so no retriever's top hit is ever cut.
"""

from __future__ import annotations

import asyncio
import logging
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

import numpy as np

from components.context_window.base import Passage, SentenceWindow
from components.context_window.relevance import fuse

from .chunking import content_hash
from .embeddings import row_products
from .lexical import BM25Index, terms
from .store import KnowledgeError, KnowledgeStore

log = logging.getLogger(__name__)
T = TypeVar("T")

HELD_VECTORS = 20_000
"""A collection of up to this many chunks has its vectors held beside its BM25 index (~1.5 KB a chunk, about its
text's size) and is searched exactly in numpy: ~0.2 ms for the demo's 500 chunks, where Chroma's query and the
fetch of the BM25 hits' vectors cost ~7 ms of a worker thread a turn. A larger one is searched by Chroma's index."""


@dataclass(frozen=True, slots=True)
class RetrievalSettings:
    candidates: int = 40
    """Candidate pool per collection (and per signal, when hybrid) before the floor and top k."""
    relative_floor: float = 0.5
    """Drop candidates that both signals rate below this share of that signal's best (0 keeps all)."""
    lexical_weight: float = 0.5
    """Weight of the BM25 ranking in the fusion (the dense ranking has 1 minus this); 0 means dense only."""
    rrf_k: int = 60
    """Reciprocal-rank fusion constant: a candidate ranked r by a signal earns weight / (rrf_k + r)."""
    near_duplicate: float = 0.85
    """Word-shingle Jaccard similarity above which two passages count as the same text."""


@runtime_checkable
class Reranker(Protocol):
    """Re-scores candidates (e.g. a cross-encoder). Returns passages best first with their new scores."""

    def rerank(self, query: str, passages: Sequence[Passage]) -> list[Passage]: ...


@dataclass(frozen=True, slots=True)
class _Candidate:
    id: str
    text: str
    metadata: dict[str, Any]
    collection: str
    dense: float
    lexical: float = 0.0
    """BM25 score over the best BM25 score of the collection (0..1)."""


@dataclass(frozen=True, slots=True)
class _Ranked:
    """A fused candidate, ranked and filtered by what its ``Passage`` would say (the same rounded figures), made
    into one only once it is kept (``passage``)."""

    candidate: _Candidate
    fused: float

    @property
    def score(self) -> float:
        """The passage's score."""
        return _shown_score(self.fused)

    @property
    def dense_score(self) -> float:
        """The passage's ``dense_score`` (what ``min_score`` floors)."""
        return _shown_part(self.candidate.dense)

    def order(self) -> tuple[float, str, int]:
        """Best first, ties by document and chunk: the passages' order."""
        meta = self.candidate.metadata
        return -self.score, str(meta.get("document_id", "")), int(meta.get("chunk_index", 0))

    def passage(self) -> Passage:
        c = self.candidate
        return _passage(c.id, c.text, c.metadata, c.collection, self.fused, c.dense, c.lexical)


class ChromaKnowledgeRetriever:
    """Implements ``KnowledgeRetriever`` (and filters by document and section) over a KnowledgeStore."""

    def __init__(
        self, store: KnowledgeStore, settings: RetrievalSettings | None = None, reranker: Reranker | None = None
    ) -> None:
        self.store = store
        self.settings = settings or RetrievalSettings()
        self.reranker = reranker
        self._lexical: dict[str, _CollectionIndex] = {}
        self._handles: dict[tuple[str, int], Any] = {}
        self._sentences: dict[str, _SentenceIndex] = {}

    async def retrieve(
        self,
        query: str,
        *,
        collections: Sequence[str] = (),
        k: int = 8,
        min_score: float = 0.0,
        documents: Sequence[str] = (),
        sections: Sequence[str] = (),
    ) -> list[Passage]:
        return await asyncio.to_thread(
            self.search,
            query,
            collections=collections,
            k=k,
            min_score=min_score,
            documents=documents,
            sections=sections,
        )

    def search(
        self,
        query: str,
        *,
        collections: Sequence[str] = (),
        k: int = 8,
        min_score: float = 0.0,
        documents: Sequence[str] = (),
        sections: Sequence[str] = (),
    ) -> list[Passage]:
        """Synchronous retrieval (the CLI and benchmarks call this directly).

        ``min_score`` is an absolute floor on the cosine similarity to the query (0 keeps all); the
        fused score ranks, it does not measure.
        """
        if not query.strip() or k <= 0:
            return []
        candidates: list[_Ranked] = []
        for name in collections or self.store.collection_names():
            try:
                candidates.extend(self._collection_candidates(name, query, documents, sections))
            except KnowledgeError as exc:  # a profile naming a deleted collection must not break the turn
                log.warning("knowledge retrieval skipped: %s", exc)
        candidates.sort(key=_Ranked.order)
        similar = [r for r in candidates if r.dense_score >= min_score]
        # Only as many as are returned need dedupe (its pairwise comparison is the costly step).
        kept = self._distinct(similar, limit=None if self.reranker else k)
        if self.reranker is not None:
            kept = self.reranker.rerank(query, kept)
        return kept[:k]

    def _distinct(self, ranked: list[_Ranked], *, limit: int | None) -> list[Passage]:
        """``dedupe``: by the collection's near-duplicate map when every candidate is a chunk of one collection whose
        chunks are held (nothing compared per search: ~1 ms of a demo turn's ~3 ms search), else pair by pair. By
        the map, only the candidates kept become passages (a demo search fuses ~46 and returns 8: building the rest
        was a quarter of its CPU, after the query's vector, on the turn's critical path)."""
        threshold = self.settings.near_duplicate
        held = self._held_for([r.candidate for r in ranked]) if threshold > 0 else None
        rows = held.rows_of([str(r.candidate.id) for r in ranked]) if held is not None else None
        if held is None or rows is None:
            return dedupe([r.passage() for r in ranked], threshold, limit=limit)
        return [r.passage() for r in distinct_by(ranked, rows, held.near_duplicates(threshold), limit)]

    def _held_for(self, candidates: Sequence[_Candidate]) -> _CollectionIndex | None:
        """The held chunks of the one collection ``candidates`` come from, as this store last wrote it; None for
        several collections, or one too large to map its every chunk's near duplicates (``HELD_VECTORS``)."""
        names = {c.collection for c in candidates}
        held = self._lexical.get(candidates[0].collection) if len(names) == 1 else None
        if held is None or held.key[0] != self.store.version(candidates[0].collection) or len(held.rows) > HELD_VECTORS:
            return None
        return held

    async def neighbours(self, passage: Passage, *, before: int, after: int) -> list[Passage]:
        """As ``neighbours_sync``; on the event loop when the chunks are in memory (a few dict lookups: a worker
        thread's hop per hit cost more, ~1 ms each on a busy machine, 5-7 hits a turn), else in a worker thread."""
        held = self._held_neighbours(passage, before=before, after=after)
        if held is not None:
            return held
        return await asyncio.to_thread(self.neighbours_sync, passage, before=before, after=after)

    def _held_neighbours(self, passage: Passage, *, before: int, after: int) -> list[Passage] | None:
        """The neighbours from the chunks held in memory for BM25 (None: not held, or held before a write)."""
        if max(before, after) <= 0 or not passage.collection:
            return []
        cached = self._lexical.get(passage.collection)
        if cached is None or cached.key[0] != self.store.version(passage.collection):
            return None
        i = passage.chunk_index
        rows = [
            row
            for j in range(i - max(before, 0), i + max(after, 0) + 1)
            if j != i and (row := cached.positions.get((passage.document_id, j))) is not None
        ]
        return [_passage(r["id"], r["text"], r["metadata"], passage.collection, 0.0) for r in rows]

    def neighbours_sync(self, passage: Passage, *, before: int, after: int) -> list[Passage]:
        """Chunks of the same document within ``before``/``after`` positions, in chunk order."""
        held = self._held_neighbours(passage, before=before, after=after)
        if held is not None:  # the chunks are in memory for BM25 already: no database round trip per hit
            return held
        i = passage.chunk_index
        where = {
            "$and": [
                {"document_id": passage.document_id},
                {"chunk_index": {"$gte": i - max(before, 0)}},
                {"chunk_index": {"$lte": i + max(after, 0)}},
            ]
        }
        rows = self.store.get_chunks(passage.collection, where=where)
        found = [_passage(r["id"], r["text"], r["metadata"], passage.collection, 0.0) for r in rows]
        return sorted((p for p in found if p.chunk_index != i), key=lambda p: p.chunk_index)

    async def held_words(self, words: Sequence[str], *, collections: Sequence[str] = ()) -> set[str]:
        """``KnowledgeVocabulary``: on the event loop when every collection's BM25 index is held for this version and
        no abbreviation is asked (a few set lookups: the turn's retrieval built them), else in a worker thread (an
        abbreviation the index lacks is looked for in every chunk's text)."""
        names = list(collections or self.store.collection_names())
        if not any(map(_ABBREVIATION.fullmatch, words)) and all(self._held_index(name) is not None for name in names):
            return self.held_words_sync(words, collections=names)
        return await asyncio.to_thread(self.held_words_sync, words, collections=names)

    def held_words_sync(self, words: Sequence[str], *, collections: Sequence[str] = ()) -> set[str]:
        """Those of ``words`` whose every stemmed term some chunk of one of ``collections`` holds (a word the index
        never reads, a stopword such as the "BY" of "ORDER BY", is held: nothing of it is missing), and the
        abbreviations some chunk writes out (read only for one the index lacks: a scan of every chunk's text)."""
        held: set[str] = set()
        for name in collections or self.store.collection_names():
            try:
                index = self._held_index(name) or self._lexical_index(name, self._collection(name)[1])
            except KnowledgeError as exc:  # as ``search``: a deleted collection holds nothing
                log.warning("vocabulary skipped: %s", exc)
                continue
            held |= {w for w in words if all(t in index.bm25 for t in terms(w))}
            short = [w for w in words if w not in held and _ABBREVIATION.fullmatch(w)]
            if short:
                text = "\n".join(str(r["text"]) for r in index.rows)
                held |= {w for w in short if _spelt_out(w, text)}
        return held

    def _held_index(self, name: str) -> _CollectionIndex | None:
        """Collection ``name``'s chunks and BM25 index when held for the store's current version, else None."""
        cached = self._lexical.get(name)
        return cached if cached is not None and cached.key[0] == self.store.version(name) else None

    # --- the sentence index ----------------------------------------------------------------

    async def sentence_windows(
        self, query: str, *, collections: Sequence[str] = (), k: int = 100, radius: int = 1
    ) -> list[SentenceWindow]:
        return await asyncio.to_thread(self.sentence_search, query, collections=collections, k=k, radius=radius)

    def sentence_search(
        self, query: str, *, collections: Sequence[str] = (), k: int = 100, radius: int = 1
    ) -> list[SentenceWindow]:
        """The ``k`` best sentences of the collections' sentence indexes, each with ``radius`` sentences on each side:
        cosine (the nearest ``k``: by the held vectors, else Chroma's index) and BM25 over the sentence with its
        neighbours (the best ``k``), fused by reciprocal rank as chunks are. A collection without a sentence index
        adds nothing."""
        if not query.strip() or k <= 0:
            return []
        found: list[SentenceWindow] = []
        for name in collections or self.store.collection_names():
            try:
                found.extend(self._sentence_candidates(name, query, k, radius))
            except KnowledgeError as exc:
                log.warning("sentence retrieval skipped: %s", exc)
        found.sort(key=lambda w: (-w.score, w.document_id, w.position))
        return found[:k]

    def _sentence_candidates(self, name: str, query: str, k: int, radius: int) -> list[SentenceWindow]:
        index = self._sentence_index(name)
        if index is None:
            return []
        embed = index.collection.configuration.get("embedding_function")
        vector = np.asarray(embed([query])[0], dtype=np.float32)
        lexical = index.bm25.scores(query)
        top = [int(i) for i in np.argsort(-lexical, kind="stable")[:k] if lexical[i] > 0]
        if index.unit_vectors is not None:  # held: every sentence compared, as chunks are (``HELD_VECTORS``)
            cosines = _cosines(index.unit_vectors, vector)
            near = [*_nearest(cosines, k).tolist(), *top]
            dense = {index.rows[i]["id"]: max(0.0, float(cosines[i])) for i in near}
        else:
            found = index.collection.query(
                query_embeddings=[vector], n_results=min(k, len(index.rows)), include=["distances"]
            )
            dense = {i: max(0.0, 1.0 - float(d)) for i, d in zip(found["ids"][0], found["distances"][0], strict=True)}
            dense |= _dense_scores(
                index.collection, [index.rows[i]["id"] for i in top if index.rows[i]["id"] not in dense], vector
            )
        pool = [index.numbers[i] for i in dense]
        pool += [i for i in top if index.rows[i]["id"] not in dense]
        ranking = fuse(
            lexical=lexical[pool],
            dense=np.array([dense[index.rows[i]["id"]] for i in pool], dtype=np.float64),
            weights=(self.settings.lexical_weight, 1 - self.settings.lexical_weight),
            rrf_k=self.settings.rrf_k,
        )
        scale = self.settings.rrf_k + 1
        return [
            index.window(name, pool[p], radius, float(score) * scale, dense[index.rows[pool[p]]["id"]])
            for p, score in zip(ranking.positions, ranking.scores, strict=True)
        ]

    def _sentence_index(self, name: str) -> _SentenceIndex | None:
        """Collection ``name``'s sentences in memory (BM25 over each with its neighbours), kept until the store writes
        to it or its count changes (another process wrote); None without a sentence index (looked for once per
        version of the collection: opening a collection costs milliseconds)."""
        version = self.store.version(name)
        cached = self._sentences.get(name)
        if cached is None or cached.key[0] != version:
            cached = self._sentences[name] = _SentenceIndex.empty(version, self.store.sentence_collection(name))
        if cached.collection is None:
            return None
        try:
            total = cached.collection.count()
        except Exception:  # deleted or recreated by another process: look again next time
            del self._sentences[name]
            return None
        if cached.key != (version, total):
            cached = self._sentences[name] = _SentenceIndex.build((version, total), cached.collection)
        return cached if cached.rows else None

    # --- candidates ----------------------------------------------------------------------

    def _collection_candidates(
        self, name: str, query: str, documents: Sequence[str], sections: Sequence[str]
    ) -> list[_Ranked]:
        col, total = self._collection(name)
        if not total:
            return []
        held = self._lexical_index(name, total) if self.settings.lexical_weight > 0 else None
        allowed = held.allowed(documents) if held is not None else None  # rows of the documents asked for
        # Words first: BM25 needs no vector, so it is done while the query's embedding runs (started with the turn,
        # ``LiveKnowledge.embed_ahead``), not after it, on the turn's critical path.
        lexical = _Lexical.of(held, query, allowed, self.settings.candidates) if held is not None else None
        embed = col.configuration.get("embedding_function")
        vector = np.asarray(embed([query])[0], dtype=np.float32)
        cosines = held.cosines(vector) if held is not None else None
        if held is not None and cosines is not None:
            pool = self._nearest_held(name, held, cosines, allowed)
        else:
            pool = self._nearest_stored(name, col, total, vector, documents)
        if held is not None and lexical is not None:
            self._add_lexical(name, col, held, lexical, vector, cosines, pool)
        if sections:
            pool = {
                i: c
                for i, c in pool.items()
                if any(_in_section(str(c.metadata.get("section", "")), s) for s in sections)
            }
        kept = _above_floor(list(pool.values()), self.settings.relative_floor)
        return [_Ranked(c, score) for c, score in self._fused(kept)]

    def _nearest_stored(
        self, name: str, col: Any, total: int, vector: np.ndarray, documents: Sequence[str]
    ) -> dict[str, _Candidate]:
        """The candidates nearest ``vector`` by Chroma's index."""
        where = {"document_id": {"$in": list(documents)}} if documents else None
        found = col.query(
            query_embeddings=[vector],
            n_results=min(self.settings.candidates, total),
            where=where,
            include=["documents", "metadatas", "distances"],
        )
        return {
            i: _Candidate(i, t, dict(m or {}), name, max(0.0, 1.0 - float(d)))
            for i, t, m, d in zip(
                found["ids"][0], found["documents"][0], found["metadatas"][0], found["distances"][0], strict=True
            )
        }

    def _nearest_held(
        self, name: str, held: _CollectionIndex, cosines: np.ndarray, allowed: np.ndarray | None
    ) -> dict[str, _Candidate]:
        """The candidates nearest by the held vectors (among the ``allowed`` rows): every chunk compared, so exact
        where Chroma's index is approximate."""
        nearest = _nearest(
            cosines if allowed is None else np.where(allowed, cosines, -np.inf), self.settings.candidates
        )
        rows = held.rows
        return {
            rows[i]["id"]: _Candidate(
                rows[i]["id"], rows[i]["text"], rows[i]["metadata"], name, max(0.0, float(cosines[i]))
            )
            for i in nearest.tolist()
        }

    def _fused(self, pool: list[_Candidate]) -> list[tuple[_Candidate, float]]:
        """Weighted reciprocal-rank fusion of the pool's cosine and BM25 rankings (the relevance engine's), scaled
        so that first in both is 1; BM25 ranks only candidates that share a word with the query."""
        if not pool:
            return []
        w, k = self.settings.lexical_weight, self.settings.rrf_k
        dense = np.array([c.dense for c in pool], dtype=np.float64)
        lexical = np.array([c.lexical for c in pool], dtype=np.float64) if w > 0 else None
        ranking = fuse(lexical=lexical, dense=dense, weights=(w, 1 - w), rrf_k=k)
        return [(pool[p], float(s) * (k + 1)) for p, s in zip(ranking.positions, ranking.scores, strict=True)]

    def _collection(self, name: str) -> tuple[Any, int]:
        """The collection's handle (kept while this store has not written to it: opening one costs ms)
        and its chunk count, which is also how another process's writes are noticed."""
        key = (name, self.store.version(name))
        if key not in self._handles:
            self._handles = {k: v for k, v in self._handles.items() if k[0] != name}
            self._handles[key] = self.store.collection(name)
        try:
            return self._handles[key], self._handles[key].count()
        except Exception:  # deleted or recreated by another process: open it again (or fail clearly)
            self._handles[key] = self.store.collection(name)
            return self._handles[key], self._handles[key].count()

    def _add_lexical(
        self,
        name: str,
        col: Any,
        held: _CollectionIndex,
        lexical: _Lexical,
        vector: np.ndarray,
        cosines: np.ndarray | None,
        pool: dict[str, _Candidate],
    ) -> None:
        """Fuse BM25 (normalised by the best lexical hit) into the pool; lexical-only hits get their dense score."""
        rows, scores, best = held.rows, lexical.scores, lexical.best
        if best <= 0:
            return
        for i in (held.numbers[c] for c in list(pool) if c in held.numbers):  # every candidate's BM25 rank counts
            c = pool[rows[i]["id"]]  # a new candidate, not ``replace``: ~15% of a demo search's CPU
            pool[c.id] = _Candidate(c.id, c.text, c.metadata, c.collection, c.dense, float(scores[i]) / best)
        missing = [i for i in lexical.top if rows[i]["id"] not in pool]
        if cosines is not None:
            dense = {rows[i]["id"]: max(0.0, float(cosines[i])) for i in missing}
        else:
            dense = _dense_scores(col, [rows[i]["id"] for i in missing], vector)
        for i in missing:
            row = rows[i]
            pool[row["id"]] = _Candidate(
                row["id"], row["text"], row["metadata"], name, dense.get(row["id"], 0.0), float(scores[i]) / best
            )

    def _lexical_index(self, name: str, total: int) -> _CollectionIndex:
        key = (self.store.version(name), total)
        cached = self._lexical.get(name)
        if cached is None or cached.key != key:
            rows = self.store.get_chunks(name, vectors=total <= HELD_VECTORS)
            vectors = [row.pop("vector") for row in rows if "vector" in row]
            bm25 = BM25Index(
                [f"{r['metadata'].get('title', '')} {r['metadata'].get('section', '')}\n{r['text']}" for r in rows]
            )
            positions = {
                (str(r["metadata"].get("document_id", "")), int(r["metadata"].get("chunk_index", 0))): r for r in rows
            }
            numbers = {str(r["id"]): n for n, r in enumerate(rows)}
            unit = _unit_rows(vectors) if vectors and len(vectors) == len(rows) else None
            cached = self._lexical[name] = _CollectionIndex(key, bm25, rows, positions, numbers, unit)
        return cached


@dataclass(frozen=True, slots=True)
class _Lexical:
    """A query's BM25 scores over a held collection (0 outside the ``allowed`` rows), the best of them, and the rows
    of its ``candidates`` best that share a word with the query, best first."""

    scores: np.ndarray
    best: float
    top: list[int]

    @classmethod
    def of(cls, held: _CollectionIndex, query: str, allowed: np.ndarray | None, candidates: int) -> _Lexical:
        scores = held.bm25.scores(query)
        if allowed is not None:
            scores = np.where(allowed, scores, 0.0)
        best = float(scores.max()) if len(scores) else 0.0
        top = [int(i) for i in np.argsort(-scores)[:candidates] if scores[i] > 0] if best > 0 else []
        return cls(scores, best, top)


@dataclass(frozen=True, slots=True)
class _CollectionIndex:
    """A collection's chunks in memory: BM25 over them, and each by (document id, chunk index)."""

    key: tuple[int, int]
    bm25: BM25Index
    rows: list[dict[str, Any]]
    positions: dict[tuple[str, int], dict[str, Any]]
    numbers: dict[str, int]
    """Each chunk's row number, by id."""
    unit_vectors: np.ndarray | None = None
    """Each chunk's embedding scaled to length 1, by row number (None: a collection too large to hold them)."""
    _near: dict[float, dict[int, frozenset[int]]] = field(default_factory=dict)
    """``near_duplicates`` by threshold (computed at a collection's first search with it)."""

    def rows_of(self, ids: Sequence[str]) -> list[int] | None:
        """The chunks' row numbers, by id (None when one is not a held chunk: written meanwhile by another process)."""
        rows = [self.numbers.get(i) for i in ids]
        return None if None in rows else cast(list[int], rows)

    def near_duplicates(self, threshold: float) -> dict[int, frozenset[int]]:
        """Each chunk's near duplicates among the others (``near_duplicate_rows``), by row number."""
        found = self._near.get(threshold)
        if found is None:
            found = self._near[threshold] = near_duplicate_rows([r["text"] for r in self.rows], threshold)
        return found

    def cosines(self, vector: np.ndarray) -> np.ndarray | None:
        """Every chunk's cosine similarity to ``vector`` (None: the vectors are not held)."""
        return None if self.unit_vectors is None else _cosines(self.unit_vectors, vector)

    def allowed(self, documents: Sequence[str]) -> np.ndarray | None:
        """Which rows belong to ``documents`` (None: no filter)."""
        if not documents:
            return None
        wanted = set(documents)
        return np.array([r["metadata"].get("document_id") in wanted for r in self.rows], dtype=bool)


def _cosines(unit_rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
    return row_products(unit_rows, vector) / (float(np.linalg.norm(vector)) or 1.0)


def _nearest(scores: np.ndarray, k: int) -> np.ndarray:
    """The positions of the ``k`` highest finite ``scores``, highest first."""
    n = min(k, int(np.isfinite(scores).sum()))
    if not n:
        return np.array([], dtype=np.int64)
    nearest = np.argpartition(-scores, n - 1)[:n]
    return nearest[np.argsort(-scores[nearest], kind="stable")]


def _unit_rows(vectors: Sequence[Any]) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


@dataclass(frozen=True, slots=True)
class _SentenceIndex:
    """A collection's sentence index in memory: its rows, each document's sentences in order, and BM25 over every
    sentence with its two neighbours (a sentence alone is often too short to hold the question's words)."""

    key: tuple[int, int]
    collection: Any
    rows: list[dict[str, Any]]
    numbers: dict[str, int]
    documents: dict[str, list[str]]
    """Each document's sentences, by position."""
    bm25: BM25Index
    unit_vectors: np.ndarray | None = None
    """Each sentence's embedding scaled to length 1, by row (None: an index too large to hold them)."""

    @classmethod
    def empty(cls, version: int, collection: Any) -> _SentenceIndex:
        """Not read yet (``collection`` None: there is no sentence index)."""
        return cls((version, -1), collection, [], {}, {}, BM25Index([]))

    @classmethod
    def build(cls, key: tuple[int, int], collection: Any) -> _SentenceIndex:
        held = key[1] <= HELD_VECTORS
        got = collection.get(include=["documents", "metadatas", *(["embeddings"] if held else [])])
        rows = [
            {"id": i, "text": t, "metadata": dict(m or {})}
            for i, t, m in zip(got["ids"], got["documents"] or [], got["metadatas"] or [], strict=True)
        ]
        places = [(str(r["metadata"].get("document_id", "")), int(r["metadata"].get("position", 0))) for r in rows]
        placed: dict[str, dict[int, str]] = {}
        for (document, at), r in zip(places, rows, strict=True):
            placed.setdefault(document, {})[at] = r["text"]
        documents = {d: [by[p] for p in sorted(by)] for d, by in placed.items()}
        windows = [" ".join(documents[document][max(0, at - 1) : at + 2]) for document, at in places]
        numbers = {str(r["id"]): n for n, r in enumerate(rows)}
        vectors = got["embeddings"] if held and got["embeddings"] is not None and len(got["embeddings"]) else None
        unit = _unit_rows(vectors) if vectors is not None else None
        return cls(key, collection, rows, numbers, documents, BM25Index(windows), unit)

    def window(self, collection: str, row: int, radius: int, score: float, similarity: float) -> SentenceWindow:
        meta = self.rows[row]["metadata"]
        document = str(meta.get("document_id", ""))
        at = int(meta.get("position", 0))
        first = max(0, at - radius)
        return SentenceWindow(
            collection=collection,
            document_id=document,
            title=str(meta.get("title", "")),
            section=str(meta.get("section", "")),
            chunk_index=int(meta.get("chunk_index", 0)),
            position=at,
            first=first,
            sentences=tuple(self.documents[document][first : at + radius + 1]),
            score=score,
            similarity=similarity,
        )


_ABBREVIATION = re.compile(r"[A-Z]{2,}s?")


def _spelt_out(abbreviation: str, text: str) -> bool:
    """Whether ``text`` holds words whose initials spell ``abbreviation`` ("out of memory" for "OOM")."""
    words = r"[\s-]+".join(rf"{re.escape(c)}[\w']*" for c in abbreviation.removesuffix("s"))
    return re.search(rf"(?i)\b{words}", text) is not None


def _above_floor(pool: list[_Candidate], relative: float) -> list[_Candidate]:
    """Candidates that at least one signal rates at ``relative`` of its best or more (each best survives)."""
    if relative <= 0 or not pool:
        return pool
    best_dense = max(c.dense for c in pool)
    best_lexical = max(c.lexical for c in pool)
    return [
        c
        for c in pool
        if c.dense >= relative * best_dense or (best_lexical > 0 and c.lexical >= relative * best_lexical)
    ]


def _dense_scores(col: Any, ids: list[str], vector: np.ndarray) -> dict[str, float]:
    if not ids:
        return {}
    got = col.get(ids=ids, include=["embeddings"])
    matrix = np.asarray(got["embeddings"], dtype=np.float32)
    sims = row_products(matrix, vector) / (np.linalg.norm(matrix, axis=1) * (np.linalg.norm(vector) or 1.0) + 1e-12)
    return {i: max(0.0, float(s)) for i, s in zip(got["ids"], sims, strict=True)}


def _shown_score(fused: float) -> float:
    """A passage's score as it is shown and ranked: the fused score clipped to 0..1, rounded."""
    return round(min(1.0, max(0.0, fused)), 6)


def _shown_part(score: float) -> float:
    """A passage's dense or lexical score as it is shown (and ``min_score`` floors it)."""
    return round(score, 4)


def _passage(
    id_: str,
    text: str,
    meta: dict[str, Any],
    collection: str,
    score: float,
    dense: float | None = None,
    lexical: float | None = None,
) -> Passage:
    extra: dict[str, Any] = {"id": id_}
    if dense is not None:
        extra |= {"dense_score": _shown_part(dense), "lexical_score": _shown_part(lexical or 0.0)}
    page = meta.get("page_start")
    return Passage(
        text=text,
        score=_shown_score(score),
        document_id=str(meta.get("document_id", "")),
        title=str(meta.get("title", "")),
        section=str(meta.get("section", "")),
        page=int(page) if page is not None else None,
        chunk_index=int(meta.get("chunk_index", 0)),
        collection=collection,
        metadata={**meta, **extra},
    )


def passage_json(p: Passage) -> dict[str, Any]:
    """A passage as `tda knowledge search --json` and POST /v1/knowledge/search show it: score and provenance."""
    return {
        "score": p.score,
        "collection": p.collection,
        "document_id": p.document_id,
        "title": p.title,
        "section": p.section,
        "page": p.page,
        "chunk_index": p.chunk_index,
        "text": p.text,
    }


def _in_section(section: str, wanted: str) -> bool:
    """A section filter matches the section itself and everything below it."""
    return section == wanted or section.startswith(f"{wanted} › ")


_PUNCTUATION = str.maketrans(dict.fromkeys(string.punctuation, " "))


@lru_cache(maxsize=8192)
def _text_key(text: str) -> tuple[str, frozenset[int], list[int]]:
    """A passage's content hash, its shingles (its word trigrams, hashed) and those in a fixed order (by value): the
    same chunks come back turn after turn, so each is computed once. Words split at spaces and ASCII punctuation: a
    regular expression's word characters cost twice as long, on every new chunk of a turn."""
    words = text.lower().translate(_PUNCTUATION).split()
    shingles = frozenset(map(hash, zip(words, words[1:], words[2:], strict=False))) or frozenset({hash(tuple(words))})
    return content_hash(text), shingles, sorted(shingles)


def _prefix(ordered: list[int], threshold: float) -> list[int]:
    """The first shingles (in the fixed order) that any set at least ``threshold`` similar must share one of: two
    sets with Jaccard >= t share at least t * max(|A|, |B|) shingles, so their prefixes of |X| - ceil(t * |X|) + 1
    overlap (prefix filtering; ``int`` rounds down, so the prefix is never shorter than that)."""
    return ordered[: len(ordered) - int(threshold * len(ordered) - 1e-9) + 1]


def dedupe(passages: Sequence[Passage], threshold: float = 0.85, *, limit: int | None = None) -> list[Passage]:
    """Keep the first (best) of passages with the same or nearly the same text; order preserved.
    Stops once ``limit`` passages are kept.

    Exact, without comparing every pair: a passage is compared only with the kept ones sharing a shingle of its
    prefix (``_prefix``); comparing all pairs of 40 hits' shingle sets took ~9 ms of a worker thread each turn,
    holding the GIL the event loop needs."""
    if threshold <= 0:  # every passage is a near duplicate of the first
        return list(passages[: min(1, limit if limit is not None else 1)])
    kept: list[Passage] = []
    seen_hashes: set[str] = set()
    kept_shingles: list[frozenset[int]] = []
    by_prefix: dict[int, list[int]] = {}
    for p in passages:
        if limit is not None and len(kept) >= limit:
            break
        h, shingles, ordered = _text_key(p.text)
        if h in seen_hashes:
            continue
        prefix = _prefix(ordered, threshold)
        near = {j for s in prefix for j in by_prefix.get(s, ())}
        if any(_similar(shingles, kept_shingles[j], threshold) for j in near):
            continue
        for s in prefix:
            by_prefix.setdefault(s, []).append(len(kept))
        seen_hashes.add(h)
        kept_shingles.append(shingles)
        kept.append(p)
    return kept


def near_duplicate_rows(texts: Sequence[str], threshold: float) -> dict[int, frozenset[int]]:
    """For each text that has any, the positions of the others ``dedupe`` takes for the same text (equal, or a word
    trigram Jaccard similarity of ``threshold`` or more), found once for a collection by the same prefix filtering:
    every pair sharing a shingle of their prefixes is compared. A text alone in the collection has no entry."""
    near: dict[int, set[int]] = {}
    by_hash: dict[str, int] = {}
    shingle_sets: list[frozenset[int]] = []
    by_prefix: dict[int, list[int]] = {}
    for i, text in enumerate(texts):
        h, shingles, ordered = _text_key.__wrapped__(text)  # not through the cache: a collection would flush it
        prefix = _prefix(ordered, threshold)
        same = by_hash.setdefault(h, i)
        pairs = {j for s in prefix for j in by_prefix.get(s, ())}
        for j in pairs:  # an equal text shares every shingle of the prefix: it is among them
            if j == same or _similar(shingles, shingle_sets[j], threshold):
                near.setdefault(i, set()).add(j)
                near.setdefault(j, set()).add(i)
        for s in prefix:
            by_prefix.setdefault(s, []).append(i)
        shingle_sets.append(shingles)
    return {i: frozenset(js) for i, js in near.items()}


def distinct_by(
    passages: Sequence[T], rows: Sequence[int], near: Mapping[int, frozenset[int]], limit: int | None
) -> list[T]:
    """``dedupe`` of passages that are the chunks at ``rows``, by their precomputed near duplicates (``near``): a
    passage is left out when a kept one is among them. A set lookup a passage, nothing compared."""
    kept: list[T] = []
    taken: set[int] = set()
    for p, row in zip(passages, rows, strict=True):
        if limit is not None and len(kept) >= limit:
            break
        if row in taken or not near.get(row, _NONE).isdisjoint(taken):
            continue
        taken.add(row)
        kept.append(p)
    return kept


_NONE: frozenset[int] = frozenset()


def _similar(a: frozenset[int], b: frozenset[int], threshold: float) -> bool:
    """Whether the sets' Jaccard similarity is at least ``threshold``: never when the smaller is under ``threshold`` of
    the larger (the similarity is at most their sizes' ratio), which settles most pairs prefix filtering leaves without
    intersecting them (60 -> 23 intersections a demo turn)."""
    small, large = sorted((len(a), len(b)))
    if small < threshold * large - 1e-9:
        return False
    common = len(a & b)
    return common / (len(a) + len(b) - common) >= threshold
