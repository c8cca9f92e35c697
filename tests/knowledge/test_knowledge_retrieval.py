"""Retrieval: ranking, relative and absolute floors, dedupe, reranker, filters, neighbours."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import KnowledgeRetriever, Passage
from tda.knowledge import retrieval
from tda.knowledge.ingest import ingest_paths
from tda.knowledge.retrieval import (
    ChromaKnowledgeRetriever,
    RetrievalSettings,
    dedupe,
    distinct_by,
    near_duplicate_rows,
)
from tda.knowledge.store import KnowledgeStore

MANUAL = """# Boat manual

## Engine

The outboard engine needs two-stroke oil mixed at fifty to one. Check the propeller for fishing line after every trip.

## Sails

The mainsail is hoisted before the jib. Reef the mainsail when the wind exceeds twenty knots.

## Safety

Every passenger wears a life jacket. The flares are stored under the port bench.
"""


@pytest.fixture
def retriever(store: KnowledgeStore, tmp_path: Path) -> ChromaKnowledgeRetriever:
    (tmp_path / "manual.md").write_text(MANUAL)
    (tmp_path / "recipes.md").write_text("# Recipes\n\n## Bread\n\nKnead the dough for ten minutes and let it rise.\n")
    ingest_paths(store, [tmp_path / "manual.md", tmp_path / "recipes.md"], "boat")
    (tmp_path / "baking.md").write_text("# Baking\n\n## Rye\n\nKnead rye dough gently; it stays sticky.\n")
    ingest_paths(store, [tmp_path / "baking.md"], "kitchen")
    return ChromaKnowledgeRetriever(store)


def test_it_satisfies_the_knowledge_retriever_protocol(retriever: ChromaKnowledgeRetriever) -> None:
    assert isinstance(retriever, KnowledgeRetriever)


async def test_the_answering_passage_ranks_first_with_provenance(retriever: ChromaKnowledgeRetriever) -> None:
    [top, *_] = await retriever.retrieve("where are the flares stored", collections=["boat"], k=3)
    assert "flares are stored under the port bench" in top.text
    assert (top.title, top.section, top.collection) == ("Boat manual", "Boat manual › Safety", "boat")
    assert top.document_id.endswith("manual.md") and 0 < top.score <= 1


async def test_the_floor_drops_only_what_both_signals_rate_weak(retriever: ChromaKnowledgeRetriever) -> None:
    query = "mainsail reef wind knots"
    loose = ChromaKnowledgeRetriever(retriever.store, replace(retriever.settings, relative_floor=0.0))
    everything = loose.search(query, collections=["boat"], k=10)
    floored = retriever.search(query, collections=["boat"], k=10)
    assert len(floored) < len(everything)
    best_dense = max(p.metadata["dense_score"] for p in everything)
    best_lexical = max(p.metadata["lexical_score"] for p in everything)
    floor = retriever.settings.relative_floor
    for p in everything:
        strong = p.metadata["dense_score"] >= floor * best_dense or p.metadata["lexical_score"] >= floor * best_lexical
        assert (p.text in {q.text for q in floored}) == strong
    # the top hit of each signal always survives the floor
    kept = {q.text for q in floored}
    assert max(everything, key=lambda p: p.metadata["dense_score"]).text in kept
    assert max(everything, key=lambda p: p.metadata["lexical_score"]).text in kept


async def test_absolute_min_score_is_a_similarity_floor(retriever: ChromaKnowledgeRetriever) -> None:
    assert await retriever.retrieve("mainsail", collections=["boat"], min_score=0.999) == []
    some = await retriever.retrieve("mainsail", collections=["boat"], min_score=0.2, k=10)
    assert some and all(p.metadata["dense_score"] >= 0.2 for p in some)


async def test_empty_query_and_unknown_collection_return_nothing_instead_of_failing(
    retriever: ChromaKnowledgeRetriever,
) -> None:
    assert await retriever.retrieve("   ", collections=["boat"]) == []
    assert await retriever.retrieve("flares", collections=["no-such-collection"]) == []


async def test_collections_default_to_all_and_filter_when_named(retriever: ChromaKnowledgeRetriever) -> None:
    both = await retriever.retrieve("knead the dough", k=5)
    assert {p.collection for p in both if "Knead" in p.text} == {"boat", "kitchen"}
    assert len({p.text for p in both}) == len(both)
    only = await retriever.retrieve("knead the dough", collections=["kitchen"], k=5)
    assert {p.collection for p in only} == {"kitchen"}


async def test_document_and_section_filters(retriever: ChromaKnowledgeRetriever) -> None:
    manual_id = next(d for d in retriever.store.document_ids("boat") if d.endswith("manual.md"))
    hits = await retriever.retrieve("dough", collections=["boat"], k=5, documents=[manual_id])
    assert hits and all(p.document_id == manual_id for p in hits)
    safety = await retriever.retrieve("engine oil", collections=["boat"], k=5, sections=["Boat manual › Safety"])
    assert safety and all(p.section == "Boat manual › Safety" for p in safety)
    below = await retriever.retrieve("engine oil", collections=["boat"], k=5, sections=["Boat manual"])
    assert {p.section for p in below} >= {"Boat manual › Engine"}  # a section filter includes its subsections


async def test_neighbours_are_adjacent_chunks_in_order_without_the_passage_itself(
    retriever: ChromaKnowledgeRetriever,
) -> None:
    [sails] = [p for p in retriever.search("mainsail jib", collections=["boat"], k=5) if p.section.endswith("Sails")]
    around = await retriever.neighbours(sails, before=1, after=1)
    assert [p.section.rsplit(" › ", 1)[-1] for p in around] == ["Engine", "Safety"]
    assert [p.chunk_index for p in around] == [sails.chunk_index - 1, sails.chunk_index + 1]
    assert await retriever.neighbours(sails, before=0, after=0) == []
    assert [p.chunk_index for p in await retriever.neighbours(sails, before=0, after=5)] == [sails.chunk_index + 1]


async def test_neighbours_from_memory_are_the_databases(retriever: ChromaKnowledgeRetriever) -> None:
    """Once a search has the collection's chunks in memory, neighbours come from there (on the event loop): the same
    chunks, text and provenance as the database gives (the oracle: the store read with the memory dropped)."""
    [sails] = [p for p in retriever.search("mainsail jib", collections=["boat"], k=5) if p.section.endswith("Sails")]
    held = await retriever.neighbours(sails, before=2, after=2)
    assert retriever._held_neighbours(sails, before=2, after=2) is not None  # served from memory
    retriever._lexical.clear()
    assert retriever._held_neighbours(sails, before=2, after=2) is None
    from_store = await retriever.neighbours(sails, before=2, after=2)
    key = [(p.document_id, p.chunk_index, p.text, p.section, p.title) for p in held]
    assert key == [(p.document_id, p.chunk_index, p.text, p.section, p.title) for p in from_store] and key


def test_held_vectors_find_what_chromas_index_finds(store: KnowledgeStore, tmp_path: Path) -> None:
    """A collection searched through the vectors held in memory ranks the same chunks (and its sentence index the
    same sentences) with the same similarities as one searched through Chroma's index (the oracle: the same retriever
    with nothing held), with and without a document filter; a collection above the bound is still searched through
    Chroma."""
    import random

    import tda.knowledge.retrieval as retrieval

    words = "anchor bilge cleat dinghy ensign fender galley halyard keel mast rudder tiller winch".split()
    rng = random.Random(7)
    for d in range(6):
        sections = "\n\n".join(
            f"## Part {s}\n\n" + " ".join(rng.choice(words) for _ in range(rng.randint(20, 60))) + "." for s in range(8)
        )
        (tmp_path / f"doc{d}.md").write_text(f"# Doc {d}\n\n{sections}\n")
    ingest_paths(store, sorted(tmp_path.glob("doc*.md")), "fleet")
    held = ChromaKnowledgeRetriever(store)
    chroma = ChromaKnowledgeRetriever(store)
    first = sorted(store.document_ids("fleet"))[0]

    def found(r: ChromaKnowledgeRetriever, query: str, documents: Sequence[str]) -> list[tuple[str, float]]:
        hits = r.search(query, collections=["fleet"], k=20, documents=documents)
        return [(p.metadata["id"], round(p.metadata["dense_score"], 3)) for p in hits]

    queries = [(q, d) for q in ("keel and rudder", "winch halyard mast", "galley ensign") for d in ((), (first,))]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(retrieval, "HELD_VECTORS", 0)
        expected = [found(chroma, *q) for q in queries]
    assert chroma._lexical["fleet"].unit_vectors is None  # the oracle searched through Chroma's index
    assert [found(held, *q) for q in queries] == expected and all(expected)
    assert held._lexical["fleet"].unit_vectors is not None
    # The sentence index, held too: by meaning alone (no BM25 weight), the 20 sentences found are the 20 nearest by
    # every sentence's cosine (plain numpy over the stored vectors; Chroma's index is approximate).
    sentences = store.sentence_collection("fleet")
    assert sentences is not None
    stored = sentences.get(include=["embeddings", "metadatas"])
    matrix = np.asarray(stored["embeddings"], dtype=np.float64)
    places = [(m["document_id"], m["position"]) for m in stored["metadatas"] or []]
    embed: Any = sentences.configuration.get("embedding_function")
    dense_only = ChromaKnowledgeRetriever(store, replace(held.settings, lexical_weight=0.0))
    for query, _ in queries:
        vector = np.asarray(embed([query])[0], dtype=np.float64)
        cosines = matrix @ vector / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(vector))
        boundary = np.sort(cosines)[-20]  # the 20th highest: a tie there may go either way
        nearest = {places[i] for i in np.flatnonzero(cosines > boundary + 1e-6)}
        windows = dense_only.sentence_search(query, collections=["fleet"], k=20)
        assert len(windows) == 20 and nearest <= {(w.document_id, w.position) for w in windows} and nearest
        # each window carries its sentence's own similarity (the module's third ranking), the oracle's cosine
        cosine = {place: max(0.0, float(c)) for place, c in zip(places, cosines, strict=True)}
        assert all(abs(w.similarity - cosine[(w.document_id, w.position)]) < 1e-4 for w in windows)
    assert dense_only._sentences["fleet"].unit_vectors is not None


def passage(text: str, score: float) -> Passage:
    return Passage(text=text, score=score, document_id="d")


def test_dedupe_keeps_the_best_of_identical_and_near_identical_texts() -> None:
    long = "the quick brown fox jumps over the lazy dog near the river bank at dawn " * 3
    kept = dedupe(
        [
            passage(long, 0.9),
            passage(long.upper(), 0.8),
            passage(long + " today", 0.7),
            passage("unrelated text here", 0.6),
        ]
    )
    assert [p.score for p in kept] == [0.9, 0.6]


class ReverseReranker:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def rerank(self, query: str, passages: Sequence[Passage]) -> list[Passage]:
        self.seen.append(query)
        return [replace(p, score=1.0 - i / 10) for i, p in enumerate(reversed(passages))]


async def test_a_pluggable_reranker_decides_the_final_order(retriever: ChromaKnowledgeRetriever) -> None:
    plain = retriever.search("mainsail", collections=["boat"], k=10)
    reranker = ReverseReranker()
    reranked = await ChromaKnowledgeRetriever(retriever.store, retriever.settings, reranker).retrieve(
        "mainsail", collections=["boat"], k=10
    )
    assert reranker.seen == ["mainsail"]
    assert [p.text for p in reranked] == [p.text for p in reversed(plain)]


async def test_rank_fusion_keeps_each_signals_best_hit_near_the_top(retriever: ChromaKnowledgeRetriever) -> None:
    """Reciprocal-rank fusion, checked against the formula written out here: weight / (60 + rank) per signal."""
    query = "propeller fishing line"
    fused = retriever.search(query, collections=["boat"], k=10)
    assert fused[0].metadata["lexical_score"] == 1.0  # the best BM25 hit is normalised to 1
    by_dense = sorted(fused, key=lambda p: -p.metadata["dense_score"])
    by_lexical = sorted(
        (p for p in fused if p.metadata["lexical_score"] > 0), key=lambda p: -p.metadata["lexical_score"]
    )
    w = retriever.settings.lexical_weight

    def rrf(p: Passage) -> float:
        score = (1 - w) / (60 + 1 + by_dense.index(p))
        if p in by_lexical:
            score += w / (60 + 1 + by_lexical.index(p))
        return score * 61

    for p in fused:
        assert p.score == pytest.approx(rrf(p), abs=1e-4)
    dense_only = ChromaKnowledgeRetriever(retriever.store, RetrievalSettings(lexical_weight=0.0))
    plain = dense_only.search(query, collections=["boat"], k=10)
    assert all(p.metadata["lexical_score"] == 0.0 for p in plain)
    assert [p.metadata["dense_score"] for p in plain] == sorted(
        (p.metadata["dense_score"] for p in plain), reverse=True
    )


def dedupe_every_pair(passages: Sequence[Passage], threshold: float, limit: int | None) -> list[Passage]:
    """dedupe as it was first written: every kept passage compared with each new one, by sets of word trigrams (the
    reference, independent of the code's hashed shingles)."""
    import string

    from tda.knowledge.chunking import content_hash

    def _shingles(text: str) -> set[tuple[str, ...]]:
        words = "".join(" " if c in string.punctuation else c for c in text.lower()).split()
        return {tuple(words[i : i + 3]) for i in range(max(1, len(words) - 2))}

    kept: list[Passage] = []
    hashes: set[str] = set()
    for p in passages:
        if limit is not None and len(kept) >= limit:
            break
        sh = _shingles(p.text)
        if content_hash(p.text) in hashes or any(
            len(sh & _shingles(q.text)) / len(sh | _shingles(q.text)) >= threshold for q in kept
        ):
            continue
        hashes.add(content_hash(p.text))
        kept.append(p)
    return kept


_VOCABULARY = st.sampled_from("alpha beta gamma delta epsilon zeta eta theta iota kappa".split())


@settings(max_examples=300, deadline=None)
@given(
    base=st.lists(_VOCABULARY, min_size=1, max_size=40),
    edits=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 6), st.lists(_VOCABULARY, max_size=6)), max_size=12),
    threshold=st.sampled_from([0.0, 0.3, 0.5, 0.7, 0.85, 0.9, 1.0]),
    limit=st.none() | st.integers(0, 12),
)
def test_dedupe_keeps_what_comparing_every_pair_keeps(
    base: list[str], edits: list[tuple[int, int, list[str]]], threshold: float, limit: int | None
) -> None:
    """Prefix filtering only skips pairs that cannot reach the threshold: the passages kept are those a comparison of
    every pair keeps, for texts that are edits of one another (near duplicates at every distance)."""
    texts, words = [" ".join(base)], list(base)
    for at, cut, inserted in edits:
        words = [*words[:at], *inserted, *words[at + cut :]] or ["omega"]
        texts.append(" ".join(words))
    passages = [passage(t, 1.0 - n / 100) for n, t in enumerate(texts)]
    assert dedupe(passages, threshold, limit=limit) == dedupe_every_pair(passages, threshold, limit)


