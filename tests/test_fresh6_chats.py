"""bench/fresh6_chats.py: the seventh set checked against its own oracles. Each chat is two friends over months of
stamped sessions; each question's evidence is by the one asked about and holds what it asks (no other message does:
the label is the only answer), a time answer is what the evidence's relative phrase points at from its session's
stamp (worked out here by walking the calendar, apart from the writer), the questions nothing answers have no
evidence and their words are never said (wrong_speaker: only by the other one), most questions share no word but a
name with their evidence, and the small talk is composed, not a stock of lines."""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import re
from collections import Counter

import pytest

from bench.fresh6_chats import EVENTS, KINDS, NOTHING, PAIRS, Asked, fresh6_conversations
from tests.support import (
    apart_from_evidence,
    evidence_in_range,
    speaker_and_words,
    stamped_sessions,
    written_from_a_seed,
)

SEEDS = (0, 1, 2)
CHATS = {seed: fresh6_conversations(seed=seed) for seed in SEEDS}
STAMPS = {  # each chat's session heading, read back with strptime (not with the writer's own format)
    "marisol_kwame": (re.compile(r"^(\d{1,2}:\d\d [ap]m on \d{1,2} \w+, \d{4})$"), "%I:%M %p on %d %B, %Y"),
    "odile_rafferty": (re.compile(r"^~ (\w+, \d{1,2} \w+ \d{4}, \d\d:\d\d) ~$"), "%A, %d %B %Y, %H:%M"),
    "sunniva_dario": (re.compile(r"^\[(\d\d\.\d\d\.\d{4} \d\d:\d\d)\]$"), "%d.%m.%Y %H:%M"),
}
PHRASE = re.compile(
    r"\b(yesterday|last (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|last weekend|last week\b|"
    r"two weeks ago|last month|next month|next weekend|in two weeks)"
)
"""The relative phrases that date an event from its session."""


def _asked(seed: int, at: int) -> list[Asked]:
    return [q for q in CHATS[seed][at].questions if isinstance(q, Asked)]


@functools.cache
def _sessions(seed: int, at: int) -> list[tuple[dt.datetime, list[int]]]:
    return stamped_sessions(CHATS[seed][at].messages, *STAMPS[PAIRS[at].name])


def _holds(text: str, key: str) -> bool:
    """``key`` said as words (a plural allowed), not inside another word ("mini" is not in "minimal")."""
    return re.search(rf"\b{re.escape(key.lower())}(?:s|es)?\b", text.lower()) is not None


def _about(question: Asked, at: int) -> str:
    (name,) = [n for n in PAIRS[at].names if n in question.text]
    return name


def test_a_seed_writes_the_same_chats_and_another_seed_other_ones() -> None:
    written_from_a_seed(lambda seed: fresh6_conversations(seed=seed))


@pytest.mark.parametrize("seed", SEEDS)
def test_two_friends_over_months_of_stamped_sessions(seed: int) -> None:
    for at, chat in enumerate(CHATS[seed]):
        sessions = _sessions(seed, at)
        assert 20 <= len(sessions) <= 35 and sessions[0][1][0] == 0
        assert all(15 <= len(held) <= 35 for _, held in sessions), [len(held) for _, held in sessions]
        stamps = [when for when, _ in sessions]
        assert all(a.date() < b.date() for a, b in itertools.pairwise(stamps))  # a later day each time
        assert 90 <= (stamps[-1] - stamps[0]).days <= 400  # months
        assert 450 <= len(chat.messages) <= 700
        # 18-30K tokens: English chat runs ~3.6 characters a token (o200k), so 65-110K characters
        assert 65_000 <= sum(len(m["content"]) for m in chat.messages) <= 110_000
        assert {speaker_and_words(m["content"])[0] for m in chat.messages} == set(PAIRS[at].names)


