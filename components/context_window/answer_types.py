"""The kind of thing a question asks for, and whether a text holds one: "How much was the rent?" asks for an amount,
"How old is she?" for an age, "What colour is it?" for a colour. When none of the messages recall would bring holds
a token of that type, recall cannot bring the answer: the detail was never given (docs/history/knowledge-log.md,
"Abstention, round 5").

Only types whose answers are tokens: a question asking "who" is answered by "my dad", "how many times" by counting
messages that hold no number, "how far" by "up to the weir" (each seen on the benches' answerable questions), so
those ask for no type here. "When" neither: every session of a chat has a date.

A type of answer anywhere is not the detail: a chat holds amounts about other things near any topic ("found a tenner
in an old coat" beside the rent). So the answer must give its type about what the question asks it of, its holder
(``holder``: "the rent on Tom's new flat"): a sentence holding a token of the type has a word of the holder in it or in
the sentence before, or in the message before it ("£240 return" after "how much were the flights?"; session 50,
``gives_type_about``; the sentence after no longer counts since session 56)."""

from __future__ import annotations

import re

from .relevance import CALENDAR, terms

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
_HYPHENATED = re.compile(r"[a-z]+(?:-[a-z]+)*")
_CURRENCY = frozenset("£$€¥")
_COUNTED_AFTER = re.compile(r"(?:\d|\b(?:a|an|" + "|".join(sorted(_NUMBER)) + r"))[\s-]*([a-z]+)")
_AFTER_A_NUMBER = _UNIT | _COUNTED
_PAYING = frozenset(
    "pay pays paid paying cost costs costing charge charges charged spend spends spent sell sells sold selling "
    "owe owes owed earn earns earned worth".split()
)
_BETWEEN = frozenset("me us him her them you it for about around only just nearly almost over under".split())
"""The words that may come between a word of paying and its number word (at most two): whom, what, "for", how near."""
_RATE = frozenset("a an per each".split())
"""A number word is an amount where the words around it make it one: a word of paying just before it ("paid twenty
for it", "cost me forty", "sold it for ninety"; not "sells out by nine") or a rate after it (``_RATE``: "twelve a
wedge", "forty a month", "ten each"). Alone it says other things ("the two of us", "for twelve kids", "one for the
road", "five-a-side"); so does "one a" ("the one a friend recommended"; "twenty-one a month" is a rate). A number word
before a unit or a money word is an amount already (``_counted``, ``_MONEY``)."""
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
    if kind == "an amount" and (
        not _CURRENCY.isdisjoint(text)
        or _counted(low, words)
        or (not _NUMBER.isdisjoint(words) and _spelled(low, words))
    ):
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


def _spelled(low: str, words: list[str]) -> bool:
    """Whether ``low`` (its ``words``) holds a number word that a word of paying or a rate makes an amount (``_RATE``).
    Read over the plain words first (cheap), then, when they say so, over the hyphenated words: "twenty-one" is a
    number word, "five-a-side" none."""
    return _framed(words) and _framed(_HYPHENATED.findall(low))


def _framed(words: list[str]) -> bool:
    for at, word in enumerate(words):
        if not _NUMBER.issuperset(word.split("-")):
            continue
        after = words[at + 1] if at + 1 < len(words) else ""
        if after in _RATE and (word != "one" or (at > 0 and words[at - 1] in _NUMBER)):
            return True
        for before in reversed(words[max(0, at - 3) : at]):  # the nearest first
            if before in _PAYING:
                return True
            if before not in _BETWEEN:
                break
    return False


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


_ASKING = frozenset(
    terms(
        "how much old colour color what did does do get got gets pay pays paid cost costs spend spent price prices "
        "salary wage fee fare charge charged"
    )
)
"""Words that ask for the type, not what it is of: "How much did Tom pay for the bike?" asks it of the bike."""
_MODIFIER = frozenset(
    terms(
        "new old each every other own same final finally last first next big small little up s "
        "me my mine he him his she her hers we us our they them their"
    )
)
"""Words that qualify the holder or point at its owner rather than name it: "the rent on Tom's **new** flat" is said of
the flat, and "new" or "her" is in any small talk ("the new detective thing")."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def asks_back(text: str) -> bool:
    """Whether ``text`` is a one-sentence question, a friend asking after what was just said ("How much did you get
    for it?"): the answer that follows is said of the message it asks about. A longer message ending in a question
    (a request with its reasons) opens a topic of its own."""
    text = text.strip()
    return text.endswith("?") and len(_SENTENCE_END.split(text)) == 1


def holder(question: str) -> frozenset[str]:
    """The terms of what ``question`` asks the type of ("How much is the rent on the new flat?": rent, flat): its
    content words but those asking for the type and those qualifying the holder."""
    return frozenset(terms(question)) - _ASKING - _MODIFIER


def gives_type_about(text: str, before: str, kind: str, about: frozenset[str]) -> bool:
    """Whether ``text`` holds a token of ``kind`` in a sentence that has a word of ``about`` in it or in the sentence
    before, or (its first sentence) in ``before``, the message it follows: the detail said of its holder, or of a word
    standing for it just before ("I got a bike. It cost £300."; "£240 return" after "How much were the flights?";
    "Bought a proper instrument at last, £2,300" after a message about the cellos). Not the sentence after: a figure
    points back to what it is of, and the holder named next is new talk ("I walked 400 steps. also the shop has a
    name"; no evidence on the dev sets needed it, docs: "Session 56 (abstain56)")."""
    if not holds_type(text, kind):
        return False
    sentences = [s for s in _SENTENCE_END.split(text) if s.strip()]
    for at, sentence in enumerate(sentences):
        if not holds_type(sentence, kind):
            continue
        near = " ".join(sentences[max(0, at - 1) : at + 1]) + (" " + before if at == 0 else "")
        if not about.isdisjoint(terms(near)):
            return True
    return False
