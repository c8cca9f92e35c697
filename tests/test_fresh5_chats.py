"""bench/fresh5_chats.py: the sixth set is the same for a seed, each chat a run of stamped sessions moving forward in
time; each question's evidence holds its answer (a time answer is the day its words point at from the session's
stamp), the questions nothing answers have none, and most answerable questions share no word but a name with their
evidence (the set's point: asked afterwards, in a third person's words)."""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import re
from collections import Counter

import pytest

from bench.fresh5_chats import KINDS, NOTHING, PAIRS, WEEKDAYS, Asked, chatter, fresh5_conversations, reply
from tests.support import (
    apart_from_evidence,
    content_words,
    evidence_in_range,
    speaker_and_words,
    stamped_sessions,
    written_from_a_seed,
)

SEEDS = (0, 1, 2)
CHATS = {seed: fresh5_conversations(seed=seed) for seed in SEEDS}
STAMPS = {  # each chat's session heading, read back with strptime (not with the writer's own format)
    "teodor_ffion": (re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d)\]$"), "%Y-%m-%d %H:%M"),
    "amara_lewin": (re.compile(r"^--- (\w{3} \d\d \w{3} \d{4}, \d\d:\d\d) ---$"), "%a %d %b %Y, %H:%M"),
    "baptiste_yusra": (re.compile(r"^(\d\d/\d\d/\d{4} at \d\d:\d\d)$"), "%d/%m/%Y at %H:%M"),
}


def _asked(seed: int, at: int) -> list[Asked]:
    return [q for q in CHATS[seed][at].questions if isinstance(q, Asked)]


@functools.cache
def _sessions(seed: int, at: int) -> list[tuple[dt.datetime, list[int]]]:
    """Each session's stamp and its messages, found by the heading on a message's first line."""
    return stamped_sessions(CHATS[seed][at].messages, *STAMPS[PAIRS[at].name])


def test_a_seed_writes_the_same_chats_and_another_seed_other_ones() -> None:
    written_from_a_seed(lambda seed: fresh5_conversations(seed=seed))


@pytest.mark.parametrize("seed", SEEDS)
def test_two_people_over_months_of_stamped_sessions(seed: int) -> None:
    for at, chat in enumerate(CHATS[seed]):
        sessions = _sessions(seed, at)
        assert 20 <= len(sessions) <= 35 and sessions[0][1][0] == 0
        stamps = [when for when, _ in sessions]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)  # strictly later each time
        assert 60 <= (stamps[-1] - stamps[0]).days <= 365  # months
        assert 400 <= len(chat.messages) <= 700
        assert {speaker_and_words(m["content"])[0] for m in chat.messages} == set(PAIRS[at].names)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_kind_asked_and_evidence_ids_exist(seed: int) -> None:
    assert {q.kind for at in range(len(PAIRS)) for q in _asked(seed, at)} == set(KINDS)
    for at, chat in enumerate(CHATS[seed]):
        asked = _asked(seed, at)
        assert 25 <= len(asked) <= 40
        evidence_in_range(asked, len(chat.messages), NOTHING)


@pytest.mark.parametrize(("seed", "at"), list(itertools.product(SEEDS, range(len(PAIRS)))))
def test_evidence_holds_its_words_and_nothing_answers_the_rest(seed: int, at: int) -> None:
    messages = CHATS[seed][at].messages
    lowered = [m["content"].lower() for m in messages]
    for question in _asked(seed, at):
        keys = [k.lower() for k in question.keys]
        about = next(name for name in PAIRS[at].names if name in question.text)
        if question.kind in ("unanswerable", "missing_detail"):
            assert not [k for k in keys if any(k in m for m in lowered)], question.text  # never said
        elif question.kind == "wrong_speaker":  # said, but only by the one the question is not about
            said_by = {
                speaker_and_words(m["content"])[0] for m, low in zip(messages, lowered, strict=True) if keys[0] in low
            }
            assert said_by and about not in said_by, question.text
        elif question.kind == "counting":  # each time told by the one asked about
            assert int(question.answer) == len(question.evidence) >= 2, question.text
            for i in question.evidence:
                assert any(k in lowered[i] for k in keys) and speaker_and_words(messages[i]["content"])[0] == about
        else:
            told = " ".join(lowered[i] for i in question.evidence)
            assert all(k in told for k in keys), question.text
            assert all(any(k in lowered[i] for k in keys) for i in question.evidence), question.text  # none idle
            assert {speaker_and_words(messages[i]["content"])[0] for i in question.evidence} == {about}, question.text


