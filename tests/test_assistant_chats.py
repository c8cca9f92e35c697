"""bench/assistant_chats.py: the third held-out set is the same for a seed, looks like a person's months with an
assistant (long answers, short requests, dated sessions), and each question's labels point at messages that hold its
answer (word by word, by role, and against the dates the sessions open with)."""

from __future__ import annotations

import datetime as dt
import re
from statistics import median

import pytest

from bench.assistant_chats import KINDS, Asked, assistant_conversations
from components.context_window.token_estimator import estimator_for

CHATS = assistant_conversations()
TOKENS = estimator_for("gpt-4o")
STOP = set(
    "a an the of to in on at for with by from and or but is are was were be been do does did has have had how what "
    "when where which who whom why whose this that these those it its they them their he she his her him i me my "
    "you your we our after before about into than then there not no now so got get".split()
)
DATED = re.compile(r"^\W*(?:[A-Za-z]+,? )?(?:date: )?(\d{4}-\d\d-\d\d|\d{1,2} [A-Z][a-z]+ \d{4})", re.IGNORECASE)
"""A session's opening line: "[Mon 8 January 2024]", "Session date: 2024-01-15", "Monday 8 April 2024",
"— 12 Mar 2024 —"."""


def _asked(at: int) -> list[Asked]:
    return [q for q in CHATS[at].questions if isinstance(q, Asked)]


def _day(content: str) -> dt.date | None:
    found = DATED.match(content)
    if not found:
        return None
    text = found.group(1)
    for form in ("%Y-%m-%d", "%d %B %Y", "%d %b %Y"):
        try:
            return dt.datetime.strptime(text, form).date()
        except ValueError:
            continue
    return None


def _words(text: str) -> set[str]:
    """Content words cut to a crude stem, so "injury" meets "injured" and "visit" meets "visiting"."""
    words = re.findall(r"[a-z][a-z'-]+", text.lower())
    return {re.sub(r"(?:'s|s|es|ing|ed|y|ies)$", "", w)[:5] for w in words if w not in STOP}


def test_a_seed_writes_the_same_chats_and_another_seed_other_ones() -> None:
    again = assistant_conversations()
    assert [c.messages for c in again] == [c.messages for c in CHATS]
    assert [c.questions for c in again] == [c.questions for c in CHATS]
    assert [c.messages for c in assistant_conversations(seed=1)] != [c.messages for c in CHATS]


