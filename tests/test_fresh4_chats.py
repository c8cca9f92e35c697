"""bench/fresh4_chats.py: the fifth held-out set is the same for a seed, each chat a run of sessions whose export
stamps move forward in time, and each question's labels point at messages that hold its answer (word by word, and
against the stamp of the session they were said in); the questions nothing answers have no evidence and ask about
words the chat never says, or that only the other person says."""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import re

import pytest

from bench.fresh4_chats import (
    CLOSERS,
    KINDS,
    LINKS,
    NOTHING,
    OPENER_BACK,
    OPENERS,
    PAIRS,
    SMALL,
    SMALL_BACK,
    WEEKDAYS,
    Asked,
    fresh4_conversations,
)
from tests.support import stamped_sessions

SEEDS = (0, 1, 2)
CHATS = {seed: fresh4_conversations(seed=seed) for seed in SEEDS}
STAMPS = {  # each chat's export heading, read back with strptime (not with the writer's own format)
    "ilse_dara": (re.compile(r"^\[(\w{3} \d{1,2} \w{3} \d{4}, \d\d:\d\d)\]$"), "%a %d %b %Y, %H:%M"),
    "wen_callum": (re.compile(r"^── (\d\d/\d\d/\d{4} \d\d:\d\d) ──$"), "%d/%m/%Y %H:%M"),
    "malin_joss": (re.compile(r"^(\w+, \w+ \d{1,2}, \d{4} at \d{1,2}:\d\d [AP]M)$"), "%A, %B %d, %Y at %I:%M %p"),
}


def _chats(seed: int) -> list[tuple[int, object]]:
    return list(enumerate(CHATS[seed]))


@functools.cache
def _sessions(seed: int, at: int) -> list[tuple[dt.datetime, list[int]]]:
    """Each session's stamp and its messages, found by the heading on a message's first line."""
    return stamped_sessions(CHATS[seed][at].messages, *STAMPS[PAIRS[at].name])


def _asked(seed: int, at: int) -> list[Asked]:
    return [q for q in CHATS[seed][at].questions if isinstance(q, Asked)]


def _speaker(content: str) -> str:
    """The name a message is sent under: after the heading line and the "(21:09)" clock, before the colon."""
    line = content.split("\n")[-1] if "\n" in content.split(": ", 1)[0] else content
    return re.sub(r"^\(\d\d:\d\d\) ", "", line).split(":", 1)[0]


def test_a_seed_writes_the_same_chats_and_another_seed_other_ones() -> None:
    again = fresh4_conversations(seed=0)
    assert [c.messages for c in again] == [c.messages for c in CHATS[0]]
    assert [c.questions for c in again] == [c.questions for c in CHATS[0]]
    assert [c.messages for c in CHATS[1]] != [c.messages for c in CHATS[0]]


@pytest.mark.parametrize("seed", SEEDS)
def test_long_stamped_chats_whose_sessions_move_forward_in_time(seed: int) -> None:
    for at, chat in enumerate(CHATS[seed]):
        sessions = _sessions(seed, at)
        assert 20 <= len(sessions) <= 35 and sessions[0][1][0] == 0
        stamps = [when for when, _ in sessions]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)  # strictly later each time
        assert 75 <= (stamps[-1] - stamps[0]).days <= 300  # months, not weeks
        assert all(15 <= len(held) <= 40 for _, held in sessions)
        assert 400 <= len(chat.messages) <= 700
        words = [len(m["content"].split("\n")[-1].split(": ", 1)[1].split()) for m in chat.messages]
        assert sum(words) >= 8_000  # ~15-25K tokens: more than a 16K window's history room, most seeds
        assert min(words) <= 2 and max(words) >= 130  # one word, and a run-on paragraph
        speakers = {_speaker(m["content"]) for m in chat.messages}
        assert speakers == set(PAIRS[at].names)
        if PAIRS[at].clock:  # every message stamped with its time, within its session's hour
            assert all(re.search(r"^\(\d\d:\d\d\) ", m["content"].split("\n")[-1]) for m in chat.messages)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_kind_asked_and_evidence_ids_exist(seed: int) -> None:
    assert {q.kind for at, _ in _chats(seed) for q in _asked(seed, at)} == set(KINDS)
    for at, chat in _chats(seed):
        asked = _asked(seed, at)
        assert 25 <= len(asked) <= 40
        for question in asked:
            assert all(0 <= i < len(chat.messages) for i in question.evidence), question.text  # type: ignore[attr-defined]
            if question.kind in NOTHING:
                assert question.evidence == (), question.text
            else:
                assert question.evidence and len(set(question.evidence)) == len(question.evidence), question.text


