"""The kind of thing a question asks for, and whether a text holds one: "How much was the rent?" asks for an amount,
"How old is she?" for an age, "What colour is it?" for a colour. When none of the messages recall would bring holds
a token of that type, recall cannot bring the answer: the detail was never given (docs/knowledge.md, "Abstention,
round 5").

Only types whose answers are tokens: a question asking "who" is answered by "my dad", "how many times" by counting
messages that hold no number, "how far" by "up to the weir" (each seen on the benches' answerable questions), so
those ask for no type here. "When" neither: every session of a chat has a date."""

from __future__ import annotations

import re

from .relevance import CALENDAR

_NUMBER = frozenset(
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million dozen".split()
)
_MONEY = frozenset("pound pounds quid dollar dollars bucks euro euros pence cents fiver tenner".split())
_COUNTED = frozenset("grand hundred thousand million billion".split())
"""Words that give an amount only after a number ("4 grand", "two hundred"): alone they say something else ("a grand
day out")."""
_UNIT = frozenset(
    "km kilometres kilometers mile miles metre metres meter meters cm mm inch inches foot feet kg kilo kilos gram "
    "grams lb lbs stone litre litres liter liters acre acres hectare hectares percent".split()
)
"""Units give an amount only after a number too: "a bath with feet", "a stone in my shoe" give none."""
_COLOUR = frozenset(
    "red orange yellow green blue purple violet pink brown black white grey gray silver gold golden ginger cream "
    "beige navy teal turquoise maroon tan".split()
)
_NUMERAL = re.compile(r"\d+(?:[:./-]\d+)*")
_AFTER = re.compile(r"\s*([ap])\.m\b|(?:st|nd|rd|th)?\s*(?:of\s+)?([a-z]+)", re.IGNORECASE)
_BEFORE = re.compile(r"([a-z]+)\.?\s*$", re.IGNORECASE)
_SEPARATOR = re.compile(r"[./-]")
_YEAR = re.compile(r"(?:19|20)\d\d")
_WORD = re.compile(r"[a-z]+")
_CURRENCY = frozenset("£$€¥")
_COUNTED_AFTER = re.compile(r"(?:\d|\b(?:a|an|" + "|".join(sorted(_NUMBER)) + r"))[\s-]*([a-z]+)")
_AFTER_A_NUMBER = _UNIT | _COUNTED
_URL = re.compile(r"\S*(?:://|www\.)\S*")
_AMOUNT_NOUN = r"(?:salary|salaries|wage|wages|pay|price|prices|cost|costs|fee|fees|fare|fares|rent)"

TYPES = {
    "an amount": (
        r"\bhow much\b|\bwhat(?:['’]s|\s+is|\s+was|\s+are|\s+were)?\s+(?:(?:the|a|an|my|your|his|her|their|our|"
        r"[a-z]+['’]s)\s+)?(?:[a-z]+\s+)?" + _AMOUNT_NOUN + r"\b",
        _MONEY,
        True,
    ),
    "an age": (r"\bhow old\b", _NUMBER, True),
    "a colour": (r"\bwhat colou?r\b", _COLOUR, False),
}
"""Each type of answer: the words that ask for it ("how much", or "what" asking for a salary, a price, a cost, a fee, a
fare or a rent: "What salary was she offered?", "What was Ana's rent?"), the words that give one, and whether digits
do (an amount also by a currency sign, and by a unit or "grand", "hundred"... after a number)."""
_ASKS = [(kind, re.compile(asks, re.IGNORECASE)) for kind, (asks, _, _) in TYPES.items()]


def asked_type(question: str) -> str | None:
    """The type of answer ``question`` asks for ("an amount", "an age", "a colour"), or None: it does not say."""
    return next((kind for kind, asks in _ASKS if asks.search(question)), None)


def holds_type(text: str, kind: str) -> bool:
    """Whether ``text`` holds a token of ``kind``: an amount (a currency sign, a number that is no date or clock, a
    money word or a unit), an age (a number or a number word), a colour word. Words are looked up in a set: recall
    asks this of every message it ranks."""
    _, gives, numbers = TYPES[kind]
    low = text.lower()
    words = _WORD.findall(low)
    if not gives.isdisjoint(words):
        return True
    if kind == "an amount" and (not _CURRENCY.isdisjoint(text) or _counted(low, words)):
        return True
    if "://" in text or "www." in text:
        text = _URL.sub(" ", text)  # a link's digits name a page ("watch?v=x7Tq2", "video/72")
    return numbers and any(
        not _when(text, numeral) and not _in_word(text, numeral) for numeral in _NUMERAL.finditer(text)
    )


def _counted(low: str, words: list[str]) -> bool:
    """Whether ``low`` holds a unit or a word like "grand" after a number ("4 grand", "six feet", "a stone")."""
    if _AFTER_A_NUMBER.isdisjoint(words):
        return False
    return any(match.group(1) in _AFTER_A_NUMBER for match in _COUNTED_AFTER.finditer(low))


def _in_word(text: str, numeral: re.Match[str]) -> bool:
    """Whether ``numeral`` is part of a word ("x7", "B12", "mp3"): a name or a code, not an amount."""
    return numeral.start() > 0 and text[numeral.start() - 1].isalpha()


def _when(text: str, numeral: re.Match[str]) -> bool:
    """Whether ``numeral`` is a date's or a clock's (they say when, not how much: a chat's sessions open with one):
    "7:30", "04.03.2023", "2024", "4th of March", "March 4", "7pm", "7 a.m."."""
    digits = numeral.group()
    if ":" in digits or len(_SEPARATOR.findall(digits)) >= 2 or _YEAR.fullmatch(digits):
        return True
    after = _AFTER.match(text, numeral.end())
    word = after.group(2).lower() if after and after.group(2) else ""
    before = _BEFORE.search(text[max(0, numeral.start() - 12) : numeral.start()])
    return bool(
        (after and after.group(1))
        or word in CALENDAR
        or word in ("am", "pm")
        or (before and before.group(1).lower() in CALENDAR)
    )
