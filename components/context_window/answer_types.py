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


def _words(words: str) -> str:
    return r"\b(?:" + "|".join(words.split()) + r")\b"


_DIGITS = r"\b\d+(?:[.,]\d+)*"
_NUMBER = _words(
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million dozen"
)
_MONEY = _words(
    "pound pounds quid dollar dollars bucks euro euros pence cents grand fiver tenner hundred thousand million billion"
)
_UNIT = _words(
    "km kilometres kilometers mile miles metre metres meter meters cm mm inch inches foot feet kg kilo kilos gram "
    "grams lb lbs stone litre litres liter liters acre acres hectare hectares percent"
)
_COLOUR = _words(
    "red orange yellow green blue purple violet pink brown black white grey gray silver gold golden ginger cream "
    "beige navy teal turquoise maroon tan"
)
_CALENDAR = "|".join(sorted(CALENDAR))
_DATE_OR_CLOCK = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}[./-]\d{1,2}[./-]\d{2,4}\b|\b(?:19|20)\d{2}\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?(?:\s+of)?\s+(?:{_CALENDAR})\b|\b(?:{_CALENDAR})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b"
    r"|\b\d{1,2}[:.]\d{2}\s*(?:[ap]\.?m\b\.?)?|\b\d{1,2}\s*[ap]\.?m\b\.?",
    re.IGNORECASE,
)
"""A date's or a clock's numbers say when, not how much: a chat's sessions open with them."""

TYPES = {
    "an amount": (r"\bhow much\b", rf"[£$€¥]|{_DIGITS}|{_MONEY}|{_UNIT}"),
    "an age": (r"\bhow old\b", rf"{_DIGITS}|{_NUMBER}"),
    "a colour": (r"\bwhat colou?r\b", _COLOUR),
}
"""Each type of answer: the words that ask for it, and the tokens that give one."""
_ASKS = [(kind, re.compile(asks, re.IGNORECASE)) for kind, (asks, _) in TYPES.items()]
_GIVES = {kind: re.compile(gives, re.IGNORECASE) for kind, (_, gives) in TYPES.items()}


def asked_type(question: str) -> str | None:
    """The type of answer ``question`` asks for ("an amount", "an age", "a colour"), or None: it does not say."""
    return next((kind for kind, asks in _ASKS if asks.search(question)), None)


def holds_type(text: str, kind: str) -> bool:
    """Whether ``text`` holds a token of ``kind``: an amount (a currency sign, digits not in a date or a clock, a
    money word or a unit), an age (digits or a number word), a colour word."""
    return bool(_GIVES[kind].search(_DATE_OR_CLOCK.sub(" ", text)))