@pytest.mark.parametrize("seed", SEEDS)
def test_five_to_eight_of_each_kind_a_chat_and_evidence_ids_exist(seed: int) -> None:
    for at, chat in enumerate(CHATS[seed]):
        asked = _asked(seed, at)
        assert all(5 <= n <= 8 for n in Counter(q.kind for q in asked).values())
        assert {q.kind for q in asked} == set(KINDS)
        evidence_in_range(asked, len(chat.messages), NOTHING)


@pytest.mark.parametrize(("seed", "at"), list(itertools.product(SEEDS, range(len(PAIRS)))))
def test_each_label_is_the_one_message_holding_its_fact(seed: int, at: int) -> None:
    """Evidence is said by the one asked about and holds the fact; no other message holds it (so a window without
    the labelled message cannot answer); nothing-answers questions' words are never said (or only by the other)."""
    messages = CHATS[seed][at].messages
    said = [speaker_and_words(m["content"]) for m in messages]
    for question in _asked(seed, at):
        about = _about(question, at)
        holding = {i for i, (_, words) in enumerate(said) for k in question.keys if _holds(words, k)}
        if question.kind == "unanswerable":
            assert not holding, question.text
        elif question.kind == "wrong_speaker":
            assert holding and {said[i][0] for i in holding} == {next(n for n in PAIRS[at].names if n != about)}
        else:
            assert {said[i][0] for i in question.evidence} == {about}, question.text
            assert holding <= set(question.evidence), (question.text, holding - set(question.evidence))
            if question.kind == "multi_hop" and len(question.keys) == 1:  # a chain: the name leads to the fact
                first, second = question.evidence
                assert _holds(said[second][1], question.keys[0])
                names = set(re.findall(r"\b[A-Z][a-z]+\b", said[first][1])) & set(
                    re.findall(r"\b[A-Z][a-z]+\b", said[second][1])
                )
                assert names - set(PAIRS[at].names), question.text
            else:  # each evidence message holds one of the keys
                assert all(any(_holds(said[i][1], k) for k in question.keys) for i in question.evidence)


@pytest.mark.parametrize(("seed", "at"), list(itertools.product(SEEDS, range(len(PAIRS)))))
def test_hops_and_lists_come_from_different_sessions(seed: int, at: int) -> None:
    session_of = {i: n for n, (_, held) in enumerate(_sessions(seed, at)) for i in held}
    for question in _asked(seed, at):
        if question.kind in ("multi_hop", "inference") and len(question.evidence) > 1:
            assert 2 <= len(question.evidence) <= 4
            sessions = [session_of[i] for i in question.evidence]
            assert len(set(sessions)) == len(sessions) and sessions == sorted(sessions), question.text


@pytest.mark.parametrize("seed", SEEDS)
def test_most_questions_share_no_word_but_a_name_with_their_evidence(seed: int) -> None:
    """Asked afterwards in a third person's words: at least 80% of the answerable questions share no content word
    with their evidence (names aside)."""
    clean, total = apart_from_evidence(CHATS[seed], [pair.names for pair in PAIRS], NOTHING)
    assert clean >= 0.8 * total, (clean, total)


@pytest.mark.parametrize("seed", SEEDS)
def test_an_event_is_talked_over_and_referred_back_to(seed: int) -> None:
    """The news is not alone: the friend's next message answers it, and most events are brought up again in a later
    session by one of their references ("the pottery thing"), which holds neither the detail nor a date."""
    for at, chat in enumerate(CHATS[seed]):
        said = [speaker_and_words(m["content"])[1] for m in chat.messages]
        temporal = [q for q in _asked(seed, at) if q.kind == "temporal"]
        for question in temporal:
            (i,) = question.evidence
            assert speaker_and_words(chat.messages[i + 1]["content"])[0] != _about(question, at) or (
                speaker_and_words(chat.messages[i + 2]["content"])[0] != _about(question, at)
            )
        referred = [
            i for i, words in enumerate(said) if any(r.replace("your ", "") in words for e in EVENTS for r in e.refs)
        ]
        assert len(referred) >= 20
        news = {i for i in referred if any(_holds(said[i], e.key) for e in EVENTS)}
        assert not [said[i] for i in set(referred) - news if PHRASE.search(said[i].lower())]


