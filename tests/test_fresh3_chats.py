"""bench/fresh3_chats.py: the fourth held-out set is the same for a seed, long enough that a 16K window cannot hold a
chat, and each question's labels point at messages that hold its answer (word by word, and against the session dates
the chats write); the questions nothing answers use words the chat never says."""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import re

import pytest

from bench.fresh3_chats import (
    DRIFT,
    DRIFT_BACK,
    KINDS,
    LINKS,
    NOTHING,
    OPENERS,
    PAIRS,
    REACTIONS,
    REPLIES,
    SIGNOFFS,
    WEEKDAYS,
    Asked,
    Pair,
    fresh3_conversations,
)

SEEDS = (0, 1, 2)
CHATS = {seed: fresh3_conversations(seed=seed) for seed in SEEDS}
STOP = set(
    "a an the of to in on at for with by from and or but is are was were be been do does did has have had how what "
    "when where which who whom why whose this that these those it its they them their he she his her him i me my "
    "you your we our after before about into than then there not no now so since".split()
)
RELATIVE = ("yesterday", "last night", "fortnight", *(f"last {w}" for w in WEEKDAYS))


def _words(text: str) -> set[str]:
    """Content words cut to a crude stem (plurals, -ing, -ed), so "buyer" meets "buy" no more than it should."""
    words = re.findall(r"[a-z][a-z'-]+", text.lower())
    return {re.sub(r"(?:'s|s|es|ing|ed)$", "", w)[:6] for w in words if w not in STOP}


def _asked(seed: int, at: int) -> list[Asked]:
    return [q for q in CHATS[seed][at].questions if isinstance(q, Asked)]


def _session_day(pair: Pair, content: str) -> dt.date | None:
    for offset in range(400):
        day = pair.start + dt.timedelta(days=offset)
        if pair.dated(day) in content.split("\n", 1)[0]:
            return day
    return None


@functools.cache  # read by most tests, and a chat's sessions are found by parsing each message for a date
def _sessions(seed: int, at: int) -> list[tuple[dt.date, list[int]]]:
    messages = CHATS[seed][at].messages
    openers = [(i, d) for i, m in enumerate(messages) if (d := _session_day(PAIRS[at], m["content"]))]
    bounds = [*(i for i, _ in openers), len(messages)]
    return [(d, list(range(a, b))) for (a, d), b in zip(openers, bounds[1:], strict=True)]


def test_a_seed_writes_the_same_chats_and_another_seed_other_ones() -> None:
    again = fresh3_conversations(seed=0)
    assert [c.messages for c in again] == [c.messages for c in CHATS[0]]
    assert [c.questions for c in again] == [c.questions for c in CHATS[0]]
    assert [c.messages for c in CHATS[1]] != [c.messages for c in CHATS[0]]


@pytest.mark.parametrize("seed", SEEDS)
def test_long_dated_chats_of_two_people_asking_every_kind(seed: int) -> None:
    assert {q.kind for at in range(len(PAIRS)) for q in _asked(seed, at)} == set(KINDS)
    for at, chat in enumerate(CHATS[seed]):
        sessions = _sessions(seed, at)
        assert 27 <= len(sessions) <= 33 and sessions[0][1][0] == 0
        assert 120 <= (sessions[-1][0] - sessions[0][0]).days <= 310  # four to ten months
        assert all(18 <= len(held) <= 40 for _, held in sessions)
        words = [len(m["content"].split()) for m in chat.messages]
        assert sum(words) >= 12_000  # ~18-23K tokens: more than a 16K window holds
        assert min(words) <= 2 and max(words) >= 130  # one word, and a run-on paragraph
        assert 24 <= len(_asked(seed, at)) <= 30


