"""The type of answer a question asks for, and whether a message holds one (components/context_window/answer_types.py):
a date or a clock never passes for an amount, since every session of a chat opens with one."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.context_window.answer_types import asked_type, asks_back, gives_type_about, holder, holds_type
from components.context_window.relevance import terms


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How much did the flights to Lisbon cost?", "an amount"),
        ("So how much rent does she pay now?", "an amount"),
        ("How old is Mireille?", "an age"),
        ("What colour is Waffles's collar?", "a colour"),
        ("What color was the bike?", "a colour"),
        ("Who did Maya run the race with?", None),  # "my dad" answers it: no name needed
        ("How many times has Kat moved house?", None),  # counted over messages that hold no number
        ("How far upriver did Maya get?", None),  # "up to the weir"
        ("When did Theo move?", None),  # every session has a date
        ("What salary was Sunil offered at the solar company?", "an amount"),  # "what" asking for an amount
        ("What was Ana's rent?", "an amount"),
        ("What's the price of a seat?", "an amount"),
        ("What did the vet say about the cost?", None),  # asks what was said
    ],
)
def test_a_question_says_what_type_of_answer_it_asks_for(question, kind):
    assert asked_type(question) == kind


@pytest.mark.parametrize(
    "text",
    [
        "The flights were £240 return.",
        "It came to 240 quid in the end",
        "two hundred euros, can you believe it",
        "$12.50",
        "the seller knocked 4 grand off",
        "we did 185 miles, it was six feet of snow",
        "lost a stone since January",
    ],
)
def test_an_amount_is_a_currency_digits_or_a_money_word(text):
    assert holds_type(text, "an amount")


@pytest.mark.parametrize(
    "text",
    [
        "Flights were a nightmare but the city was so worth it.",
        "[4 March 2024, 7:30 PM] Morning!",
        "see you at 7pm, or 7.30pm, or at 8 a.m. tomorrow",
        "the 4th of March, or was it March 4?",
        "viewed a house today, tiny garden, a bath with feet",  # a unit word without a number
        "this made me think of you https://www.youtube.com/watch?v=x7Tq2",  # a link's digits
        "my B12 levels are fine, the mp3 is on the drive",  # digits inside a word
    ],
)
def test_a_message_without_an_amount_holds_none(text):
    assert not holds_type(text, "an amount")


@pytest.mark.parametrize(
    "text",
    [
        "the man from before wants to stock my stuff at his farm shop. twelve a wedge!!",
        "got it second hand, paid twenty for it",
        "it cost me forty in the end",
        "sold it for ninety to a guy from work",
        "the lessons are thirty each",
        "the allotment is twenty-one a month now",
    ],
)
def test_a_number_word_is_an_amount_where_a_word_of_paying_or_a_rate_makes_it_one(text):
    """Session 56: "twelve a wedge" (fresh4's cheddar price) gave no amount, so a question asking only its price
    abstained. Fail on main: a number word alone was no amount."""
    assert holds_type(text, "an amount")


@pytest.mark.parametrize(
    "text",
    [
        "the one a friend recommended was shut",
        "what cake could I make for twelve kids?",
        "one for the road, then home",
        "the two of us went in the end",
        "they do a sourdough that sells out by nine",
        "she turns forty next week",
        "did something to my knee at five-a-side last night",
    ],
)
def test_a_number_word_that_counts_or_tells_the_time_is_no_amount(text):
    assert not holds_type(text, "an amount")


def _spelled(n: int) -> str:
    """English words for 1 <= n <= 99, written here apart from the code under test."""
    ones = "one two three four five six seven eight nine".split()
    teens = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
    tens = "twenty thirty forty fifty sixty seventy eighty ninety".split()
    if n < 10:
        return ones[n - 1]
    if n < 20:
        return teens[n - 10]
    return tens[n // 10 - 2] + ("-" + ones[n % 10 - 1] if n % 10 else "")


@given(
    n=st.integers(2, 99),
    frame=st.sampled_from(("paid {} for it", "it cost me {} in the end", "{} a month", "they're {} each")),
)
def test_any_number_word_a_word_of_paying_or_a_rate_frames_is_an_amount_and_alone_none(n, frame):
    """Invariant over every number from two to ninety-nine spelled out: framed as a price it is an amount; in
    "the ... of us" and "for ... kids" it is none."""
    word = _spelled(n)
    assert holds_type(frame.format(word), "an amount")
    assert not holds_type(f"the {word} of us went, we booked for {word} kids", "an amount")


def test_an_age_may_be_spelled_out_and_a_colour_is_a_colour_word():
    assert holds_type("she turns forty next week", "an age") and holds_type("She turns 34 on 4 March", "an age")
    assert not holds_type("she called last night", "an age")
    assert holds_type("a bright red collar with a bell", "a colour") and not holds_type(
        "a collar with a bell", "a colour"
    )


FORMATS = (
    "%Y-%m-%d",
    "%d/%m/%Y",
    "%d.%m.%Y",
    "%d %B %Y",
    "%A %d %B",
    "%B %d, %Y",
    "%a %d %b %Y, %H:%M",
    "%d %b %I:%M %p",
)


@given(st.dates(dt.date(1990, 1, 1), dt.date(2060, 12, 31)), st.sampled_from(FORMATS), st.sampled_from(("[", "(", "")))
def test_a_date_or_a_clock_is_never_an_amount_or_an_age(day, spelling, bracket):
    """Every chat session opens with its date: its numbers say when, not how much (independent oracle: strftime)."""
    line = f"{bracket}{dt.datetime.combine(day, dt.time(19, 30)).strftime(spelling)} Hey, got a minute?"
    assert not holds_type(line, "an amount") and not holds_type(line, "an age")


@pytest.mark.parametrize(
    ("question", "words"),
    [
        ("How much is the rent on the new flat?", "rent flat"),  # "new" qualifies the flat
        ("How much did the insurer finally pay for the bike?", "insurer bike"),
        ("What colour was the stolen bike?", "stolen bike"),
        ("What salary was she offered at the solar company?", "offered solar company"),  # "she" points at someone
        ("How old is Mireille?", "Mireille"),
    ],
)
def test_the_holder_is_what_the_type_is_asked_of(question, words):
    assert holder(question) == frozenset(terms(words))


FLIGHTS = holder("How much did the flights to Lisbon cost?")


@pytest.mark.parametrize(
    ("text", "before"),
    [
        ("The flights were £240 return, the city was so worth it.", ""),
        ("Booked Lisbon at last. It came to 240 quid.", ""),  # the sentence before names it
        ("£240 return.", "How much were the flights in the end?"),  # the message it follows
    ],
)
def test_an_amount_said_of_the_holder_or_next_to_it_gives_the_type_about_it(text, before):
    assert gives_type_about(text, before, "an amount", FLIGHTS)


@pytest.mark.parametrize(
    ("text", "before"),
    [
        ("Back from Lisbon, the flights were a nightmare. Work is mad. I found a tenner in an old coat.", ""),
        ("Lisbon was lovely. Anyway. Coffee at the station is £4 now.", ""),  # two sentences away
        ("Coffee at the station is £4 now. Lisbon better be worth it.", ""),  # the sentence after: new talk
        ("Work is mad. Coffee at the station is £4 now.", "Back from Lisbon!"),  # not its first sentence
        ("Flights were a nightmare but the city was so worth it.", ""),  # no amount at all
    ],
)
def test_an_amount_of_something_else_does_not_give_the_type_about_the_holder(text, before):
    assert not gives_type_about(text, before, "an amount", FLIGHTS)


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("How much did you get for it?", True),
        ("Maya: Ooh, what did that set you back?", True),
        ("I have 25 minutes tonight. How would I make black bean tacos?", False),  # a request with its reasons
        ("Sold my old drum kit last Monday.", False),
        ("what? no way!", False),
    ],
)
def test_a_one_sentence_question_asks_back(text, asks):
    assert asks_back(text) is asks
