"""At an ample room (a 16K window's), a question naming a speaker gets every line of theirs before the other
speaker's tail (``theirs_first``): such a room holds more than all they said, and the line answering a question asked
in general words ("What helps Odile de-stress?" <- "I've gotten really into crochet") is the last of theirs by every
signal, under the other speaker's chatter nearer the question. A question in the first person asked of a chat between
a user and an assistant (no speaker tags) is the user's: their lines come first there."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message
from components.context_window.recall.messages import WHOLE_TEXT_ROOM, theirs_first
from tests.support import TurnedEmbedder, recalled_contents, two_speaker_chat

MINE = "Which garden firm employs me at the moment?"
MY_NEWS = "Since I moved to Quillmark last month I'm writing code all day."

QUESTION = "What helps Maya de-stress?"
EVIDENCE = "Maya: Crochet lately, I made a wonky little frog and I adore him."


class ChatterEmbedder(TurnedEmbedder):
    """Joss's chatter ("Honestly ...") turned toward the question, Maya's lines not at all, the evidence away."""

    question, dimensions = "What helps   de-stress?", 48  # as recall asks it: without the speaker's name

    @classmethod
    def share(cls, text: str) -> float:
        if text.startswith("Crochet"):
            return -0.3
        return 0.8 if text.startswith("Honestly") else 0.0


def chat(messages: int, at: int, seed: int = 0) -> list[Message]:
    """Joss twice, Maya once, in turn (~15 tokens a line), the evidence one of Maya's at ``at``: her ~1 in 3 lines
    take under a third of the tokens an ample room gathers."""

    def line(i: int, words: str) -> str:
        return f"Maya: {words.capitalize()}." if i % 3 == 0 else f"Joss: Honestly {words}."

    out = two_speaker_chat(messages, line, words=7, user_every=3, seed=seed)
    out[at] = Message("user", EVIDENCE, turn=at // 2 + 1)
    return out


async def test_every_line_of_the_asked_about_comes_inside_an_ample_room():
    """Fails on main: by meaning all ~1,400 of Joss's lines come before the evidence, so a room gathering ~1,000
    units never reaches it; past tda's best, Maya's ~700 lines come first, and the room holds them all."""
    messages = chat(2_100, at=300)
    assert EVIDENCE in await recalled_contents(ChatterEmbedder(), messages, QUESTION, WHOLE_TEXT_ROOM)
    assert EVIDENCE not in await recalled_contents(ChatterEmbedder(), messages, QUESTION, WHOLE_TEXT_ROOM - 1)


class AnswersEmbedder(TurnedEmbedder):
    """The assistant's answers ("Honestly ...") turned toward the first-person question, the user's lines not at all,
    the user's news away."""

    question, dimensions = MINE, 48

    @classmethod
    def share(cls, text: str) -> float:
        if text.startswith("Since"):
            return -0.3
        return 0.8 if text.startswith("Honestly") else 0.0


def assistant_chat(messages: int, at: int) -> list[Message]:
    """A user (1 in 3 lines) and an assistant, no speaker tags, the user's news at ``at``; 1 in 31 of the answers
    say "firm", so the question shares a rare word and is not a faint one (which recalls its best hit alone)."""

    def line(i: int, words: str) -> str:
        return f"{words.capitalize()}." if i % 3 == 0 else f"Honestly {'firm ' if i % 31 == 1 else ''}{words}."

    out = two_speaker_chat(messages, line, 7, 3)
    out[at] = Message("user", MY_NEWS, turn=at // 2 + 1)
    return out


async def test_a_first_person_question_gets_the_users_lines_inside_an_ample_room():
    """Fails with the user's lines not first: all ~1,400 of the assistant's answers rank before the news. A question
    in the second person ("you") or naming no one in the first person keeps tda's order."""
    messages = assistant_chat(2_100, at=300)
    assert MY_NEWS in await recalled_contents(AnswersEmbedder(), messages, MINE, WHOLE_TEXT_ROOM)
    assert MY_NEWS not in await recalled_contents(AnswersEmbedder(), messages, MINE, WHOLE_TEXT_ROOM - 1)


async def test_a_question_about_no_one_keeps_the_order():
    """The same chat and question without "me": the assistant's answers stay ahead of the user's news."""

    class Impersonal(AnswersEmbedder):
        question = "Which garden firm employs them at the moment?"

    messages = assistant_chat(2_100, at=300)
    assert MY_NEWS not in await recalled_contents(Impersonal(), messages, Impersonal.question, WHOLE_TEXT_ROOM)


def oracle(ranked: list[int], theirs: list[bool], start: int) -> list[int]:
    """Oracle: a stable sort by (past the head, not theirs)."""
    keyed = sorted(range(len(ranked)), key=lambda i: (i >= start, i >= start and not theirs[i], i))
    return [ranked[i] for i in keyed]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.booleans()), unique_by=lambda p: p[0]), st.integers(0, 60))
def test_past_the_head_theirs_come_first_each_in_order(pairs, start):
    ranked, theirs = [p for p, _ in pairs], [mine for _, mine in pairs]
    out = theirs_first(np.asarray(ranked, dtype=np.intp), np.asarray(theirs, dtype=bool), start).tolist()
    assert out == oracle(ranked, theirs, start)
    assert out[:start] == ranked[:start]