@pytest.mark.parametrize("seed", SEEDS)
def test_most_questions_share_no_word_but_a_name_with_their_evidence(seed: int) -> None:
    """The set's point: at least 70% of the answerable questions share no content word with their evidence."""
    clean, total = apart_from_evidence(CHATS[seed], [pair.names for pair in PAIRS], NOTHING)
    assert clean >= 0.7 * total, (clean, total)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_question_word_is_said_in_many_messages_not_only_the_evidence(seed: int) -> None:
    """The small talk shares the questions' everyday words: most questions have a word that many other messages
    say (five or more), so matching words alone does not find the evidence."""
    for at, chat in enumerate(CHATS[seed]):
        words = [content_words(speaker_and_words(m["content"])[1]) for m in chat.messages]
        names = {n.lower() for n in PAIRS[at].names}
        asked = [q for q in _asked(seed, at) if q.kind not in NOTHING]
        crowded = [
            q for q in asked if any(sum(w in said for said in words) >= 5 for w in content_words(q.text) - names)
        ]
        assert len(crowded) >= 0.5 * len(asked), [q.text for q in asked if q not in crowded]


def test_small_talk_is_composed_not_a_stock() -> None:
    """Long small talk rarely repeats: of many composed messages of three or more pieces, nearly all are new."""
    import random

    rng = random.Random(5)
    lines = [chatter(rng, rng.randint(3, 6)) for _ in range(2000)]
    assert len(set(lines)) >= 0.99 * len(lines)
    for chat in CHATS[0]:
        repeats = Counter(speaker_and_words(m["content"])[1] for m in chat.messages)
        assert not [line for line, n in repeats.items() if n > 1 and len(line.split()) >= 12]


def _daysaid(text: str, day: dt.date) -> dt.date:
    """The day a message's words point at, walking back from its session's day (an oracle apart from the writer)."""
    low = text.lower()
    back = [day - dt.timedelta(days=n) for n in range(1, 15)]
    if "the day before yesterday" in low:
        return back[1]
    if "yesterday" in low:
        return back[0]
    if "a fortnight ago" in low:
        return back[13]
    if "a week ago" in low:
        return back[6]
    named = [w for w in WEEKDAYS if re.search(rf"\b{w}\b", low)]
    assert len(named) == 1, text
    last = next(d for d in back if d.strftime("%A").lower() == named[0])
    return last - dt.timedelta(days=7) if f"{named[0]} before last" in low else last


@pytest.mark.parametrize(("seed", "at"), list(itertools.product(SEEDS, range(len(PAIRS)))))
def test_a_time_answer_is_the_day_its_evidence_points_at_from_the_session_stamp(seed: int, at: int) -> None:
    session_of = {i: when.date() for when, held in _sessions(seed, at) for i in held}
    messages = CHATS[seed][at].messages
    for question in _asked(seed, at):
        if question.kind == "temporal":
            (i,) = question.evidence
            day = _daysaid(speaker_and_words(messages[i]["content"])[1], session_of[i])
            assert dt.datetime.strptime(question.answer, "%d %B %Y").date() == day, question.text


@pytest.mark.parametrize(("seed", "at"), list(itertools.product(SEEDS, range(len(PAIRS)))))
def test_hops_counts_and_updates_come_from_different_sessions(seed: int, at: int) -> None:
    session_of = {i: n for n, (_, held) in enumerate(_sessions(seed, at)) for i in held}
    messages = CHATS[seed][at].messages
    for question in _asked(seed, at):
        if question.kind in ("multi_hop", "counting"):
            assert len({session_of[i] for i in question.evidence}) == len(question.evidence), question.text
        if question.kind == "latest":  # the last word: earlier sessions said other values
            (i,) = question.evidence
            assert question.answer in messages[i]["content"]
            later = (speaker_and_words(m["content"])[1] for m in messages[i + 1 :])
            assert not any(re.search(rf"(?<![\d,]){question.answer}(?![\d,])", m) for m in later), question.text


def test_small_talk_never_places_anything_in_time() -> None:
    """Only temporal evidence says "yesterday" or a weekday, so a time question's day is its evidence's own."""
    import random

    rng = random.Random(7)
    said = " ".join([chatter(rng, 8) for _ in range(3000)] + [reply(rng) for _ in range(3000)]).lower()
    assert not [w for w in (*WEEKDAYS, "yesterday", "today", "tonight", "fortnight", "ago") if w in said]


def test_the_bench_reports_every_kind_nothing_answers_apart_from_recall() -> None:
    from bench.conversation_bench import NOTHING as REPORTED_APART

    assert set(NOTHING) <= set(REPORTED_APART)
