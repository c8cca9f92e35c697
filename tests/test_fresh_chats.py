"""bench/fresh_chats.py: the held-out chats are the same for a seed, and each question's labels point at messages
that hold its answer (checked word by word and against the session dates the chats write)."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from bench.fresh_chats import KINDS, PAIRS, Asked, fresh_conversations

CHATS = fresh_conversations()
UNANSWERED = ("unanswerable", "missing_detail")
STOP = set(
    "a an the of to in on at for with by from and or but is are was were be been do does did has have had how what "
    "when where which who whom why whose this that these those it its they them their he she his her him i me my "
    "you your we our after before about into than then there not no new now".split()
)


def _words(text: str) -> set[str]:
    """Content words, cut to a crude stem (plurals, -ing, -ed) so "waiting" meets "wait"."""
    words = re.findall(r"[a-z][a-z'-]+", text.lower())
    return {re.sub(r"(?:'s|s|es|ing|ed)$", "", w)[:6] for w in words if w not in STOP}


def _questions() -> list[tuple[int, Asked]]:
    return [(n, q) for n, c in enumerate(CHATS) for q in c.questions if isinstance(q, Asked)]


def test_a_seed_writes_the_same_chats_and_another_seed_other_ones() -> None:
    again = fresh_conversations()
    assert [c.messages for c in again] == [c.messages for c in CHATS]
    assert [c.questions for c in again] == [c.questions for c in CHATS]
    assert [c.messages for c in fresh_conversations(seed=1)] != [c.messages for c in CHATS]


def test_the_chats_are_long_and_ask_every_kind() -> None:
    assert len(CHATS) == 6
    assert all(400 <= len(c.messages) <= 700 for c in CHATS)
    assert {q.kind for _, q in _questions()} == set(KINDS)
    assert all(len(c.questions) == len([q for q in c.questions if isinstance(q, Asked)]) for c in CHATS)


@pytest.mark.parametrize("at", range(6))
def test_each_evidence_message_holds_its_part_of_the_answer(at: int) -> None:
    messages = [m["content"].lower() for m in CHATS[at].messages]
    for question in CHATS[at].questions:
        assert isinstance(question, Asked)
        if question.kind in UNANSWERED:
            assert not question.evidence, question.text
            assert all(any(k.lower() in m for m in messages) for k in question.keys), question.text  # raised
            said = {w for m in messages for w in re.findall(r"[a-z]+", m)}
            assert not said & set(question.absent), question.text  # the topic or detail never given
            continue
        assert len(question.keys) == len(question.evidence), question.text
        for position, key in zip(question.evidence, question.keys, strict=True):
            assert key.lower() in messages[position], (question.text, position, key)


def test_paraphrased_questions_share_no_content_word_with_their_evidence() -> None:
    for n, question in _questions():
        if question.kind != "paraphrased":
            continue
        names = _words(" ".join(PAIRS[n].names))
        asked = _words(question.text) - names
        for position in question.evidence:
            said = _words(CHATS[n].messages[position]["content"]) - names
            assert not asked & said, (question.text, asked & said)


def test_a_time_question_answers_with_its_evidence_session_date() -> None:
    """The date a chat writes on the session holding the evidence (a day earlier when it says "yesterday")."""
    for n, question in _questions():
        if question.kind != "temporal":
            continue
        pair, messages = PAIRS[n], CHATS[n].messages
        day = dt.datetime.strptime(question.answer, "%d %B %Y").date()
        told = re.split(r"\.\s", messages[question.evidence[-1]]["content"])[0]  # the news, not an aside
        session = day + dt.timedelta(days=1 if "yesterday" in told or "last night" in told else 0)
        openers = [i for i, m in enumerate(messages) if m["content"].split(": ", 1)[1].startswith(pair.dated(session))]
        assert len(openers) == 1, question.text
        later = [i for i, m in enumerate(messages) if i > openers[0] and _opens_a_session(m["content"], pair, session)]
        assert openers[0] <= question.evidence[-1] < min(later, default=len(messages)), question.text


def _opens_a_session(content: str, pair: object, after: dt.date) -> bool:
    text = content.split(": ", 1)[1]
    return any(text.startswith(pair.dated(after + dt.timedelta(days=d))) for d in range(1, 40))  # type: ignore[attr-defined]
