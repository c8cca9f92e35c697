"""Below an ample room, a question naming a speaker also ranks their own lines that are near the question and unlike
the rest of what they said (``distinct_of_theirs``): "What helps Maya de-stress?" <- "Crochet lately, I made a wonky
little frog" shares no word with the question and is no nearer it than her chatter, but her chatter says what her other
chatter says, and the hobby is told once. Below an 8K window's room only their short such lines."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from components.context_window.base import Message, Session
from components.context_window.recall import messages as recall_messages
from components.context_window.recall.messages import (
    DISTINCT_NEAREST,
    DISTINCT_SMALL_CHARS,
    PLAIN_ROOM,
    WHOLE_TEXT_ROOM,
    SessionRecall,
    unlike_each_other,
)
from tests.support import TurnedEmbedder, recalled_contents, seeded_direction, two_speaker_chat

QUESTION = "What helps Maya de-stress?"
EVIDENCE = "Maya: Crochet lately, I made a wonky little frog and I adore him."
RAMBLE = (
    "Maya: Crochet lately, I made a wonky little frog and I adore him, though his left eye sits a good inch lower than "
    "his right one and my sister says he looks permanently startled, which is fair, since the pattern was for a duck, "
    "and I only noticed halfway through the second skein of green."
)
"""The same news told at length: one sentence, so one part and the same meaning to the embedder below."""
SMALL_GATHER = 5_700
"""What a 4K window's recall gathers (twice its ~2,850-token room): below ``PLAIN_ROOM``."""


class ChatterEmbedder(TurnedEmbedder):
    """Maya's chatter ("Lately ...") alike and turned toward the question, Joss's ("Honestly ...") turned further
    toward it, each line otherwise its own; the evidence only a little toward it."""

    question, dimensions = "What helps   de-stress?", 48  # as recall asks it: without the speaker's name

    @classmethod
    def vector(cls, text: str) -> list[float]:
        vector = seeded_direction(text, cls.dimensions)
        if text != cls.question:
            toward = 0.5 if text.startswith("Lately") else 0.6 if text.startswith("Honestly") else 0.25
            vector = vector + toward * seeded_direction(cls.question, cls.dimensions)
        if text.startswith("Lately"):
            vector = vector + 1.2 * seeded_direction("chatter", cls.dimensions)
        return (vector / np.linalg.norm(vector)).tolist()


def chat(messages: int, at: int) -> list[Message]:
    """Joss twice, Maya once, in turn (~15 tokens a line), the evidence one of Maya's at ``at``."""

    def line(i: int, words: str) -> str:
        return f"Maya: Lately {words}." if i % 3 == 0 else f"Joss: Honestly {words}."

    out = two_speaker_chat(messages, line, words=7, user_every=3)
    out[at] = Message("user", EVIDENCE, turn=at // 2 + 1)
    return out


async def test_a_line_unlike_the_rest_of_theirs_comes_inside_an_8k_room(monkeypatch: pytest.MonkeyPatch):
    """Fails with the rule off: Joss's ~2,000 lines and Maya's ~1,000 come before the evidence by meaning, and a
    gather of ``PLAIN_ROOM`` (~530 lines) never reaches it; with it, ~20th."""
    messages = chat(3_000, at=2_400)
    assert EVIDENCE in await recalled_contents(ChatterEmbedder(), messages, QUESTION, PLAIN_ROOM)
    monkeypatch.setattr(recall_messages, "DISTINCT_WEIGHT", 0.0)
    assert EVIDENCE not in await recalled_contents(ChatterEmbedder(), messages, QUESTION, PLAIN_ROOM)


async def test_below_an_8k_room_only_a_short_distinct_line_comes_inside(monkeypatch: pytest.MonkeyPatch):
    """A 4K room (~90 units) takes only their short distinct lines (``DISTINCT_SMALL_CHARS``): their distinct rambles
    pushed out evidence near the question there. The news told in a line comes inside a 4K window's gather; told at
    length it does not, though an 8K room's list (no length bound) brings it; with the rule off neither comes."""
    assert len(EVIDENCE) <= DISTINCT_SMALL_CHARS < len(RAMBLE)
    short, long = chat(3_000, at=2_400), chat(3_000, at=2_400)
    long[2_400] = Message("user", RAMBLE, turn=1_201)
    assert EVIDENCE in await recalled_contents(ChatterEmbedder(), short, QUESTION, SMALL_GATHER)
    assert RAMBLE not in await recalled_contents(ChatterEmbedder(), long, QUESTION, SMALL_GATHER)
    assert RAMBLE in await recalled_contents(ChatterEmbedder(), long, QUESTION, PLAIN_ROOM)
    monkeypatch.setattr(recall_messages, "DISTINCT_WEIGHT", 0.0)
    assert EVIDENCE not in await recalled_contents(ChatterEmbedder(), short, QUESTION, SMALL_GATHER)


async def test_an_ample_room_asked_after_an_8k_one_gathers_what_it_gathers_without_the_rule(
    monkeypatch: pytest.MonkeyPatch,
):
    """A 16K window's history is asked first at its allocation (an 8K-sized room: the rule runs), then again with the
    window's room (ample): that second ask, which the window sends, gathers what it would with the rule off. Oracle:
    a fresh recall asked once at the ample room with ``DISTINCT_WEIGHT`` 0."""
    messages = chat(3_000, at=2_400)
    recall, session = SessionRecall(ChatterEmbedder()), Session("s", messages=messages)
    await recall.sync(session, dense=True)

    async def gathered(enough_tokens: int) -> list[str]:
        ranking = await recall.recall(session, QUESTION, before=len(messages), enough_tokens=enough_tokens)
        return [m.content for unit in ranking.units for m in unit.messages]

    assert EVIDENCE in await gathered(PLAIN_ROOM)  # the rule ran: the 8K room holds what only it ranks there
    ample = await gathered(2 * WHOLE_TEXT_ROOM)
    monkeypatch.setattr(recall_messages, "DISTINCT_WEIGHT", 0.0)
    assert ample == await recalled_contents(ChatterEmbedder(), messages, QUESTION, 2 * WHOLE_TEXT_ROOM)


def oracle(vectors: np.ndarray) -> list[float]:
    """Oracle: per row, minus the mean of the ``DISTINCT_NEAREST`` largest cosines with the other rows, by loops."""
    out = []
    for i in range(len(vectors)):
        others = sorted((float(vectors[i] @ vectors[j]) for j in range(len(vectors)) if j != i), reverse=True)
        nearest = others[: min(DISTINCT_NEAREST, len(others))]
        out.append(-sum(nearest) / len(nearest))
    return out


@settings(max_examples=100, deadline=None)
@given(arrays(np.float32, st.tuples(st.integers(2, 300), st.just(6)), elements=st.floats(-1, 1, width=32)))
def test_unlikeness_is_minus_the_mean_cosine_with_the_nearest_others(raw):
    vectors = raw + np.float32(1e-3)  # no zero row
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    assert np.allclose(unlike_each_other(vectors), oracle(vectors), atol=1e-5)
