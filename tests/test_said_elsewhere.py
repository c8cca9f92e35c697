"""A message made only of sentences said in many messages (a chat's stock lines) has no meaning of its own: it leaves
the rankings by meaning, so news told in other words comes before the stock lines near the question
(``recall.messages.SAID_ELSEWHERE``, docs/knowledge.md "Session 56 (para56)")."""

from __future__ import annotations

import hashlib
from collections import defaultdict

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message, Session
from components.context_window.recall.messages import (
    SAID_ELSEWHERE,
    HistoryIndex,
    SessionRecall,
    embedded_text,
    parts_of,
)
from components.context_window.relevance import EVIDENCE
from tests.support import DigestVectors

STOCK = "Thinking of getting a takeaway later."
NEWS = "Change of plan, the island is off because of the ferry strikes, we are doing the coast instead."
QUESTION = "What scuppered the original getaway?"


class GetawayMeaning:
    """Meaning as the test says it: the stock line about a takeaway sits nearest the question ("getaway" is near
    "takeaway" to a small embedder), the news of the cancelled trip a little further, every other text elsewhere
    (each its own vector, as a real embedder's different texts are)."""

    vector_space = "getaway-meaning"

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    @staticmethod
    def _vector(text: str) -> list[float]:
        if "scuppered" in text:
            return [1.0, 0.5, 0.0, 0.0]
        if "takeaway" in text:
            return [1.0, 0.0, 0.0, 0.0]
        if "ferry" in text:
            return [0.6, 1.0, 0.0, 0.0]
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        return [0.0, 0.0, 1.0, float(np.random.default_rng(seed).uniform(0.0, 1.0))]


def stock_chat(stock_lines: int) -> list[Message]:
    """300 lines of chatter, each said once; the stock line alone in ``stock_lines`` messages; the news once."""
    messages = [
        Message("user" if n % 2 else "assistant", f"Day {n}: the bus was late and the kettle broke, note {n}.")
        for n in range(300)
    ]
    for at in range(stock_lines):
        messages[20 + 37 * at] = Message("assistant", STOCK)
    messages[150] = Message("assistant", NEWS)
    return messages


async def test_news_told_in_other_words_comes_before_a_stock_line_near_the_question():
    """The question shares no word with the chat; five stock lines are nearer it in meaning than the news. On main
    they led the ranking and their exchanges came with them, the news sixth or lower; now the news leads."""
    messages = stock_chat(5)
    ranking = await SessionRecall(GetawayMeaning()).recall(
        Session("chat", messages=messages), QUESTION, before=290, enough_tokens=10**6
    )
    assert ranking.reason is None
    recalled = [u.messages[0].content for u in ranking.units]
    assert recalled[0] == NEWS
    assert STOCK not in recalled


async def test_a_line_said_in_fewer_messages_keeps_its_meaning():
    """Said in two messages, the line is the chat's own (a fact told twice): it still leads by meaning."""
    messages = stock_chat(SAID_ELSEWHERE - 1)
    ranking = await SessionRecall(GetawayMeaning()).recall(
        Session("chat", messages=messages), QUESTION, before=290, enough_tokens=10**6
    )
    recalled = [u.messages[0].content for u in ranking.units]
    assert recalled[0] == STOCK
    assert NEWS in recalled


async def test_a_question_nothing_answers_is_still_abstained_on():
    """The gate reads every message, stock lines included: a question nothing in the chat is near (in meaning or
    words) says "nothing relevant found", as before."""
    messages = stock_chat(5)
    ranking = await SessionRecall(GetawayMeaning()).recall(
        Session("chat", messages=messages), "Which breed is the neighbour's parrot?", before=290, enough_tokens=10**6
    )
    assert ranking.units == ()
    assert ranking.reason is not None and ranking.reason.startswith("nothing relevant found")


SENTENCES = [f"Sentence number {word} is here." for word in "one two three four five six seven".split()]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=3), min_size=1, max_size=40),
    st.integers(0, 40),
)
def test_said_elsewhere_is_every_sentence_said_in_enough_messages(chat: list[list[str]], n: int) -> None:
    """Against an oracle counting, per sentence, the messages that say it (a message saying it twice counts once):
    a message is said elsewhere when each of its sentences is said in at least ``SAID_ELSEWHERE`` messages, whatever
    order the messages come in, and asked again after more are added."""
    import asyncio

    messages = [Message("user", " ".join(sentences)) for sentences in chat]
    parts = [parts_of(embedded_text(m)) for m in messages]
    vectors = [asyncio.run(DigestVectors().embed(p)) for p in parts]  # one vector per text
    index = HistoryIndex()
    half = len(messages) // 2
    index.add(messages[:half], vectors[:half])
    index.said_elsewhere(len(messages))  # found once for the first half: later parts must be read again
    index.add(messages[half:], vectors[half:])
    holders: dict[str, set[int]] = defaultdict(set)
    for at, message_parts in enumerate(parts):
        for part in message_parts:
            holders[part].add(at)
    expected = [all(len(holders[part]) >= SAID_ELSEWHERE for part in p) for p in parts][:n]
    assert index.said_elsewhere(n).tolist() == expected


def test_the_gate_reads_stock_lines_as_before() -> None:
    """Whether recall abstains is decided before the stock lines leave the rankings by meaning: a question only the
    stock line is near still has evidence (its best message is an outlier in meaning), and asked in the stock line's
    words it finds every one of them by those words."""
    messages = stock_chat(5)
    parts = [parts_of(embedded_text(m)) for m in messages]
    import asyncio

    vectors = [asyncio.run(GetawayMeaning().embed(p)) for p in parts]
    index = HistoryIndex()
    index.add(messages, vectors)
    query = "Thinking of a takeaway later?"
    query_vector = asyncio.run(GetawayMeaning().embed([query]))[0]
    positions, _, _, reason = index.rank(query, query_vector, 290, evidence=EVIDENCE[""])
    assert reason is None
    stock = [at for at, m in enumerate(messages) if m.content == STOCK]
    assert set(stock) <= set(positions.tolist())  # by the words they share
