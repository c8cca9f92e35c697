"""Turn recall reads a session's scores where they are (issue 32 item 5: a native turn's cost the same at turn 10,000
as at 100): a list holding the index's texts in its order (a session's, most turns) has its positions as a view, its
BM25 and cosines read with no row picked out, one gist a text is its own best cosine, and a module's older turns
handed as a ``range`` are read as views; and the figures are those of every row picked out. A kept message's stored
token counts are one shared mapping for equal figures (two such messages a turn, for the session's life)."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.grown import Prefix
from components.context_window.recall.turns import TurnMatches, TurnRecall
from components.context_window.relevance import BM25Index, VectorIndex
from tda.history import message_of
from tests.support import DigestVectors

WORDS = "customer orders open north south refund invoice turn the add".split()


def _texts(words: list[list[str]]) -> list[tuple[Any, str, tuple[str, ...]]]:
    return [((n, " ".join(w)), " ".join(w), (" ".join(w) or f"turn {n}",)) for n, w in enumerate(words)]


def _match(recall: TurnRecall, texts: Any, query: str, older: int, *, ranges: bool) -> TurnMatches:
    where = (range(older, len(texts)), range(older)) if ranges else (np.arange(older, len(texts)), np.arange(older))
    return asyncio.run(
        recall.match("s", texts, query, shown=where[0], candidates=where[1], embedder=DigestVectors(), limit=None)
    )


def test_a_session_list_in_the_index_order_picks_no_bm25_row_out(monkeypatch: pytest.MonkeyPatch):
    """BM25 over a list holding every text in order is BM25 over every text: no mask of the list's rows is made."""
    masks = []
    monkeypatch.setattr(BM25Index, "_mask", lambda self, among: masks.append(len(among)) or np.ones(len(self), bool))
    recall, words = TurnRecall(), [WORDS[n % 7 : n % 7 + 3] for n in range(60)]
    for turn in range(20, 60):
        _match(recall, _texts(words[:turn]), "refund of customer orders", turn - 5, ranges=True)
    assert masks == []


def test_one_gist_a_text_is_its_own_best_cosine(monkeypatch: pytest.MonkeyPatch):
    """A turn's one gist: the product's scores are the texts' best cosines as they come (no copy, no reduction)."""
    products: list[np.ndarray] = []
    scores = VectorIndex.scores
    monkeypatch.setattr(VectorIndex, "scores", lambda self, q: products.append(scores(self, q)) or products[-1])
    recall, texts = TurnRecall(), _texts([[w] for w in WORDS])
    _match(recall, texts, "orders", 5, ranges=True)
    index = next(iter(recall._indexes._entries.values()))
    assert index.best_cosines(np.ones(16)) is products[-1]


def test_the_positions_of_a_growing_session_list_are_one_buffer_not_copied_each_turn():
    """Turn after turn, the positions of a list that only grew are views of one array (the last ones were copied and
    extended each turn: 10,000 positions at turn 10,000); the buffer is replaced only when it doubles."""
    recall, described = TurnRecall(), _texts([[WORDS[n % 10], str(n)] for n in range(200)])
    texts: Prefix[Any] = Prefix(described[:100])
    held: list[np.ndarray] = []
    for turn in range(100, 200):
        texts = texts.appended(described[len(texts) : turn])
        _, among, in_order = asyncio.run(recall._sync("s", texts, None))
        assert in_order and among.tolist() == list(range(turn))
        held.append(among)
    buffers = {id(a.base if a.base is not None else a) for a in held}
    assert len(buffers) <= 2  # a buffer that doubles when full: 100 -> 200 positions, one or two, not 100


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), min_size=3, max_size=40),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    st.randoms(use_true_random=False),
)
def test_matches_read_in_place_equal_those_picked_out(words, query, rng):
    """The same matches, figures and reason to the bit, whether the list is in the index's order and read in place
    (candidates as ranges), or the index holds the texts in another order (every row picked out, as arrays)."""
    texts = _texts(words)
    older = max(1, len(texts) - 3)
    in_place = _match(TurnRecall(), texts, " ".join(query), older, ranges=True)
    shuffled = TurnRecall()
    other = [*reversed(texts), ((-1, "x"), "unrelated words", ("unrelated",))]
    rng.shuffle(other)
    _match(shuffled, other, "warm up", 1, ranges=False)  # the index now holds them in another order
    picked = _match(shuffled, texts, " ".join(query), older, ranges=False)
    assert in_place == picked


def _row(counts: dict[str, int]) -> SimpleNamespace:
    decoded = json.loads(json.dumps(counts))  # as the database's JSON column gives it: its own dict and names
    fields = dict(content="a question", turn=1, valid=True, tool_calls=None, tool_call_id=None, name=None)
    return SimpleNamespace(role="user", phase=None, parts=None, token_counts=decoded, **fields)


def test_equal_stored_counts_are_one_shared_mapping():
    a, b, c = (message_of(_row(counts)) for counts in ({"o200k_base": 9, "cl100k_base": 9},) * 2 + ({"o200k_base": 7},))
    assert a.tokens is b.tokens and a.tokens == {"o200k_base": 9, "cl100k_base": 9}
    assert c.tokens == {"o200k_base": 7} and c.tokens is not a.tokens
    names = [next(iter(m.tokens)) for m in (a, c)]
    assert names[0] is names[1]  # the encoding's name interned, not one copy a message
    assert message_of(_row({})).tokens == {}
