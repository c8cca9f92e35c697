"""The relevance engine against separately written oracles: BM25 and RRF computed by hand on a tiny corpus, and
packing's contract checked by hypothesis."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.relevance import (
    BM25Index,
    Candidate,
    Floor,
    VectorIndex,
    fuse,
    near_duplicates,
    pack,
    select,
)

# Words chosen so stemming and stopwords change nothing: each document's terms are exactly its words.
DOCS = ["apple banana apple", "banana cherry", "cherry date elderberry fig"]


def okapi(query: list[str], docs: list[list[str]], k1: float = 1.2, b: float = 0.75) -> list[float]:
    """BM25 written out from the formula (Robertson & Zaragoza 2009, Lucene's idf), independent of the engine."""
    n = len(docs)
    avg = sum(len(d) for d in docs) / n
    out = []
    for d in docs:
        total = 0.0
        for q in set(query):
            df = sum(1 for x in docs if q in x)
            tf = d.count(q)
            if not tf:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            total += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avg))
        out.append(total)
    return out


def test_bm25_matches_the_formula_by_hand():
    index = BM25Index(DOCS)
    got = index.scores("apple cherry")
    # By hand: N=3, avgdl=3; apple df=1 idf=ln(1+2.5/1.5); cherry df=2 idf=ln(1+1.5/2.5).
    idf_apple, idf_cherry = math.log(1 + 2.5 / 1.5), math.log(1 + 1.5 / 2.5)
    doc0 = idf_apple * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / 3))
    doc1 = idf_cherry * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / 3))
    doc2 = idf_cherry * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 4 / 3))
    assert got == pytest.approx([doc0, doc1, doc2])
    assert got == pytest.approx(okapi(["apple", "cherry"], [d.split() for d in DOCS]))


def test_bm25_grown_by_add_equals_built_at_once():
    grown = BM25Index(DOCS[:1])
    grown.scores("banana")  # posting arrays cached, then the term grows
    grown.add(DOCS[1:])
    assert grown.scores("banana cherry fig") == pytest.approx(BM25Index(DOCS).scores("banana cherry fig"))
    assert len(grown) == 3


def test_bm25_no_match_scores_zero_and_empty_index_is_empty():
    assert BM25Index(DOCS).scores("zebra").tolist() == [0.0, 0.0, 0.0]
    assert len(BM25Index().scores("apple")) == 0


def test_rrf_fuses_ranks_as_written_by_hand():
    lexical = np.array([3.0, 0.0, 1.0, 2.0])  # lexical ranks: 0, 3, 2 (1 has no shared word)
    dense = np.array([0.1, 0.9, 0.5, 0.3])  # dense ranks: 1, 2, 3, 0
    ranking = fuse(lexical=lexical, dense=dense)
    expected = {
        0: 1 / 61 + 1 / 64,
        1: 1 / 61,
        2: 1 / 63 + 1 / 62,
        3: 1 / 62 + 1 / 63,
    }
    # 2 and 3 tie; the earlier in order goes first.
    assert ranking.positions.tolist() == [0, 2, 3, 1]
    assert ranking.scores == pytest.approx([expected[p] for p in (0, 2, 3, 1)])
    assert ranking.method == "lexical+dense" and ranking.reason is None


def test_floor_can_leave_nothing_and_says_why():
    ranking = fuse(lexical=np.zeros(3), dense=np.array([0.1, 0.2, 0.05]), floor=Floor(min_dense=0.3))
    assert len(ranking) == 0
    assert "no candidate shares a word" in ranking.reason and "0.20" in ranking.reason and "0.30" in ranking.reason


def test_floor_keeps_a_candidate_either_signal_finds():
    ranking = fuse(lexical=np.array([0.0, 1.0, 0.0]), dense=np.array([0.8, 0.1, 0.2]), floor=Floor(min_dense=0.5))
    assert sorted(ranking.positions.tolist()) == [0, 1]


def test_packing_depth_grows_with_the_budget():
    positions = list(range(20))
    costs = [10] * 20
    assert len(pack(positions, costs, 50).chosen) == 5
    assert len(pack(positions, costs, 150).chosen) == 15
    assert len(pack(positions, costs, 10_000).chosen) == 20