@settings(max_examples=300, deadline=None)
@given(
    base=st.lists(_VOCABULARY, min_size=1, max_size=40),
    edits=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 6), st.lists(_VOCABULARY, max_size=6)), max_size=12),
    threshold=st.sampled_from([0.3, 0.5, 0.7, 0.85, 0.9, 1.0]),
    limit=st.none() | st.integers(0, 12),
    data=st.data(),
)
def test_a_collection_s_near_duplicate_map_keeps_what_dedupe_keeps(
    base: list[str], edits: list[tuple[int, int, list[str]]], threshold: float, limit: int | None, data: st.DataObject
) -> None:
    """The map made once per collection (``near_duplicate_rows``) decides as ``dedupe`` compares: for any candidates
    of the collection, in any order, the same passages are kept."""
    texts, words = [" ".join(base)], list(base)
    for at, cut, inserted in edits:
        words = [*words[:at], *inserted, *words[at + cut :]] or ["omega"]
        texts.append(" ".join(words))
    rows = data.draw(st.lists(st.integers(0, len(texts) - 1), unique=True))
    passages = [passage(texts[row], 1.0 - n / 100) for n, row in enumerate(rows)]
    near = near_duplicate_rows(texts, threshold)
    assert distinct_by(passages, rows, near, limit) == dedupe(passages, threshold, limit=limit)


