"""At ample room (a 16K window's), the plain hybrid's order (BM25 of the question as asked, names too, and whole
meaning, fused by RRF) is interleaved with tda's ranking past its ``PLAIN_FROM`` best (``interleaved``), and from an 8K
window's room (``PLAIN_ROOM``) past the units filling the packed head (``PLAIN_HEAD_SHARE``): a short line of the
asked-about person's that no signal of tda's reaches (the second, shorter statement of an inference) is near the top of
a ranker reading the person's name in its speaker tag."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message, Session
from components.context_window.recall import messages as recall_messages
from components.context_window.recall.messages import (
    PLAIN_ROOM,
    UNNAMED,
    WHOLE_TEXT_ROOM,
    SessionRecall,
    interleaved,
)
from tests.support import TurnedEmbedder, recalled_contents, two_speaker_chat

QUESTION = "Would Maya enjoy a trip north in winter?"
EVIDENCE = "Maya: Aurora photos, my folder is huge."
TRIP = "Joss: The trip north was lovely."


class NearEmbedder(TurnedEmbedder):
    """Maya's chatter ("Honestly ...") turned toward the question, so by meaning her every line is nearer it than the
    evidence, which says nothing of it in the question's words."""

    question, dimensions = "Would enjoy a trip north in winter?", 48

    @classmethod
    def vector(cls, text: str) -> list[float]:
        return super().vector(" ".join(text.split()))  # the question without its name ("Would   enjoy ...")

    @classmethod
    def share(cls, text: str) -> float:
        if text.startswith("Aurora"):  # the evidence: turned away
            return -0.3
        return 0.8 if text.startswith("Honestly") else 0.0


def chat(messages: int, at: int, seed: int = 0) -> list[Message]:
    """Maya and Joss in turn, ~20 tokens a line, Maya's lines opening "Honestly", the evidence at ``at`` (one of
    Maya's) and one line of Joss's sharing the question's words."""

    def line(i: int, words: str) -> str:
        return f"Maya: Honestly {words}." if i % 2 == 0 else f"Joss: {words.capitalize()}."

    out = two_speaker_chat(messages, line, words=9, user_every=2, seed=seed)
    out[at] = Message("user", EVIDENCE, turn=at // 2 + 1)
    out[at + 301] = Message("assistant", TRIP, turn=(at + 301) // 2 + 1)
    return out


async def test_the_plain_hybrids_best_enter_a_deep_room_that_tdas_ranking_leaves_them_out_of():
    """Fails on main: by meaning all ~1,200 of Maya's lines come before the evidence, so a room gathering ~750 units
    never reaches it; the plain hybrid reads "Maya" in its speaker tag, and the shortest of her lines comes high."""
    messages = chat(2_400, at=100)
    deep = await recalled_contents(NearEmbedder(), messages, QUESTION, WHOLE_TEXT_ROOM)
    assert EVIDENCE in deep
    assert deep.index(EVIDENCE) < len(deep) // 2  # near the plain hybrid's top, not at the room's edge


async def test_from_an_8k_rooms_gather_the_plain_order_comes_past_the_packed_head_and_not_below_it(
    monkeypatch: pytest.MonkeyPatch,
):
    """Fails on main (the plain order only at an ample room). Gathering ``PLAIN_ROOM`` (~500 lines of ~20 tokens), the
    evidence comes in, and tda's best lines lead as without the rule: the head the history packs in rank order is a
    quarter of the tokens gathered (~2,500: 100+ lines), kept whole. One token below, nothing changes. (The distinct
    lines, fused into tda's own order from the same room, are off: this is the plain order's test.)"""
    monkeypatch.setattr(recall_messages, "DISTINCT_WEIGHT", 0.0)
    messages = chat(2_400, at=100)
    below = await recalled_contents(NearEmbedder(), messages, QUESTION, PLAIN_ROOM - 1)
    assert EVIDENCE not in below
    gathered = await recalled_contents(NearEmbedder(), messages, QUESTION, PLAIN_ROOM)
    assert EVIDENCE in gathered
    assert gathered[:100] == below[:100]


async def test_the_plain_order_is_taken_only_for_a_question_naming_a_speaker():
    """Fails on main (no plain order). A user-and-assistant chat has no speaker tag for a name to match: there the
    plain order only pushed tda's own deep units out (session 58: assistant 16K 100 -> 96.4), so a question about no
    one, or about the chat's "you", ranks as without it; one naming Maya takes it."""
    messages = chat(2_400, at=100)
    recall = SessionRecall(NearEmbedder())
    session = Session("s", messages=messages)
    index = await recall.sync(session, dense=True)
    vector = (await NearEmbedder().embed([index.focus(QUESTION)]))[0]
    n = len(messages)

    def ranked(about: frozenset[int]) -> tuple[list[int], list[int]]:
        rank = partial(index.rank, index.focus(QUESTION), vector, n, about=about, ample=True)
        return rank()[0].tolist(), rank(asked=QUESTION)[0].tolist()

    for no_speaker in (frozenset(), frozenset({UNNAMED["assistant"]}), frozenset({UNNAMED["user"]})):
        tdas, with_asked = ranked(no_speaker)
        assert with_asked == tdas
    maya = index.asked_about(QUESTION)
    assert maya and all(number >= 0 for number in maya)
    tdas, with_asked = ranked(maya)
    assert with_asked[:40] == tdas[:40] and with_asked != tdas
    assert messages.index(next(m for m in messages if m.content == EVIDENCE)) in with_asked[:1_000]


def merged(ranked: list[int], plain: list[int], start: int) -> list[int]:
    """Oracle: the merge written out (a list walked by index), each position once."""
    out = list(ranked[:start])
    i, j = start, 0
    while len(out) < len(ranked) and (i < len(ranked) or j < len(plain)):
        while i < len(ranked) and ranked[i] in out:
            i += 1
        if i < len(ranked):
            out.append(ranked[i])
            i += 1
        if len(out) >= len(ranked):
            break
        while j < len(plain) and plain[j] in out:
            j += 1
        if j < len(plain):
            out.append(plain[j])
            j += 1
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 60), unique=True, max_size=40),
    st.permutations(list(range(61))),
    st.integers(0, 50),
)
def test_interleaving_keeps_tdas_head_and_takes_each_order_in_turn(ranked, plain, start):
    out = interleaved(np.asarray(ranked, dtype=np.intp), np.asarray(plain, dtype=np.intp), start).tolist()
    assert out == merged(ranked, plain, start)
    assert len(out) == len(ranked) == len(set(out))
    assert out[:start] == ranked[:start]
