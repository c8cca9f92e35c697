"""bench/fresh2_chats.py: the second held-out set is the same for a seed, its messages are paragraphs, and each
question's labels point at messages that hold its answer (word by word, and against the session dates the chats
write)."""

from __future__ import annotations

import datetime as dt
import itertools
import re
from statistics import median

import pytest

from bench.fresh2_chats import KINDS, PAIRS, Asked, fresh2_conversations

CHATS = fresh2_conversations()
STOP = set(
    "a an the of to in on at for with by from and or but is are was were be been do does did has have had how what "
    "when where which who whom why whose this that these those it its they them their he she his her him i me my "
    "you your we our after before about into than then there not no now so".split()
)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _words(text: str) -> set[str]:
    """Content words cut to a crude stem (plurals, -ing, -ed), so "buyer" meets "buy" no more than it should."""
    words = re.findall(r"[a-z][a-z'-]+", text.lower())
    return {re.sub(r"(?:'s|s|es|ing|ed)$", "", w)[:6] for w in words if w not in STOP}


def _asked(at: int) -> list[Asked]:
    return [q for q in CHATS[at].questions if isinstance(q, Asked)]


def test_a_seed_writes_the_same_chats_and_another_seed_other_ones() -> None:
    again = fresh2_conversations()
    assert [c.messages for c in again] == [c.messages for c in CHATS]
    assert [c.questions for c in again] == [c.questions for c in CHATS]
    assert [c.messages for c in fresh2_conversations(seed=1)] != [c.messages for c in CHATS]


def test_long_chats_of_paragraphs_asking_every_kind() -> None:
    assert len(CHATS) == 5
    assert all(350 <= len(c.messages) <= 650 for c in CHATS)
    assert {q.kind for at in range(len(CHATS)) for q in _asked(at)} == set(KINDS)
    people = [len(m["content"].split()) for c in CHATS if c.style == "friends" for m in c.messages]
    assert 25 <= median(people) <= 50  # words: ~40-60 tokens, not the first set's 21
    assert min(people) <= 3 and max(people) >= 150
    assistant = [len(m["content"].split()) for c in CHATS for m in c.messages if c.style == "assistant"]
    assert sum(n >= 120 for n in assistant) >= 100  # the assistant answers at length


@pytest.mark.parametrize("at", range(len(PAIRS)))
def test_each_evidence_message_holds_its_part_of_the_answer(at: int) -> None:
    messages = [m["content"].lower() for m in CHATS[at].messages]
    said = {w for m in messages for w in re.findall(r"[a-z]+", m)}
    for question in _asked(at):
        if question.kind == "unanswerable":
            assert not question.evidence, question.text
            assert not said & {k.lower() for k in question.keys}, question.text  # never raised
            continue
        assert len(question.keys) == len(question.evidence) > 0, question.text
        for position, key in zip(question.evidence, question.keys, strict=True):
            assert key.lower() in messages[position], (question.text, position, key)


def test_paraphrased_questions_share_no_content_word_with_their_evidence() -> None:
    for at, pair in enumerate(PAIRS):
        names = _words(" ".join(pair.names))
        for question in _asked(at):
            if question.kind == "paraphrased":
                asked = _words(question.text) - names
                for position in question.evidence:
                    shared = asked & _words(CHATS[at].messages[position]["content"])
                    assert not shared, (question.text, shared)


def test_a_topic_recurs_over_many_sessions() -> None:
    """Each chat's recurring topic is talked about in at least eight sessions, so its word alone finds no one."""
    topics = {
        "maya_dan": "kitchen",
        "priya_lou": "school",
        "ines_kofi": "allotment",
        "ray_nadia": "boat",
        "rosa_assistant": "gluten",
    }
    for at, pair in enumerate(PAIRS):
        openers = [i for i, m in enumerate(CHATS[at].messages) if _session_day(pair, m["content"])]
        bounds = [*openers, len(CHATS[at].messages)]
        sessions = [CHATS[at].messages[a:b] for a, b in itertools.pairwise(bounds)]
        mentioning = [s for s in sessions if any(topics[pair.name] in m["content"].lower() for m in s)]
        assert len(mentioning) >= 8, (pair.name, len(mentioning))


def _session_day(pair: object, content: str) -> dt.date | None:
    text = content.split(": ", 1)[1] if not content.startswith("[") and ": " in content else content
    first = dt.date(2022, 12, 1)
    for offset in range(500):
        day = first + dt.timedelta(days=offset)
        if text.startswith(pair.dated(day)):  # type: ignore[attr-defined]
            return day
    return None


def test_a_time_question_answers_with_the_day_its_evidence_session_names() -> None:
    """The date the chat writes on the evidence's session, or the day "yesterday" / "last Friday" points at."""
    for at, pair in enumerate(PAIRS):
        messages = CHATS[at].messages
        for question in _asked(at):
            if question.kind != "temporal":
                continue
            told = question.evidence[-1]
            session = next(d for i in range(told, -1, -1) if (d := _session_day(pair, messages[i]["content"])))
            answer = dt.datetime.strptime(question.answer, "%d %B %Y").date()
            text = messages[told]["content"].lower()
            named = [w for w in WEEKDAYS if f"last {w}" in text]
            if "yesterday" in text or "last night" in text:
                assert answer == session - dt.timedelta(days=1), question.text
            elif named:
                assert WEEKDAYS[answer.weekday()] == named[0] and 1 <= (session - answer).days <= 7, question.text
            else:
                assert answer == session, question.text
