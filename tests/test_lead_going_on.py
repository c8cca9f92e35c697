"""Recall's lead in a conversation going on (issue 32 item 5: a native turn's cost flat from turn 100 to 10,000): the
query is compared with the newest few questions first, and when it goes on with them no older message is scored.
Counted in rows and calls, not time; the figures checked against the whole computation written out here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message, Session
from components.context_window.recall.messages import HistoryIndex, SessionRecall, lead_of
from components.context_window.relevance import BM25Index, PartRuns, VectorIndex
from tests.test_history_recall import CountingEmbedder

WORDS = ["order", "customer", "open", "total", "greyhound", "sails", "tea", "fog", "invoice", "late"]


@settings(max_examples=80, deadline=None)
@given(
    batches=st.lists(st.integers(1, 300), min_size=1, max_size=10),
    dimensions=st.integers(1, 70),
    picks=st.lists(st.integers(0, 10**6), max_size=40),
)
def test_scores_at_some_rows_are_the_whole_scores_at_those_rows_bit_for_bit(batches, dimensions, picks):
    """Rows across the blocks' edges, in any order and repeated: each cosine is the one ``scores`` gives it, bit for
    bit (a lead that stops at the newest questions decides as one that scored every row)."""
    rng = np.random.default_rng(sum(batches) + dimensions)
    index = VectorIndex()
    for size in batches:
        index.add(rng.normal(size=(size, dimensions)))
    query = rng.normal(size=dimensions)
    rows = [pick % len(index) for pick in picks]
    assert index.scores_at(query, rows).tobytes() == index.scores(query)[rows].tobytes()


def _history(seed: int, turns: int) -> list[Message]:
    rng = np.random.default_rng(seed)
    messages = []
    for turn in range(1, turns + 1):
        asked = " ".join(rng.choice(WORDS, size=4)) + "?"
        told = " ".join(rng.choice(WORDS, size=6)) + ". " + " ".join(rng.choice(WORDS, size=3)) + "."
        messages += [Message("user", asked, turn=turn), Message("assistant", told, turn=turn)]
    return messages


async def _indexed(messages: list[Message]) -> tuple[SessionRecall, Session, HistoryIndex]:
    recall, session = SessionRecall(CountingEmbedder()), Session("s", messages=messages)
    return recall, session, await recall.sync(session, dense=True)


def _written_out(index: HistoryIndex, query: str, vector: np.ndarray, split: int, end: int) -> tuple:
    """The lead's three figures from every message's scores (the computation before the lead stopped early)."""
    shows = index.shows()[:end]
    dense, lexical = index.dense_scores(vector, end), index.lexical_scores(query)[:end]
    older, newer = (
        float(lexical[:split][shows[:split]].max(initial=0.0)),
        float(lexical[split:][shows[split:]].max(initial=0.0)),
    )
    ratio = older / newer if newer > 0 else (float("inf") if older > 0 else 0.0)
    gap = float(dense[:split][shows[:split]].max(initial=-1.0) - dense[split:][shows[split:]].max(initial=-1.0))
    asked = [p for p in range(end - 1, split - 1, -1) if index.messages[p].role == "user"][:3]
    return gap, ratio, float(dense[asked].max()) if asked else 0.0


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    turns=st.integers(2, 40),
    cut=st.floats(0.05, 0.95),
    asked=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),
    scored_first=st.booleans(),
)
async def test_the_lead_gives_the_figures_every_message_scored_gives(seed, turns, cut, asked, scored_first):
    """Whatever the history, split and query, and whether the whole scores were taken before (a turn's recall keeps
    them): the lead's dense gap, BM25 ratio and continuity are those of every message's scores, and a lead asked to
    stop at a continuity it does not reach gives the same."""
    messages = _history(seed, turns)
    *_, index = await _indexed(messages)
    end = len(messages)
    split = min(end - 1, max(1, int(end * cut)))
    query = " ".join(asked)
    vector = np.asarray((await CountingEmbedder().embed([query]))[0], dtype=np.float32)
    if scored_first:
        index.dense_scores(vector, end)
    lead = lead_of(index, query, vector, split, end)
    _, _, fresh = await _indexed(messages)  # the figures written out over an index the lead never read
    expected = _written_out(fresh, query, vector, split, end)
    assert (lead.dense, lead.lexical, lead.continuity) == expected
    above = lead_of(index, query, vector, split, end, continues_from=expected[2] + 1e-9)
    assert (above.dense, above.lexical, above.continuity) == (lead.dense, lead.lexical, lead.continuity)


async def test_a_conversation_going_on_scores_none_of_its_older_messages(monkeypatch: pytest.MonkeyPatch):
    """A native session asking question after question alike (the long-session bench's): once the query's cosine
    with the newest questions reaches ``continues_from``, the lead reads only those questions' part vectors (3 rows
    of ~2,400), scores no message by BM25 and none by meaning; its continuity is the whole computation's. Asked
    below it, the lead scores every message as before."""
    messages = []
    for turn in range(1, 601):
        messages += [
            Message("user", f"Turn {turn}: which orders of customer {turn} are still open?", turn=turn),
            Message("assistant", f"Customer {turn} has open orders; see the table.", turn=turn),
        ]
    recall, session, index = await _indexed(messages)
    read: list[int] = []
    monkeypatch.setattr(VectorIndex, "scores", _counting(VectorIndex.scores, read, lambda self, *_: len(self)))
    monkeypatch.setattr(VectorIndex, "scores_at", _counting(VectorIndex.scores_at, read, lambda _, __, rows: len(rows)))
    monkeypatch.setattr(BM25Index, "scores", _counting(BM25Index.scores, read, lambda self, *_: 10**9))
    query = "Turn 601: which orders of customer 601 are still open?"
    split = len(messages) - 40
    going_on = await recall.lead(session, query, split=split, continues_from=0.9)
    assert going_on.continuity is not None and going_on.continuity >= 0.9
    assert (going_on.dense, going_on.lexical) == (None, None)
    assert read == [3]  # the 3 newest questions' parts, nothing else
    read.clear()
    whole = await recall.lead(session, query, split=split, continues_from=going_on.continuity + 0.01)
    assert whole.continuity == going_on.continuity and whole.dense is not None and whole.lexical is not None
    assert sum(read) >= len(messages)  # every message scored
    vector = np.asarray((await CountingEmbedder().embed([query]))[0], dtype=np.float32)
    assert whole.continuity == _written_out(index, query, vector, split, len(messages))[2]


def _counting(method, read: list[int], rows):
    def counted(self, *args):
        read.append(rows(self, *args))
        return method(self, *args)

    return counted


async def test_a_conversation_going_on_finds_no_part_starts_again_as_it_grows(monkeypatch):
    """Each turn adds parts; where every message's parts start is found over the parts added since, each part once
    over the session: the lead of a conversation going on reads the newest questions' parts by their owners (a pass
    over every part each turn was ~20,000 parts at turn 10,000)."""
    passed_over: list[int] = []
    caught_up = PartRuns.caught_up

    def counted(runs: PartRuns, owner):
        passed_over.append(len(owner) - runs._read)
        return caught_up(runs, owner)

    monkeypatch.setattr(PartRuns, "caught_up", counted)
    messages = [
        Message("user" if i % 2 == 0 else "assistant", f"Customer {i // 2} asks about order {i}.") for i in range(400)
    ]
    recall, session, index = await _indexed(messages)
    vector = np.asarray((await CountingEmbedder().embed(["Customer 200 asks about order 400."]))[0], dtype=np.float32)
    index.dense_scores(vector, len(messages))
    for turn in range(200, 205):
        messages += [Message("user", f"Customer {turn} asks about order {2 * turn}."), Message("assistant", "Noted.")]
        session = Session("s", messages=messages)
        lead = await recall.lead(
            session, f"Customer {turn} asks about order {2 * turn}.", split=len(messages) - 6, continues_from=0.5
        )
        assert lead.lexical is None and lead.continuity is not None and lead.continuity >= 0.5
    assert len(passed_over) > 5 and sum(passed_over) == len(index.owner)
    vector = np.asarray((await CountingEmbedder().embed(["Customer 204 asks about order 408."]))[0], dtype=np.float32)
    _, _, fresh = await _indexed(messages)
    assert index.dense_scores(vector, len(messages)).tolist() == fresh.dense_scores(vector, len(messages)).tolist()