@pytest.mark.parametrize(("seed", "at"), list(itertools.product(SEEDS, range(len(PAIRS)))))
def test_each_evidence_message_holds_its_part_and_nothing_answers_the_rest(seed: int, at: int) -> None:
    messages = CHATS[seed][at].messages
    lowered = [m["content"].lower() for m in messages]
    for question in _asked(seed, at):
        keys = [k.lower() for k in question.keys]
        if question.kind in ("unanswerable", "missing_detail"):
            assert not [k for k in keys if any(k in m for m in lowered)], question.text  # never said
        elif question.kind == "wrong_speaker":  # said, but only by the one the question is not about
            about = next(name for name in PAIRS[at].names if name in question.text)
            said_by = {
                _speaker(m["content"]) for m, low in zip(messages, lowered, strict=True) if any(k in low for k in keys)
            }
            assert said_by and about not in said_by, question.text
        else:
            assert len(keys) == len(question.evidence), question.text
            for position, key in zip(question.evidence, keys, strict=True):
                assert key in lowered[position], (question.text, position, key)


def _day_said(text: str, day: dt.date) -> dt.date:
    """The day a message's own words point at, found by walking back from its session's day (an oracle apart from
    the writer's arithmetic)."""
    low = text.lower()
    back = [day - dt.timedelta(days=n) for n in range(1, 15)]
    if "the day before yesterday" in low:
        return back[1]
    named = [w for w in WEEKDAYS if w in low]
    if named:
        assert len(named) == 1, text
        return next(d for d in back if d.strftime("%A").lower() == named[0])
    if "yesterday" in low or "last night" in low:
        return back[0]
    if "last weekend" in low:
        return next(d for d in back if d.weekday() == 5 and d + dt.timedelta(days=1) < day)
    return day


@pytest.mark.parametrize(("seed", "at"), list(itertools.product(SEEDS, range(len(PAIRS)))))
def test_a_time_answer_is_the_day_its_evidence_points_at_from_the_session_stamp(seed: int, at: int) -> None:
    session_of = {i: when.date() for when, held in _sessions(seed, at) for i in held}
    messages = CHATS[seed][at].messages
    for question in _asked(seed, at):
        if question.kind != "temporal":
            continue
        days = [_day_said(messages[i]["content"], session_of[i]) for i in question.evidence]
        if question.answer.endswith(" days"):  # how long after
            assert question.answer == f"{(days[-1] - days[0]).days} days" and days[-1] > days[0], question.text
        else:  # the last evidence message has the final word (a correction after what it corrects)
            assert dt.datetime.strptime(question.answer, "%d %B %Y").date() == days[-1], question.text


@pytest.mark.parametrize("seed", SEEDS)
def test_hops_counts_and_callbacks_come_from_different_sessions(seed: int) -> None:
    for at, _ in _chats(seed):
        session_of = {i: n for n, (_, held) in enumerate(_sessions(seed, at)) for i in held}
        for question in _asked(seed, at):
            if question.kind in ("multi_hop", "counting", "callback"):
                assert len({session_of[i] for i in question.evidence}) == len(question.evidence), question.text
            if question.kind == "latest":  # the last word: a later session says the same thing no more
                assert len(question.evidence) == 1, question.text


def test_small_talk_never_places_anything_in_time() -> None:
    """Only the news says "yesterday" or a weekday, so a time question's day is its evidence's own."""
    stock = [*OPENERS, *OPENER_BACK, *SMALL, *SMALL_BACK, *LINKS, *CLOSERS]
    for pair in PAIRS:
        stock += [line for t in pair.threads for line in (*t.chatter, *t.asks)]
        stock += [line for lines in (*pair.life, *pair.images) for line in lines]
        stock += [line.text for line in pair.asides]
    relative = ("yesterday", "last night", "this morning", "today", "tonight", "weekend", *WEEKDAYS)
    assert not [line for line in stock if any(r in line.lower() for r in relative)]


def test_the_bench_reports_every_kind_nothing_answers_apart_from_recall() -> None:
    """A question with no evidence counts as held; the bench must put fresh4's three such kinds (wrong_speaker is
    new) in its abstention table, not in the recall columns."""
    from bench.conversation_bench import NOTHING as REPORTED_APART

    assert set(NOTHING) <= set(REPORTED_APART)
    assert set(KINDS) - set(NOTHING) == {
        "single_hop",
        "multi_hop",
        "temporal",
        "counting",
        "latest",
        "inference",
        "callback",
    }
