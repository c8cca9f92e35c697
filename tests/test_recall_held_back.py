"""Vectors held back (``SessionRecall.sync(..., vectors=False)``, a young history): the index grows by words only and
embeds nothing, and the first question asked of it ranks exactly as an index that embedded every message as it came."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message, Session
from components.context_window.recall.messages import SessionRecall
from tests.test_history_recall import CountingEmbedder

BOATS = ["ferry", "tug", "barge"]
SAID = [f"Note {i}: the {w} left port {'early' if i % 3 else 'late'}." for i, w in enumerate(BOATS * 4)]


async def _answers(recall: SessionRecall, session: Session, query: str, split: int) -> tuple:
    """What a window reads of the index: the lead at ``split`` and the ranking before it."""
    lead = await recall.lead(session, query, split=split)
    ranking = await recall.recall(session, query, before=split, enough_tokens=10_000)
    return lead, [(u.position, u.messages, round(u.score, 12)) for u in ranking.units], ranking.method, ranking.reason


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4), st.integers(0, 11), st.booleans())
async def test_a_history_held_to_words_ranks_as_one_embedded_as_it_came(grows, asked, one_call):
    """A history synced as it grows with its vectors held back, then asked about (as recall's ``ask`` is when a
    window recalls): nothing embedded until the question, and the lead and ranking equal those of an index that
    embedded each message as it was added, for a session's recall and a one-call (stateless) one."""
    held_back, eager = CountingEmbedder(), CountingEmbedder()
    recalls = [SessionRecall(held_back), SessionRecall(eager)]
    if one_call:
        recalls = [r.for_one_call() for r in recalls]
    messages: list[Message] = []
    for n in grows:
        messages += [Message("user" if len(messages) % 2 == 0 else "assistant", SAID[len(messages)]) for _ in range(n)]
        await recalls[0].sync(Session("s", messages=list(messages)), dense=True, vectors=False)
        await recalls[1].sync(Session("s", messages=list(messages)), dense=True)
    assert held_back.embedded == 0 < eager.embedded
    session = Session("s", messages=list(messages))
    query = f"When did the {BOATS[asked % 3]} leave port?"
    split = max(1, len(messages) - 1)
    assert await _answers(recalls[0], session, query, split) == await _answers(recalls[1], session, query, split)
    assert held_back.embedded == eager.embedded  # the question gave the history the vectors the eager index has
