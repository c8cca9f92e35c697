"""What a long session keeps per turn for its life is walked by every full pass of the cycle collector (issue 32
item 5: a native turn's cost the same at turn 10,000 as at 100): the token estimator's cache of per-turn messages,
and workflow_history's searched turns, hold no object the collector tracks beyond what they must; and the words
every earlier turn holds are scored without picking every turn's row out."""

from __future__ import annotations

import asyncio
import gc
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message, RecalledUnit, TurnRecord
from components.context_window.grown import Joined, Prefix
from components.context_window.recall import turns as turn_recall
from components.context_window.recall.turns import TurnRecall
from components.context_window.relevance import BM25Index, terms
from components.context_window.token_estimator import TokenEstimator
from modules.workflow_history.handler import WorkflowHistoryModule, turn_described


def _tracked() -> int:
    gc.collect()
    return len(gc.get_objects())


def test_messages_counted_and_gone_leave_nothing_in_the_estimators_cache():
    """A window's own messages (summaries, recall blocks) are counted and dropped every turn: their entries go with
    them, not kept as dead references (with their tuples) up to the cache's 8,192 for the process's life."""
    estimator = TokenEstimator()
    for turn in range(30):
        window = [Message("user", f"a recall block made for turn {turn}, part {n}") for n in range(10)]
        for message in window:
            estimator.count_message(message)
        assert len(estimator._messages) == 10
    del window, message
    assert len(estimator._messages) == 0


def test_a_cached_message_count_is_one_tracked_object():
    """A live message's cached count adds one object for the collector to walk, not two."""
    estimator = TokenEstimator()
    messages = [Message("user", f"question {n}") for n in range(500)]
    before = _tracked()
    for message in messages:
        estimator.count_message(message)
    assert _tracked() - before <= len(messages) + 20


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=40), st.booleans()), min_size=1, max_size=30))
def test_counts_from_a_warm_cache_are_those_counted_afresh(items):
    """Messages that come and go (their ids reused by new ones) are counted as a fresh estimator counts them."""
    warm, kept = TokenEstimator(cache_size=8), []
    for text, keep in items:
        message = Message("user", text)
        assert warm.count_message(message) == TokenEstimator().count_message(message)
        assert warm.count_message(message) == TokenEstimator().count_message(message)  # from the cache
        if keep:
            kept.append(message)
    for message in kept:
        assert warm.count_message(message) == TokenEstimator().count_message(message)


def test_workflow_historys_searched_turns_are_not_walked_by_the_collector():
    """The earlier turns workflow_history searches, kept per session for its life, are the service's plain tuples of
    strings (a ``TurnText`` each was one tracked object more a turn)."""
    from components.context_window.base import ModuleManifest

    module = WorkflowHistoryModule(ModuleManifest(module_id="workflow_history", display_name="Workflow history"))
    described = [(n, turn_described(TurnRecord(turn=n, query=f"q{n}", plan="look it up"))) for n in range(50)]
    searched = module._earlier.of("s", described)
    for _ in range(3):
        gc.collect()
    assert len(searched.texts) == 50
    assert not any(gc.is_tracked(text) for text in searched.texts)


def _bm25_picking_rows(index: BM25Index, query: str) -> np.ndarray:
    """BM25 over every text written out term by term, each term's rows picked out (as before the shortcut)."""
    n = len(index)
    out = np.zeros(n)
    norm = index.k1 * (1 - index.b + index.b * index._lengths.view / (index._total_length / n or 1.0))
    for term in dict.fromkeys(terms(query)):
        rows, tf = index._posting_arrays(term) if term in index else (np.zeros(0, np.intp), np.zeros(0))
        idf = math.log(1 + (n - len(rows) + 0.5) / (len(rows) + 0.5))
        out[rows] += idf * tf * (index.k1 + 1) / (tf + norm[rows])
    return out


# every text holds "orders" (as a session's every question holds its common words): the shortcut's case
_TEXTS = st.lists(st.lists(st.sampled_from("customer open add turn north the of a".split()), max_size=12), min_size=1)
_QUERY = st.lists(st.sampled_from("orders customer open add turn north south".split()), min_size=1, max_size=5)


@settings(max_examples=200, deadline=None)
@given(_TEXTS, _QUERY)
def test_a_word_every_text_holds_scores_as_its_rows_picked_out_bit_for_bit(texts, query):
    """BM25 adds a word every text holds to every score at once: the same sums as its rows picked out, to the bit."""
    index = BM25Index([" ".join(["orders", *words]) for words in texts])
    assert index.scores(" ".join(query)).tobytes() == _bm25_picking_rows(index, " ".join(query)).tobytes()