def _walk(phrase: str, day: dt.date) -> str:
    """What a reader works out from ``phrase`` said on ``day``, by walking the calendar (apart from the writer)."""
    days = [day + dt.timedelta(days=n) for n in range(-40, 41)]
    before = [d for d in days if d < day]
    if phrase == "yesterday":
        return f"{before[-1]:%-d %B %Y}"
    if phrase.startswith("last ") and phrase[5:] not in ("weekend", "week", "month"):
        return f"{next(d for d in reversed(before) if d.strftime('%A').lower() == phrase[5:]):%-d %B %Y}"
    if phrase == "last weekend":  # the latest Saturday whose Sunday is over
        saturday = next(d for d in reversed(before) if d.weekday() == 5 and d + dt.timedelta(days=1) < day)
        return f"the weekend of {saturday:%-d %B} to {saturday + dt.timedelta(days=1):%-d %B %Y}"
    if phrase == "next weekend":  # the first Saturday at least two days off
        saturday = next(d for d in days if d.weekday() == 5 and (d - day).days >= 2)
        return f"the weekend of {saturday:%-d %B} to {saturday + dt.timedelta(days=1):%-d %B %Y}"
    if phrase == "last week":
        return f"the week before {day:%-d %B %Y}"
    if phrase == "two weeks ago":
        return f"two weeks before {day:%-d %B %Y}"
    if phrase == "in two weeks":
        return f"two weeks after {day:%-d %B %Y}"
    months = [
        d for d in days if (d.year * 12 + d.month) - (day.year * 12 + day.month) == (-1 if "last" in phrase else 1)
    ]
    return f"{months[0]:%B %Y}"


@pytest.mark.parametrize(("seed", "at"), list(itertools.product(SEEDS, range(len(PAIRS)))))
def test_a_time_answer_is_what_its_phrase_points_at_from_the_session_stamp(seed: int, at: int) -> None:
    session_of = {i: when.date() for when, held in _sessions(seed, at) for i in held}
    messages = CHATS[seed][at].messages
    for question in _asked(seed, at):
        if question.kind == "temporal":
            (i,) = question.evidence
            phrases = PHRASE.findall(speaker_and_words(messages[i]["content"])[1].lower())
            assert len(phrases) == 1, messages[i]["content"]
            assert question.answer == _walk(phrases[0], session_of[i]), question.text


@pytest.mark.parametrize("seed", SEEDS)
def test_small_talk_is_composed_not_a_stock(seed: int) -> None:
    """No message is said twice in a chat, and no sentence of nine words or more more than five times."""
    for chat in CHATS[seed]:
        said = Counter(speaker_and_words(m["content"])[1] for m in chat.messages)
        assert said.most_common(1)[0][1] == 1
        sentences = Counter(s for words in said for s in re.split(r"(?<=[.!?])\s+", words) if len(s.split()) >= 9)
        assert sentences.most_common(1)[0][1] <= 5, sentences.most_common(3)


@pytest.mark.parametrize("seed", SEEDS)
def test_some_facts_are_shown_in_a_photo(seed: int) -> None:
    """A shared picture is a line of text; across a seed's chats, some labelled details are in its caption."""
    shown = [
        q
        for at, chat in enumerate(CHATS[seed])
        for q in _asked(seed, at)
        if q.kind in ("single_hop", "multi_hop")
        and any(speaker_and_words(chat.messages[i]["content"])[1].startswith("[shares a photo of") for i in q.evidence)
    ]
    assert shown


def test_the_bench_reports_every_kind_nothing_answers_apart_from_recall() -> None:
    from bench.conversation_bench import NOTHING as REPORTED_APART

    assert set(NOTHING) <= set(REPORTED_APART)
