"""bench/fresh7_chats.py: the eighth set checked against its own oracles. Each chat is a pair over months of stamped
sessions, the speaker in the message's ``name`` or its text; each question's evidence is by the one asked about and
holds what it asks (no other message does), a plan's latest state is the last message saying any of its states, a
time answer is what the evidence's relative phrase points at from its session's stamp (worked out here by walking
the calendar, apart from the writer), unanswerable questions' words are never said, and the chats are what people
write: uneven lengths, no message said twice, questions in mixed styles, small talk echoing the news's words."""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import re
from collections import Counter

import pytest

from bench.fresh7_chats import KINDS, NOTHING, PAIRS, Asked, fresh7_conversations
from tests.support import content_words, evidence_in_range, stamped_sessions, written_from_a_seed

SEEDS = (0, 1, 2)
CHATS = {seed: fresh7_conversations(seed=seed) for seed in SEEDS}
STAMPS = {  # each chat's session stamp, read back with strptime (not with the writer's own format)
    "nadia_tom": (re.compile(r"^\[(\d{1,2} \w+ \d{4}, \d{1,2}:\d\d [ap]m)\] "), "%d %B %Y, %I:%M %p"),
    "gwen_rohan": (re.compile(r"^— (\w+ \d{1,2} \w+ \d{4}) —$"), "%A %d %B %Y"),
    "beatriz_olu": (re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d)$"), "%Y-%m-%d %H:%M"),
}
PHRASE = re.compile(
    r"\b(the day before yesterday|yesterday|last (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"last weekend|a week ago|last month)\b"
)
"""The relative phrases that date news from its session."""
PRONOUNS = {"she", "her", "he", "his"}
RELATIONS = ("brother", "neighbour", "partner", "son", "apprentice", "brother-in-law", "friend", "fiancée", "mother")


def _said(message: dict[str, str], at: int) -> tuple[str, str]:
    """A message's speaker and words: from its ``name`` (the stamp cut off its first line), or from "Name: " in the
    text."""
    last = message["content"].split("\n")[-1]
    if PAIRS[at].tagged:
        speaker, words = last.split(": ", 1)
        return speaker, words
    return message["name"], re.sub(r"^\[[^\]]+\] ", "", last)


def _asked(seed: int, at: int) -> list[Asked]:
    return [q for q in CHATS[seed][at].questions if isinstance(q, Asked)]


@functools.cache
def _words(seed: int, at: int) -> list[tuple[str, str]]:
    return [_said(m, at) for m in CHATS[seed][at].messages]


@functools.cache
def _sessions(seed: int, at: int) -> list[tuple[dt.datetime, list[int]]]:
    return stamped_sessions(CHATS[seed][at].messages, *STAMPS[PAIRS[at].name])


def _holds(text: str, key: str) -> bool:
    """``key`` said as words (a plural allowed), not inside another word."""
    return re.search(rf"\b{re.escape(key.lower())}(?:s|es)?\b", text.lower()) is not None


def _holding(seed: int, at: int, key: str) -> set[int]:
    return {i for i, (_, words) in enumerate(_words(seed, at)) if _holds(words, key)}


def _about(question: Asked, at: int) -> str:
    """Whom a question asks about: the name it says, else its first pronoun's person (each chat is a woman and a
    man)."""
    named = [n for n in PAIRS[at].names if n in question.text]
    if named:
        return named[0]
    first = next(w for w in re.findall(r"[a-z]+", question.text.lower()) if w in PRONOUNS)  # "his mother ... her"
    (who,) = [n for n, forms in zip(PAIRS[at].names, PAIRS[at].pronouns, strict=True) if first in forms]
    return who


def test_a_seed_writes_the_same_chats_and_another_seed_other_ones() -> None:
    written_from_a_seed(lambda seed: fresh7_conversations(seed=seed))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_pair_over_months_of_stamped_sessions(seed: int) -> None:
    for at, chat in enumerate(CHATS[seed]):
        sessions = _sessions(seed, at)
        assert 25 <= len(sessions) <= 35 and sessions[0][1][0] == 0
        stamps = [when for when, _ in sessions]
        assert all(a.date() < b.date() for a, b in itertools.pairwise(stamps))
        assert 120 <= (stamps[-1] - stamps[0]).days <= 400  # months
        assert 400 <= len(chat.messages) <= 700
        # 13-25K tokens: chat English runs ~3.5 characters a token, so 45-90K characters
        assert 45_000 <= sum(len(m["content"]) for m in chat.messages) <= 90_000
        assert {speaker for speaker, _ in _words(seed, at)} == set(PAIRS[at].names)