def test_packing_skips_what_does_not_fit_and_goes_on():
    packing = pack([0, 1, 2, 3], [60, 50, 30, 10], 100)
    assert packing.chosen == (0, 2, 3) and packing.used == 100 and packing.too_large == 1
    assert packing.in_order([5, 1, 3, 0]) == [3, 2, 0]


def test_near_duplicates_are_passed_over():
    vectors = np.array([[1.0, 0.0], [0.99, 0.01], [0.0, 1.0]])
    packing = pack([0, 1, 2], [10, 10, 10], 100, redundant=near_duplicates(vectors, 0.95))
    assert packing.chosen == (0, 2) and packing.redundant == 1


def test_vector_index_grows_and_scores_cosine():
    index = VectorIndex()
    for i in range(100):
        index.add([[math.cos(i), math.sin(i)]])
    assert len(index) == 100
    scores = index.scores([2.0, 0.0])
    assert scores == pytest.approx([math.cos(i) for i in range(100)], abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    batches=st.lists(st.integers(0, 300), max_size=12),
    query=st.lists(st.integers(-10, 10), min_size=3, max_size=3),
)
def test_vector_index_in_blocks_scores_as_one_matrix(batches, query):
    """Added in batches of any size (across its blocks' edges), the index scores each vector as the cosine of
    its row in the whole matrix, written out here with numpy alone."""
    rng = np.random.default_rng(len(batches))
    index = VectorIndex()
    added = []
    for size in batches:
        batch = rng.normal(size=(size, 3))
        index.add(batch)
        added.extend(batch)
    assert len(index) == len(added)
    if not added:
        assert index.scores(query).shape == (0,)
        return
    whole = np.array(added)
    cosines = whole @ np.array(query) / np.linalg.norm(whole, axis=1) / (np.linalg.norm(query) or 1.0)
    assert index.scores(query) == pytest.approx(cosines, abs=1e-5)
    assert index.matrix.shape == whole.shape


def test_vector_index_refuses_vectors_of_another_size():
    index = VectorIndex()
    index.add([[1.0, 0.0]])
    with pytest.raises(ValueError, match="3 dimensions"):
        index.add([[1.0, 0.0, 0.0]])
    assert len(index) == 1


class Letters:
    """A tiny embedder: a vector of letter counts (so cosine is easy to reason about)."""

    async def embed(self, texts):
        return [[t.count(c) + 0.0 for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts]


async def test_select_returns_the_chosen_in_order_with_snapshot_facts():
    candidates = [Candidate(f"m{i}", text, 5, order=i) for i, text in enumerate(DOCS)]
    selection = await select("cherry fig", candidates, 10, embedder=Letters())
    assert [c.id for c in selection.chosen] == ["m1", "m2"]
    assert selection.used == 10 and selection.method == "lexical+dense"
    assert selection.snapshot()["chosen"] == 2


async def test_select_with_nothing_relevant_returns_nothing_and_a_reason():
    candidates = [Candidate(i, text, 5, order=i) for i, text in enumerate(DOCS)]
    selection = await select("zebra", candidates, 100)
    assert selection.chosen == () and "shares a word" in selection.snapshot()["reason"]


@settings(max_examples=300, deadline=None)
@given(
    costs=st.lists(st.integers(1, 50), min_size=0, max_size=30),
    budget=st.integers(0, 400),
    data=st.data(),
)
def test_packing_contract(costs, budget, data):
    positions = data.draw(st.permutations(range(len(costs))))
    packing = pack(positions, costs, budget)
    chosen = set(packing.chosen)
    assert packing.used == sum(costs[p] for p in chosen) <= max(budget, 0)
    assert list(packing.chosen) == [p for p in positions if p in chosen]  # taken best first
    # Oracle: walk the ranking once more; every skipped candidate must not have fitted when its turn came.
    left = budget
    for p in positions:
        if p in chosen:
            left -= costs[p]
        else:
            assert costs[p] > left, "a better candidate that fits was dropped"
