"""bench/fresh8_chats.py: the ninth set checked against its own oracles. Each chat is one user and an assistant over
months of dated sessions, most tokens the assistant's long answers; each question's evidence is the user's request
(or, for what the assistant said, its answer) and holds what the question asks, which no other message says but the
answer echoing it; a changed fact's newest state is its last mention; a time answer is what its evidence's relative
phrase points at from the session's date (worked out here by walking the calendar, apart from the writer); what is
never said is never said; no message is said twice."""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import re
from collections import Counter

import pytest

from bench.fresh8_chats import KINDS, NOTHING, USERS, Asked, fresh8_conversations
from components.context_window.base import Message
from components.context_window.token_estimator import estimator_for
from tests.support import content_words, evidence_in_range, stamped_sessions, written_from_a_seed

SEEDS = (0, 1)
CHATS = {seed: fresh8_conversations(seed=seed) for seed in SEEDS}
TOKENS = estimator_for("gpt-4o")
STAMPS = {  # each user's session date, read back with strptime (not with the writer's own format)
    "maren": (re.compile(r"^Date: (\d{1,2} \w+ \d{4})$"), "%d %B %Y"),
    "dev": (re.compile(r"^\[(\w+, \w+ \d{1,2}, \d{4})\] "), "%A, %B %d, %Y"),
    "claire": (re.compile(r"^\((\d{4}-\d\d-\d\d)\) "), "%Y-%m-%d"),
}
PHRASE = re.compile(
    r"\b(the day before yesterday|yesterday|today|three days ago|a week ago|two weeks ago|"
    r"last (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b"
)
"""The relative phrases that date a told event from its session."""
CASES = list(itertools.product(SEEDS, range(len(USERS))))


def _asked(seed: int, at: int) -> list[Asked]:
    return [q for q in CHATS[seed][at].questions if isinstance(q, Asked)]


@functools.cache
def _texts(seed: int, at: int) -> list[str]:
    return [m["content"] for m in CHATS[seed][at].messages]


@functools.cache
def _sessions(seed: int, at: int) -> list[tuple[dt.datetime, list[int]]]:
    return stamped_sessions(CHATS[seed][at].messages, *STAMPS[USERS[at].name])


@functools.cache
def _session_of(seed: int, at: int) -> dict[int, int]:
    return {i: n for n, (_, held) in enumerate(_sessions(seed, at)) for i in held}


def _holds(text: str, key: str) -> bool:
    """``key`` said as words (a plural allowed), not inside another word."""
    return re.search(rf"(?<![\w-]){re.escape(key.lower())}(?:s|es)?(?![\w-])", text.lower()) is not None


def _holding(seed: int, at: int, key: str) -> set[int]:
    return {i for i, text in enumerate(_texts(seed, at)) if _holds(text, key)}


def _echoing(seed: int, at: int, i: int) -> set[int]:
    """Message ``i`` and the assistant's answers after it in its session (they may repeat the user's words)."""
    session = _sessions(seed, at)[_session_of(seed, at)[i]][1]
    return {i} | {j for j in session if j > i and _role(seed, at, j) == "assistant"}


def _role(seed: int, at: int, i: int) -> str:
    return CHATS[seed][at].messages[i]["role"]


def test_a_seed_writes_the_same_chats_and_another_seed_other_ones() -> None:
    written_from_a_seed(lambda seed: fresh8_conversations(seed=seed))


