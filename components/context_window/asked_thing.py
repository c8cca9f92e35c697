"""The thing a question asks about, when its form says so: "What is the name of Dan's dog?", "What breed is Kofi's
dog?", "What's my yoga teacher called?" ask about a dog and a teacher, and can only be answered by a chat that
mentions one (docs/history/knowledge-log.md, "Abstention, session 47").

Only the copula's subject after a possessor or an article counts, never the noun after "what" or "which": that noun
is the answer's kind ("Which employer ...?", "What injury ...?"), which a chat answering the question names by its
instance ("I start at the animal clinic", "my knee"), so its absence says nothing. The subject of "What instrument is
Arjun learning?" is someone, and of "What was the cat's name when ...?" an attribute: neither is a thing asked about.
A yes/no question asks about a thing too when it asks whether someone has one ("Does Grant have any children?") or
has ever done or had it ("Has Bex ever been skiing?", "Has Theo ever owned a dog?"): a chat that never mentions it
cannot say (docs/history/knowledge-log.md, "Abstention, session 49"). No part of speech is tagged: the form is read from
function words alone."""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_COPULA = frozenset("is was are were".split())
_AUXILIARY = frozenset("do does did has have had will would can could should might may am be been being".split())
_PREPOSITION = frozenset(
    "in on at for from with about to of by into after before during under over behind near like".split()
)
_CLAUSE = frozenset(
    "when where while who whom whose that which if because called named now still i you he she we they it".split()
)
"""Words that end the thing's noun phrase: a clause, a pronoun opening one ("the dog we took in"), an adverb."""
_DETERMINER = frozenset("the a an my your his her their our its this that these those".split())
_ATTRIBUTE = frozenset(
    "name names kind type sort colour color breed make model brand age size shape plot highlight title price cost "
    "number".split()
)
"""Nouns that name an attribute of the thing ("the name of ...", "Elsie's middle name"), not a thing."""


def thing_asked(question: str) -> str | None:
    """The head word of the thing ``question`` asks about (lower-cased), or None when its form names none: "What
    [X] is|was|are|were <possessor or article> ... <thing> [called]?", or "... the <attribute> of <possessor> <thing>",
    or a yes/no question's ("Does <someone> have any <thing>?", "Has <someone> ever <done> <thing>?").
    The thing's words run from after its last possessor to a preposition, an auxiliary, a clause, a name opening one
    or the end."""
    words = _WORD.findall(re.sub(r"(?i)\bwhat['’]s\b", "what is", question))
    low = [w.lower() for w in words]
    if low and low[0] in _YES_NO:
        return _had_or_done(low, words)
    if not low or low[0] not in ("what", "which"):
        return None
    at = _after_copula(low)
    if at is None or at >= len(low):
        return None
    if at + 2 < len(low) and low[at] == "the" and low[at + 2] == "of":
        at += 3  # "the name of Dan's dog"
    if at >= len(low) or not (low[at] in _DETERMINER or _possessive(low[at])):
        return None  # "What instrument is Arjun learning?": the subject is someone
    return _head(low[at:], words[at:])


def _head(low: list[str], words: list[str]) -> str | None:
    """The last word of the noun phrase ``low`` opens (``words`` as spelt), or None when there is none or it names an
    attribute."""
    thing: list[str] = []
    for at, (word, spelt) in enumerate(zip(low, words, strict=True)):
        if word in _AUXILIARY or word in _PREPOSITION or word in _CLAUSE or word in _COPULA:
            break
        if spelt[0].isupper() and thing and (not _possessive(word) or _opens_clause(low[at + 1 :])):
            break  # a name opening a clause: "the dog Theo took in", "the hospital Nell's dad was taken to"
        if _possessive(word):
            thing = []  # "Tom's flatmate's girlfriend": what follows the last possessor is the thing
        elif word not in _DETERMINER:
            thing.append(word)
    if not thing or thing[-1] in _ATTRIBUTE:
        return None
    return thing[-1]


def _opens_clause(rest: list[str]) -> bool:
    """Whether the words after a name's possessive end at a verb of their own ("Nell's dad was taken to"): the
    possessive opens a clause about the thing before it, not the thing's owner ("my sister Ana's dog called")."""
    end = next((word for word in rest if word in _AUXILIARY or word in _COPULA or word in _PREPOSITION), None)
    return end is not None and end not in _PREPOSITION


_YES_NO = frozenset("does do did has have".split())
_HAVE = frozenset("have got".split())
_EVER = "ever"


def _had_or_done(low: list[str], words: list[str]) -> str | None:
    """The thing a yes/no question asks whether someone has ("Does Grant have any children?", "Has Sam got a car?")
    or has ever done or had ("Has Bex ever been skiing?", "Did Theo ever own a dog?"): the head of the words after
    "have" / "got" or after "ever" (its auxiliaries and determiners skipped); None in any other form ("Did Maya go
    to the party?": whether an event happened, which the chat may tell in any words)."""
    if _EVER in low[2:]:
        at = low.index(_EVER, 2) + 1
    elif low[0] in ("does", "do", "did") and "have" in low[2:]:
        at = low.index("have", 2) + 1
    elif low[0] in ("has", "have") and "got" in low[2:]:
        at = low.index("got", 2) + 1
    else:
        return None
    while at < len(low) and (low[at] in _AUXILIARY or low[at] in _HAVE):
        at += 1  # "ever been skiing", "ever had to", "have got"
    return _head(low[at:], words[at:])


def _after_copula(low: list[str]) -> int | None:
    """Where the copula's subject starts: the word after the first "is" (or was, are, were), when only the noun the
    question asks for stands between it and "what"; None when an auxiliary or a preposition comes first ("What did
    the vet say ...?", "Which of ...")."""
    for at, word in enumerate(low[1:], start=1):
        if word in _COPULA:
            return at + 1
        if word in _AUXILIARY or word in _PREPOSITION:
            return None
    return None


def _possessive(word: str) -> bool:
    return word.endswith(("'s", "’s", "s'"))