def test_speakers_are_written_in_the_name_or_in_the_text() -> None:
    """Two chats carry the speaker only in ``name`` (the text never opens with it); one writes "Name: " in the text."""
    for at, chat in enumerate(CHATS[0]):
        opens = [m["content"].split("\n")[-1].split(": ", 1)[0] in PAIRS[at].names for m in chat.messages]
        if PAIRS[at].tagged:
            assert all(opens) and not any("name" in m for m in chat.messages)
        else:
            assert not any(opens) and all(m["name"] in PAIRS[at].names for m in chat.messages)


@pytest.mark.parametrize("seed", SEEDS)
def test_messages_run_from_a_word_to_a_paragraph_and_none_is_said_twice(seed: int) -> None:
    for at in range(len(PAIRS)):
        said = [words for _, words in _words(seed, at)]
        assert Counter(said).most_common(1)[0][1] == 1
        lengths = [len(words.split()) for words in said]
        assert sum(n <= 3 for n in lengths) >= 0.1 * len(said)  # "ha", "nooo 😂"
        assert sum(n >= 50 for n in lengths) >= 0.04 * len(said)  # a day told at length
        sentences = Counter(s for words in said for s in re.split(r"(?<=[.!?])\s+", words) if len(s.split()) >= 9)
        assert sentences.most_common(1)[0][1] <= 12, sentences.most_common(3)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_kind_in_each_chat_and_evidence_in_range(seed: int) -> None:
    for at, chat in enumerate(CHATS[seed]):
        asked = _asked(seed, at)
        kinds = Counter(q.kind for q in asked)
        assert set(kinds) == set(KINDS) and all(4 <= n <= 10 for n in kinds.values()), kinds
        evidence_in_range(asked, len(chat.messages), NOTHING)


@pytest.mark.parametrize(("seed", "at"), list(itertools.product(SEEDS, range(len(PAIRS)))))
def test_each_label_holds_its_answer_and_no_other_message_does(seed: int, at: int) -> None:
    said = _words(seed, at)
    for question in _asked(seed, at):
        if question.kind == "unanswerable":
            assert not any(_holding(seed, at, key) for key in question.keys), question.text
            continue
        assert {said[i][0] for i in question.evidence} == {_about(question, at)}, question.text
        if question.kind == "single_hop":
            assert _holding(seed, at, question.answer) == set(question.evidence), question.text
        elif question.kind in ("multi_hop", "inference"):
            for i, key in zip(question.evidence, question.keys, strict=True):
                assert _holds(said[i][1], key), (question.text, key)
            assert set().union(*(_holding(seed, at, key) for key in question.keys[1:])) <= set(question.evidence)


@pytest.mark.parametrize(("seed", "at"), list(itertools.product(SEEDS, range(len(PAIRS)))))
def test_a_changed_plan_is_answered_by_its_latest_state(seed: int, at: int) -> None:
    """Each earlier state is said before the evidence; the evidence is the only message with the newest one and the
    last message saying any of them."""
    session_of = {i: n for n, (_, held) in enumerate(_sessions(seed, at)) for i in held}
    for question in _asked(seed, at):
        if question.kind != "knowledge_update":
            continue
        (last,) = question.evidence
        *earlier, newest = question.keys
        assert question.answer == newest and _holding(seed, at, newest) == {last}, question.text
        for old in earlier:
            first = min(_holding(seed, at, old))
            assert session_of[first] < session_of[last], (question.text, old)
        assert max(set().union(*(_holding(seed, at, key) for key in question.keys))) == last


@pytest.mark.parametrize(("seed", "at"), list(itertools.product(SEEDS, range(len(PAIRS)))))
def test_hops_come_from_different_sessions(seed: int, at: int) -> None:
    """A multi_hop's messages are in distinct sessions, in order; a chain's say the same name, which the question
    lacks (it goes through a relation or a deed instead)."""
    session_of = {i: n for n, (_, held) in enumerate(_sessions(seed, at)) for i in held}
    said = _words(seed, at)
    for question in _asked(seed, at):
        if question.kind != "multi_hop":
            continue
        sessions = [session_of[i] for i in question.evidence]
        assert len(set(sessions)) == len(sessions) >= 2 and sessions == sorted(sessions), question.text
        name = question.keys[0]
        if all(_holds(said[i][1], name) for i in question.evidence):
            assert not _holds(question.text, name), question.text