@pytest.mark.parametrize(("seed", "at"), list(itertools.product(SEEDS, range(len(PAIRS)))))
def test_each_evidence_message_holds_its_part_of_the_answer(seed: int, at: int) -> None:
    messages = [m["content"].lower() for m in CHATS[seed][at].messages]
    said = {w for m in messages for w in re.findall(r"[a-z]+", m)}
    for question in _asked(seed, at):
        if question.kind in NOTHING:
            assert not question.evidence, question.text
            assert not said & {k.lower() for k in question.keys}, question.text  # never said
            continue
        assert len(question.keys) == len(question.evidence) > 0, question.text
        for position, key in zip(question.evidence, question.keys, strict=True):
            assert key.lower() in messages[position], (question.text, position, key)


@pytest.mark.parametrize("seed", SEEDS)
def test_paraphrased_questions_share_no_content_word_with_their_evidence(seed: int) -> None:
    for at, pair in enumerate(PAIRS):
        names = _words(" ".join(pair.names))
        for question in _asked(seed, at):
            if question.kind == "paraphrased":
                asked = _words(question.text) - names
                for position in question.evidence:
                    content = CHATS[seed][at].messages[position]["content"]
                    assert not asked & _words(content.split(": ", 1)[1]), question.text


@pytest.mark.parametrize("seed", SEEDS)
def test_hops_and_counts_come_from_different_sessions_and_swaps_from_the_other_person(seed: int) -> None:
    for at, pair in enumerate(PAIRS):
        session_of = {i: n for n, (_, held) in enumerate(_sessions(seed, at)) for i in held}
        messages = CHATS[seed][at].messages
        for question in _asked(seed, at):
            if question.kind in ("multi_hop", "counting", "summary"):
                assert len({session_of[i] for i in question.evidence}) == len(question.evidence), question.text
            if question.kind == "swapped":
                asked_of = next(name for name in pair.names if name in question.text)
                assert all(not messages[i]["content"].split("\n")[-1].startswith(asked_of) for i in question.evidence)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_thread_recurs_over_many_sessions(seed: int) -> None:
    """Each person's main thread is talked about in at least eight sessions, so its word alone finds no one."""
    topics = {"nell_tomasz": ("job", "house"), "bex_sunil": ("course", "job"), "ify_grant": ("lisbon", "supper club")}
    for at, pair in enumerate(PAIRS):
        for topic in topics[pair.name]:
            held = [
                s for _, s in _sessions(seed, at) if any(topic in CHATS[seed][at].messages[i]["content"] for i in s)
            ]
            assert len(held) >= 8, (pair.name, topic, len(held))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_time_question_answers_with_the_day_its_evidence_session_names(seed: int) -> None:
    """The date the chat writes on the evidence's session, or the day "yesterday" / "last Thursday" / "in a
    fortnight" points at; no other message in that session says a relative day."""
    for at in range(len(PAIRS)):
        messages = CHATS[seed][at].messages
        for day, held in _sessions(seed, at):
            for question in _asked(seed, at):
                if question.kind != "temporal" or question.evidence[-1] not in held:
                    continue
                told = messages[question.evidence[-1]]["content"].lower()
                answer = dt.datetime.strptime(question.answer, "%d %B %Y").date()
                named = [w for w in WEEKDAYS if f"last {w}" in told]
                if "yesterday" in told or "last night" in told:
                    assert answer == day - dt.timedelta(days=1), question.text
                elif "in a fortnight" in told:
                    assert answer == day + dt.timedelta(days=14), question.text
                elif named:
                    assert WEEKDAYS[answer.weekday()] == named[0] and 1 <= (day - answer).days <= 7, question.text
                else:
                    assert answer == day, question.text


def test_small_talk_never_says_a_relative_day() -> None:
    """Only the news says "yesterday" or "last thursday", so a time question's day is its evidence's own."""
    stock = [*OPENERS, *REPLIES, *DRIFT, *DRIFT_BACK, *REACTIONS, *LINKS, *SIGNOFFS]
    for pair in PAIRS:
        stock += [line for t in pair.threads for line in (*t.chatter, *t.asks)]
        stock += [line for lines in (*pair.life, *pair.photos, *pair.voice) for line in lines]
    assert not [line for line in stock if any(r in line.lower() for r in RELATIVE)]