@settings(max_examples=100, deadline=None)
@given(_TEXTS, _QUERY)
def test_turn_recalls_coverage_of_a_word_every_text_holds_is_as_its_rows_picked_out(texts, query):
    """Turn recall's coverage (the idf-weighted share of the query's words each turn holds) likewise."""
    recall = TurnRecall()
    handed = [(n, " ".join(["orders", *words]), ()) for n, words in enumerate(texts)]
    index, among, _ = asyncio.run(recall._sync("s", handed, None))
    asked = set(terms(" ".join(query)))
    rows_of = {w: index.lexical.rows(w) for w in sorted(asked) if w in index.lexical}
    matched, count = np.zeros(len(handed)), np.zeros(len(handed))
    weights = {w: turn_recall._idf(len(handed), len(rows)) for w, rows in rows_of.items()}
    for word, rows in rows_of.items():
        matched[rows] += weights[word]
        count[rows] += 1
    coverage, _, counted = turn_recall._coverage(index, " ".join(query), among)
    expected = matched / sum(weights.values()) if rows_of else matched
    assert coverage.tobytes() == expected.tobytes() and counted.tobytes() == count.tobytes()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=12), st.lists(st.integers(0, 9), max_size=6), st.data())
def test_a_joined_sequence_reads_as_the_list_of_its_items(head, tail, data):
    joined, items = Joined(Prefix(list(head)), tail), [*head, *tail]
    assert len(joined) == len(items) and list(joined) == items
    start, stop = data.draw(st.integers(-15, 20)), data.draw(st.integers(-15, 20))
    step = data.draw(st.sampled_from([None, 1, 2, -1]))
    assert joined[start:stop:step] == items[start:stop:step]
    if items:
        at = data.draw(st.integers(-len(items), len(items) - 1))
        assert joined[at] == items[at]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 30),
    st.integers(0, 3),
    st.lists(st.integers(0, 3), max_size=5),
    st.lists(st.integers(0, 3), max_size=5),
)
def test_joined_sequences_share_their_start_as_lists_do(size, grown, last_tail, tail):
    """A session's earlier turns (a view that only grows) joined with the turns handed: what two such sequences
    share from the start is what the lists of their items share."""
    items = list(range(size))
    last = Joined(Prefix(items), last_tail)
    now = Joined(Prefix(items).appended(range(size, size + grown)), tail)
    assert turn_recall.shared_start(now, last) == turn_recall.common_prefix(list(now), list(last))


def test_a_turns_search_compares_only_the_turns_handed_with_the_last_turns(monkeypatch):
    """The earlier turns the service keeps are not compared item by item each turn with the last turn's: only the
    turns handed (the newest 40), however long the session."""
    compared: list[int] = []
    common_prefix = turn_recall.common_prefix

    def counted(items, last):
        compared.append(len(items))
        return common_prefix(items, last)

    monkeypatch.setattr(turn_recall, "common_prefix", counted)
    recall, earlier = TurnRecall(), Prefix([(n, f"turn {n} about orders", ()) for n in range(1_999)])
    for turn in range(2_040, 2_050):
        earlier = earlier.appended([(turn - 41, f"turn {turn - 41} about orders", ())])
        handed = [(n, f"turn {n} about orders", ()) for n in range(turn - 40, turn)]
        texts = Joined(earlier, handed)
        shown, older = np.arange(len(texts) - 10, len(texts)), np.arange(len(texts) - 10)
        asyncio.run(recall.match("s", texts, "orders", shown=shown, candidates=older))
    assert compared and max(compared) <= 41


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(100, 2_000), st.floats(0, 1.5))
def test_conversation_historys_prices_keep_only_the_units_its_last_ranking_held(reach, room, exponent):
    """Recall's packing keeps each unit's price for the next call: as a session goes on (its rankings slide), only the
    units the last call priced are kept, and what it packs is what packing with nothing kept gives."""
    from modules.conversation_history.handler import _packed

    estimator, known = TokenEstimator(), {}
    history = [(Message("user", f"message {n} about the order of customer {n % 7}"),) for n in range(300)]
    for turn in range(reach, 300, 7):  # each call ranks the units in reach of the newest, best first
        ranked = [RecalledUnit(p, history[p], 1.0 / (1 + turn - p)) for p in range(turn - 1, max(-1, turn - reach), -1)]
        recent = [(turn, history[turn], estimator.count_message(history[turn][0]))]
        fresh = _packed(ranked, recent, room, exponent, estimator, None)
        assert _packed(ranked, recent, room, exponent, estimator, known) == fresh
        assert set(known) <= {u.position for u in ranked}