def _walk(phrase: str, day: dt.date) -> str:
    """What a reader works out from ``phrase`` said on ``day``, by walking the calendar back (apart from the
    writer)."""
    back = [day - dt.timedelta(days=n) for n in range(1, 70)]
    if phrase == "yesterday":
        return f"{back[0]:%-d %B %Y}"
    if phrase == "the day before yesterday":
        return f"{back[1]:%-d %B %Y}"
    if phrase == "a week ago":
        return f"{back[6]:%-d %B %Y}"
    if phrase == "last weekend":  # the latest Sunday before the day, and the Saturday before it
        sunday = next(d for d in back if d.strftime("%A") == "Sunday")
        return f"the weekend of {back[back.index(sunday) + 1]:%-d %B} to {sunday:%-d %B %Y}"
    if phrase == "last month":
        return f"{next(d for d in back if d.month != day.month):%B %Y}"
    weekday = phrase.removeprefix("last ")
    return f"{next(d for d in back if d.strftime('%A').lower() == weekday):%-d %B %Y}"


@pytest.mark.parametrize(("seed", "at"), list(itertools.product(SEEDS, range(len(PAIRS)))))
def test_a_time_answer_is_what_its_phrase_points_at_from_the_session_stamp(seed: int, at: int) -> None:
    day_of = {i: when.date() for when, held in _sessions(seed, at) for i in held}
    said = _words(seed, at)
    for question in _asked(seed, at):
        if question.kind == "temporal":
            (i,) = question.evidence
            phrases = PHRASE.findall(said[i][1].lower())
            assert len(phrases) == 1, said[i][1]
            assert question.answer == _walk(phrases[0], day_of[i]), question.text


def test_the_walk_reads_a_weekend_across_a_month() -> None:
    """The oracle itself, on days worked out by hand: Monday 3 March 2025's last weekend is 1-2 March; Tuesday 1
    April's is 29-30 March; a Sunday's is the one before."""
    assert _walk("last weekend", dt.date(2025, 3, 3)) == "the weekend of 1 March to 2 March 2025"
    assert _walk("last weekend", dt.date(2025, 4, 1)) == "the weekend of 29 March to 30 March 2025"
    assert _walk("last weekend", dt.date(2025, 3, 16)) == "the weekend of 8 March to 9 March 2025"
    assert _walk("last friday", dt.date(2025, 3, 3)) == "28 February 2025"
    assert _walk("last month", dt.date(2025, 1, 20)) == "December 2024"


@pytest.mark.parametrize("seed", SEEDS)
def test_questions_come_in_mixed_styles(seed: int) -> None:
    """Some reuse a content word of their evidence and some share none; some name their person, some say only a
    pronoun, some go through a relation."""
    shared = clean = named = pronoun = related = 0
    for at, chat in enumerate(CHATS[seed]):
        people = {n.lower() for n in PAIRS[at].names}
        for question in _asked(seed, at):
            words = set(re.findall(r"[a-z'-]+", question.text.lower()))
            named += bool(people & words)
            pronoun += not people & words and bool(PRONOUNS & words)
            related += any(r in words for r in RELATIONS)
            if question.kind in NOTHING:
                continue
            evidence = " ".join(_said(chat.messages[i], at)[1] for i in question.evidence)
            overlap = (content_words(question.text) - people) & content_words(evidence)
            shared += bool(overlap)
            clean += not overlap
    total = sum(len(_asked(seed, at)) for at in range(len(PAIRS)))
    assert shared >= 0.25 * (shared + clean) and clean >= 0.25 * (shared + clean), (shared, clean)
    assert named >= 0.3 * total and pronoun >= 0.2 * total and related >= 5, (named, pronoun, related)


@pytest.mark.parametrize("seed", SEEDS)
def test_small_talk_echoes_the_news_without_its_detail(seed: int) -> None:
    """Messages that are no question's evidence share a content word with most single_hop questions' news (a
    wedding, a quiz, an oven), and never say the answer."""
    echoed = asked = 0
    for at in range(len(PAIRS)):
        said = _words(seed, at)
        evidence = {i for q in _asked(seed, at) for i in q.evidence}
        people = {n.lower() for n in PAIRS[at].names}
        for question in _asked(seed, at):
            if question.kind != "single_hop":
                continue
            (i,) = question.evidence
            news = content_words(said[i - 2][1] if i >= 2 else "") | content_words(said[i][1])
            others = [j for j in range(len(said)) if j not in evidence and abs(j - i) > 3]
            asked += 1
            echoed += any((content_words(said[j][1]) - people) & news for j in others)
            assert not any(_holds(said[j][1], question.answer) for j in others), question.text
    assert echoed >= 0.7 * asked, (echoed, asked)


def test_the_bench_reads_the_set_and_reports_its_kinds() -> None:
    from bench import conversation_bench

    assert set(NOTHING) <= set(conversation_bench.NOTHING)
    assert conversation_bench.DEFAULT_COUNT["fresh7"] == "3"
    assert set(KINDS) - set(NOTHING) <= set(conversation_bench.FRESH7_KINDS)