@pytest.mark.parametrize(("seed", "at"), CASES)
def test_a_user_over_months_of_dated_sessions(seed: int, at: int) -> None:
    chat = CHATS[seed][at]
    sessions = _sessions(seed, at)
    assert 40 <= len(sessions) <= 70 and sessions[0][1][0] == 0
    stamps = [when for when, _ in sessions]
    assert all(a < b for a, b in itertools.pairwise(stamps))
    assert 120 <= (stamps[-1] - stamps[0]).days <= 400  # months
    assert all(chat.messages[held[0]]["role"] == "user" for _, held in sessions)  # the user opens each session
    assert 300 <= len(chat.messages) <= 700
    assert [m["role"] for m in chat.messages] == ["user", "assistant"] * (len(chat.messages) // 2)


@pytest.mark.parametrize(("seed", "at"), CASES)
def test_most_tokens_are_the_assistants_long_answers(seed: int, at: int) -> None:
    costs = [TOKENS.count_message(Message(m["role"], m["content"])) for m in CHATS[seed][at].messages]  # type: ignore[arg-type]
    assert 80_000 <= sum(costs) <= 150_000
    answers = [c for c, m in zip(costs, CHATS[seed][at].messages, strict=True) if m["role"] == "assistant"]
    requests = [c for c, m in zip(costs, CHATS[seed][at].messages, strict=True) if m["role"] == "user"]
    assert sum(answers) >= 0.85 * sum(costs)
    assert sum(150 <= c <= 600 for c in answers) >= 0.8 * len(answers) and max(answers) <= 750
    assert max(requests) <= 150


@pytest.mark.parametrize(("seed", "at"), CASES)
def test_no_message_is_said_twice(seed: int, at: int) -> None:
    texts = [PHRASE.sub("", t.split("\n", 1)[-1]) for t in _texts(seed, at)]  # a stamp does not make it new
    assert Counter(texts).most_common(1)[0][1] == 1


@pytest.mark.parametrize(("seed", "at"), CASES)
def test_every_kind_in_each_chat_and_evidence_in_range(seed: int, at: int) -> None:
    asked = _asked(seed, at)
    kinds = Counter(q.kind for q in asked)
    assert set(kinds) == set(KINDS) and all(3 <= n <= 8 for n in kinds.values()), kinds
    evidence_in_range(asked, len(CHATS[seed][at].messages), NOTHING)


@pytest.mark.parametrize(("seed", "at"), CASES)
def test_most_sessions_say_nothing_personal(seed: int, at: int) -> None:
    """Sessions holding no question's evidence (not even the request before an assistant_fact) are the most."""
    session_of = _session_of(seed, at)
    told = {session_of[i] for q in _asked(seed, at) for i in q.evidence}
    assert len(told) <= 0.6 * len(_sessions(seed, at))


@pytest.mark.parametrize(("seed", "at"), CASES)
def test_a_fact_is_in_its_label_and_only_there_or_in_the_answers_echoing_it(seed: int, at: int) -> None:
    for question in _asked(seed, at):
        if question.kind in ("temporal", *NOTHING):
            continue
        roles = {_role(seed, at, i) for i in question.evidence}
        assert roles == {"assistant" if question.kind == "assistant_fact" else "user"}, question.text
        keys = question.keys[-len(question.evidence) :] if question.kind == "knowledge_update" else question.keys
        for i, key in zip(question.evidence, keys, strict=True):
            assert _holds(_texts(seed, at)[i], key), (question.text, key)
        if question.kind == "assistant_fact":
            assert _holding(seed, at, question.keys[0]) == set(question.evidence), question.text
        elif question.kind in ("user_fact", "multi_session", "preference"):
            echoing = set().union(*(_echoing(seed, at, i) for i in question.evidence))
            for key in question.keys:
                assert _holding(seed, at, key) <= echoing, (question.text, key)


@pytest.mark.parametrize(("seed", "at"), CASES)
def test_a_preference_is_stated_not_asked(seed: int, at: int) -> None:
    """A preference question does not say the like or dislike its good answer rests on."""
    for question in _asked(seed, at):
        if question.kind == "preference":
            assert not any(_holds(question.text, key) for key in question.keys), question.text


@pytest.mark.parametrize(("seed", "at"), CASES)
def test_a_changed_fact_is_answered_by_its_latest_state(seed: int, at: int) -> None:
    """Each older state is said in an earlier session; the newest is said only in the evidence (and the answer
    echoing it), the last message saying any state; a question labelling two states labels the old one first."""
    session_of = _session_of(seed, at)
    for question in _asked(seed, at):
        if question.kind != "knowledge_update":
            continue
        last = question.evidence[-1]
        *earlier, newest = question.keys
        echoing = _echoing(seed, at, last)
        assert last in _holding(seed, at, newest) <= echoing, question.text
        for old in earlier:
            assert session_of[min(_holding(seed, at, old))] < session_of[last], (question.text, old)
        assert max(set().union(*(_holding(seed, at, key) for key in question.keys))) in echoing, question.text
        if len(question.evidence) == 2:
            assert _holds(_texts(seed, at)[question.evidence[0]], earlier[-1]), question.text


@pytest.mark.parametrize(("seed", "at"), CASES)
def test_multi_session_facts_come_from_different_sessions(seed: int, at: int) -> None:
    session_of = _session_of(seed, at)
    for question in _asked(seed, at):
        if question.kind == "multi_session":
            sessions = [session_of[i] for i in question.evidence]
            assert len(set(sessions)) == len(sessions) >= 2, question.text


@pytest.mark.parametrize(("seed", "at"), CASES)
def test_what_is_never_said_is_never_said(seed: int, at: int) -> None:
    for question in _asked(seed, at):
        if question.kind in NOTHING:
            assert question.keys and not any(_holding(seed, at, key) for key in question.keys), question.text


def _walk(phrase: str, day: dt.date) -> dt.date:
    """The day a reader works out from ``phrase`` said on ``day``, by walking the calendar back (apart from the
    writer)."""
    back = [day - dt.timedelta(days=n) for n in range(0, 30)]
    steps = {"today": 0, "yesterday": 1, "the day before yesterday": 2, "three days ago": 3, "a week ago": 7}
    if phrase in steps:
        return back[steps[phrase]]
    if phrase == "two weeks ago":
        return back[14]
    weekday = phrase.removeprefix("last ")
    return next(d for d in back[1:] if d.strftime("%A").lower() == weekday)


@pytest.mark.parametrize(("seed", "at"), CASES)
def test_a_time_answer_is_what_its_phrase_points_at_from_the_session_date(seed: int, at: int) -> None:
    day_of = {i: when.date() for when, held in _sessions(seed, at) for i in held}
    for question in _asked(seed, at):
        if question.kind != "temporal":
            continue
        days = []
        for i in question.evidence:
            phrases = PHRASE.findall(_texts(seed, at)[i].lower())
            assert len(phrases) == 1 and _role(seed, at, i) == "user", _texts(seed, at)[i]
            days.append(_walk(phrases[0], day_of[i]))
        if len(days) == 1:
            assert question.answer == f"{days[0]:%-d %B %Y}", question.text
        else:
            assert question.answer == f"{abs((days[1] - days[0]).days)} days", question.text


def test_the_walk_reads_weekdays_and_weeks_by_hand() -> None:
    """The oracle itself, on days worked out by hand: from Monday 3 March 2025, last Friday is 28 February, last
    Monday 24 February, two weeks ago 17 February; from Sunday 16 March, last Sunday is 9 March."""
    assert _walk("last friday", dt.date(2025, 3, 3)) == dt.date(2025, 2, 28)
    assert _walk("last monday", dt.date(2025, 3, 3)) == dt.date(2025, 2, 24)
    assert _walk("two weeks ago", dt.date(2025, 3, 3)) == dt.date(2025, 2, 17)
    assert _walk("last sunday", dt.date(2025, 3, 16)) == dt.date(2025, 3, 9)
    assert _walk("the day before yesterday", dt.date(2025, 3, 1)) == dt.date(2025, 2, 27)


@pytest.mark.parametrize("seed", SEEDS)
def test_questions_in_the_users_voice_and_mixed_styles(seed: int) -> None:
    """Every question says "my" or "I" (or asks "you" what was said); some answerable ones reuse a content word of
    their evidence, many share none."""
    shared = clean = 0
    for at, chat in enumerate(CHATS[seed]):
        for question in _asked(seed, at):
            voice = (
                r"\b(my|mine|i|me|we|our|us|you)\b"
                if question.kind == "assistant_fact"
                else r"\b(my|mine|i|me|we|our|us)\b"
            )
            assert re.search(voice, question.text.lower()), question.text
            if question.kind in NOTHING:
                continue
            evidence = " ".join(chat.messages[i]["content"] for i in question.evidence)
            if question.kind == "assistant_fact":  # the user asks about what they asked for, or what was said
                evidence += " " + " ".join(chat.messages[i - 1]["content"] for i in question.evidence)
            overlap = content_words(question.text) & content_words(evidence)
            shared += bool(overlap)
            clean += not overlap
    assert shared >= 0.25 * (shared + clean) and clean >= 0.2 * (shared + clean), (shared, clean)


def test_the_bench_reads_the_set_and_reports_its_kinds() -> None:
    from bench import abstention_bench, conversation_bench

    assert set(NOTHING) <= set(conversation_bench.NOTHING)
    assert conversation_bench.DEFAULT_COUNT["fresh8"] == "3"
    assert set(KINDS) - set(NOTHING) <= set(conversation_bench.FRESH8_KINDS)
    assert "fresh8" in abstention_bench.HELD_OUT