def test_a_search_of_a_held_collection_compares_no_texts(
    retriever: ChromaKnowledgeRetriever, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dedupe by the collection's near-duplicate map, made at its first search: a search after it computes no
    passage's shingles (``dedupe`` computed the ~80 candidates' each search, ~1 ms of a demo turn's ~3 ms search),
    and keeps what ``dedupe`` keeps."""
    first = retriever.search("mainsail reef", collections=["boat"], k=10)
    keys = retrieval._text_key
    computed: list[str] = []
    monkeypatch.setattr(retrieval, "_text_key", lambda text: computed.append(text) or keys(text))
    again = retriever.search("mainsail reef", collections=["boat"], k=10)
    other = retriever.search("fishing line on the propeller", collections=["boat"], k=10)
    assert computed == []
    assert again == first
    assert other == dedupe(other, retriever.settings.near_duplicate)


def test_a_search_scores_its_words_before_it_waits_for_the_query_s_vector(
    retriever: ChromaKnowledgeRetriever, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BM25 needs no vector: a search scores the query's words while its embedding runs (a turn starts it with the
    request), so that only the vector's own steps are left once it comes; the hits are the same."""
    first = retriever.search("mainsail reef wind", collections=["boat"], k=10)
    col, _ = retriever._collection("boat")
    embed = col.configuration["embedding_function"]
    scores = retrieval.BM25Index.scores
    steps: list[str] = []
    monkeypatch.setattr(
        retrieval.BM25Index, "scores", lambda index, query: steps.append("words") or scores(index, query)
    )
    call = type(embed).__call__
    monkeypatch.setattr(type(embed), "__call__", lambda self, texts: steps.append("vector") or call(self, texts))
    assert retriever.search("mainsail reef wind", collections=["boat"], k=10) == first
    assert steps == ["words", "vector"]


def test_a_search_makes_passages_only_of_the_hits_it_returns(
    store: KnowledgeStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The candidates are ranked, floored and deduplicated by their figures, and only those returned become passages
    (a demo search fused ~46 candidates and returned 8: making every one a passage was a quarter of its CPU, after
    the query's vector, on the turn's critical path). The hits are those of a longer search, cut."""
    sections = "\n\n".join(f"## Harbour {n}\n\nBoat {n} moors at pier {n} beside the {n}th buoy." for n in range(30))
    (tmp_path / "harbour.md").write_text(f"# Harbour\n\n{sections}\n")
    ingest_paths(store, [tmp_path / "harbour.md"], "harbour")
    retriever = ChromaKnowledgeRetriever(store)
    longer = retriever.search("boat moors at pier", collections=["harbour"], k=30)
    made = retrieval._passage
    built: list[str] = []
    monkeypatch.setattr(retrieval, "_passage", lambda id_, *rest: built.append(id_) or made(id_, *rest))
    hits = retriever.search("boat moors at pier", collections=["harbour"], k=3)
    assert len(longer) > 3
    assert hits == longer[:3]
    assert built == [p.metadata["id"] for p in hits]