def test_months_of_sessions_with_an_assistant_that_answers_at_length() -> None:
    assert len(CHATS) == 4
    for chat in CHATS:
        roles = [m["role"] for m in chat.messages]
        assert roles == ["user", "assistant"] * (len(roles) // 2)
        assert not any(re.match(r"(User|Assistant|Me|AI):", m["content"]) for m in chat.messages)  # no speakers
        days = [d for m in chat.messages if m["role"] == "user" and (d := _day(m["content"]))]
        assert 56 <= len(days) <= 70 and days == sorted(days) and (days[-1] - days[0]).days >= 120
        counts = [TOKENS.count(m["content"]) for m in chat.messages]
        assert 60_000 <= sum(counts) <= 120_000, chat.name
        answers = [n for n, m in zip(counts, chat.messages, strict=True) if m["role"] == "assistant"]
        requests = [n for n, m in zip(counts, chat.messages, strict=True) if m["role"] == "user"]
        assert 150 <= median(answers) <= 600 and max(answers) <= 600
        assert 20 <= median(requests) <= 150 and max(requests) <= 150
    assert {q.kind for at in range(len(CHATS)) for q in _asked(at)} == set(KINDS)


@pytest.mark.parametrize("at", range(4))
def test_each_evidence_message_holds_its_part_of_the_answer(at: int) -> None:
    messages = CHATS[at].messages
    said = " ".join(m["content"].lower() for m in messages)
    for question in _asked(at):
        if question.kind == "unanswerable":
            assert not question.evidence, question.text
            assert question.keys and not any(k.lower() in said for k in question.keys), question.text  # never raised
            continue
        if question.kind == "missing_detail":
            assert not question.evidence and question.keys, question.text
            continue
        assert len(question.keys) == len(question.evidence) > 0, question.text
        for position, key in zip(question.evidence, question.keys, strict=True):
            assert key.lower() in messages[position]["content"].lower(), (question.text, position, key)
        role = "assistant" if question.kind == "assistant_fact" else "user"
        assert all(messages[i]["role"] == role for i in question.evidence), question.text
        if question.kind in ("multi_session", "counting"):
            sessions = {_session_of(messages, i) for i in question.evidence}
            assert len(sessions) == len(question.evidence), question.text


def _session_of(messages: list[dict[str, str]], at: int) -> dt.date:
    return next(d for i in range(at, -1, -1) if (d := _day(messages[i]["content"])))


def test_a_latest_value_is_told_after_the_value_it_replaces() -> None:
    """The old value (a distractor sharing the topic's words) comes earlier in the chat than the labelled one."""
    replaced = {"Quillmark": "Fernway", "Sable": "Pistachio", "Elm Row": "Harbour Street", "68": "72 kg",
                "B1": "A2", "Skoda Fabia": "Corolla", "60": "45 euros", "Rotterdam": "Ghent"}  # fmt: skip
    for at in range(len(CHATS)):
        messages = [m["content"] for m in CHATS[at].messages]
        for question in (q for q in _asked(at) if q.kind == "latest"):
            old = replaced[question.keys[0]]
            first = next(i for i, m in enumerate(messages) if old in m and CHATS[at].messages[i]["role"] == "user")
            assert first < question.evidence[0], question.text


def test_paraphrased_questions_share_no_content_word_with_their_evidence() -> None:
    for at in range(len(CHATS)):
        for question in (q for q in _asked(at) if q.kind == "paraphrased"):
            for position in question.evidence:
                shared = _words(question.text) & _words(CHATS[at].messages[position]["content"])
                assert not shared, (question.text, shared)


def test_a_time_question_answers_with_the_day_its_evidence_session_opens_with() -> None:
    """The session's date, or the day "yesterday" / "last Tuesday" names from it; an order question's evidence is
    in the order its answer says."""
    for at in range(len(CHATS)):
        messages = CHATS[at].messages
        for question in (q for q in _asked(at) if q.kind == "temporal"):
            if question.answer in ("before", "after"):
                first, second = question.evidence
                assert (first < second) == (question.answer == "after"), question.text
                continue
            told = question.evidence[0]
            session = _session_of(messages, told)
            text = messages[told]["content"].lower()
            if "last week" in text:
                assert question.answer == f"the week before {session}", question.text
                continue
            answer = dt.date.fromisoformat(question.answer)
            if "yesterday" in text:
                assert answer == session - dt.timedelta(days=1), question.text
            elif "last tuesday" in text:
                assert answer.weekday() == 1 and 1 <= (session - answer).days <= 7, question.text
            else:
                assert answer == session, question.text


DETAIL = {
    "How much": re.compile(r"[£$€]|\d|\b(?:euros?|pounds?|quid|dollars?|grand|hundred|thousand|pence|cents?)\b", re.I),
    "What colour": re.compile(
        r"\b(?:red|orange|yellow|green|blue|purple|pink|brown|black|white|gr[ae]y|silver|gold|cream|beige|navy)\b", re.I
    ),
}
"""What would give the detail a ``missing_detail`` question asks for, written apart from recall's ``answer_types``."""


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_missing_detail_is_raised_and_never_given_in_any_message_that_raises_it(seed: int) -> None:
    """The dev set of details never given (session 50): the thing asked about is in the chat, and no message that
    names it holds a figure (for an amount; the session's dated line aside) or a colour word (for a colour)."""
    chats = CHATS if seed == 0 else assistant_conversations(seed=seed)
    asked = [(chat, q) for chat in chats for q in chat.questions if q.kind == "missing_detail"]
    assert len(asked) >= 6
    for chat, question in asked:
        detail = next(pattern for opening, pattern in DETAIL.items() if question.text.startswith(opening))
        raising = [m["content"] for m in chat.messages if any(k.lower() in m["content"].lower() for k in question.keys)]
        assert raising, question.text
        assert not any(detail.search(DATED.sub("", text, count=1)) for text in raising), question.text
