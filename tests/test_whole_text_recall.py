"""News said in passing after a sentence of chatter is recalled by its message's whole text when the room is ample
(``WHOLE_TEXT_WEIGHT``, ``WHOLE_TEXT_ROOM``): neither of its sentences alone is near the question, the message as a
whole is."""

from __future__ import annotations

import hashlib
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message, Session
from components.context_window.recall.messages import WHOLE_TEXT_ROOM, HistoryIndex, SessionRecall

QUESTION = "Where is home these days?"
CHATTER = "I've been binge-watching a baking show all week."
NEWS = "Other news: we got the keys to a place in Ludlow on Sunday."
PASSING = f"{CHATTER} {NEWS}"
WORDS = "kettle garden rain biscuit train meeting paint guitar ferry lemon chess bicycle cinema bread wool".split()
DIMENSIONS = 48


def direction(name: str) -> list[float]:
    """A unit vector seeded by ``name``: unrelated names, near-orthogonal directions."""
    seed = int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")
    vector = np.random.default_rng(seed).standard_normal(DIMENSIONS)
    return (vector / np.linalg.norm(vector)).tolist()


class PassingEmbedder:
    """Every text its own direction, but: the question and the message saying the news in passing, read whole, share
    one; each of that message's sentences alone is turned away from it (the news in other words than the question's)."""

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(t) for t in texts]

    @staticmethod
    def vector(text: str) -> list[float]:
        if text in (QUESTION, PASSING):
            return direction("moved")
        if text in (CHATTER, NEWS):  # its own direction, turned away from the question's
            away = np.asarray(direction(text)) - np.asarray(direction("moved"))
            return (away / np.linalg.norm(away)).tolist()
        return direction(text)


def chat(messages: int, at: int, seed: int = 0) -> list[Message]:
    """A generated chat of one- and two-sentence lines (~20 tokens each), the news in passing at ``at``, and one line
    sharing the question's word "home" (so the question has evidence by words)."""
    rng = random.Random(seed)
    out = []
    for i in range(messages):
        sentences = [" ".join(rng.choices(WORDS, k=8)).capitalize() + "." for _ in range(1 + i % 2)]
        out.append(Message("user" if i % 2 == 0 else "assistant", " ".join(sentences), turn=i // 2 + 1))
    out[at] = Message("user", PASSING, turn=at // 2 + 1)
    out[at + 40] = Message("user", "Home cooking beats a takeaway, honestly.", turn=(at + 40) // 2 + 1)
    return out


async def recalled(messages: list[Message], enough_tokens: int) -> list[str]:
    recall = SessionRecall(PassingEmbedder())
    session = Session("s", messages=messages)
    await recall.sync(session, dense=True)
    ranking = await recall.recall(session, QUESTION, before=len(messages), enough_tokens=enough_tokens)
    return [m.content for unit in ranking.units for m in unit.messages]


async def test_news_said_in_passing_is_recalled_by_the_whole_message_when_the_room_is_ample():
    """Fails without the whole-text ranking: by its parts and their mean the message is the least like the question
    of all, so a 16K window's recall (half of ~2,400 lines) never gets to it."""
    messages = chat(2_400, at=300)
    ample = await recalled(messages, WHOLE_TEXT_ROOM)
    assert PASSING in ample
    assert ample.index(PASSING) < len(ample) // 3  # well inside the room: the ranking, not the room, holds it
    assert PASSING not in await recalled(messages, WHOLE_TEXT_ROOM - 1)  # below the gate: as before


def _index(messages: list[Message], wholes: bool) -> HistoryIndex:
    index = HistoryIndex()
    vectors = [[PassingEmbedder.vector(s) for s in _sentences(m.content)] for m in messages]
    whole = [PassingEmbedder.vector(m.content) if len(_sentences(m.content)) in (2, 3) else None for m in messages]
    index.add(messages, vectors, whole if wholes else None)
    return index


def _sentences(text: str) -> list[str]:
    return [s.strip() + "." for s in text.split(".") if s.strip()]


@settings(max_examples=25, deadline=None)
@given(st.integers(100, 200), st.integers(0, 50), st.integers(0, 10_000), st.sampled_from([QUESTION, "chess ferry"]))
def test_the_whole_text_ranking_only_adds_the_messages_it_ranks_and_never_to_an_abstention(messages, at, seed, query):
    history = chat(messages, at, seed)
    index = _index(history, wholes=True)
    vector = PassingEmbedder.vector(query)
    evidence = SessionRecall(PassingEmbedder()).evidence
    plain = index.rank(query, vector, len(history), evidence=evidence)[0]
    ample = index.rank(query, vector, len(history), evidence=evidence, ample=True)[0]
    two_or_three = {i for i, m in enumerate(history) if len(_sentences(m.content)) in (2, 3)}
    assert set(ample.tolist()) == set(plain.tolist()) | (two_or_three if len(plain) else set())
    # an index given no whole-text vectors (or not all yet) ranks as without the rule: cold and warm alike
    unwhole = _index(history, wholes=False)
    assert unwhole.rank(query, vector, len(history), evidence=evidence, ample=True)[0].tolist() == plain.tolist()
