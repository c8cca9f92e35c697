"""The thing a question asks about, when its form says so: "What is the name of Dan's dog?", "What breed is Kofi's
dog?", "What's my yoga teacher called?" ask about a dog and a teacher, and can only be answered by a chat that
mentions one (docs/knowledge.md, "Abstention, session 47").

Only the copula's subject after a possessor or an article counts, never the noun after "what" or "which": that noun
is the answer's kind ("Which employer ...?", "What injury ...?"), which a chat answering the question names by its
instance ("I start at the animal clinic", "my knee"), so its absence says nothing. The subject of "What instrument is
Arjun learning?" is someone, and of "What was the cat's name when ...?" an attribute: neither is a thing asked about.
No part of speech is tagged: the form is read from function words alone."""

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
    [X] is|was|are|were <possessor or article> ... <thing> [called]?", or "... the <attribute> of <possessor> <thing>".
    The thing's words run from after its last possessor to a preposition, an auxiliary, a clause, a name opening one
    or the end."""
    words = _WORD.findall(re.sub(r"(?i)\bwhat['’]s\b", "what is", question))
    low = [w.lower() for w in words]
    if not low or low[0] not in ("what", "which"):
        return None
    at = _after_copula(low)
    if at is None or at >= len(low):
        return None
    if at + 2 < len(low) and low[at] == "the" and low[at + 2] == "of":
        at += 3  # "the name of Dan's dog"
    if at >= len(low) or not (low[at] in _DETERMINER or _possessive(low[at])):
        return None  # "What instrument is Arjun learning?": the subject is someone
    thing: list[str] = []
    for word, spelt in zip(low[at:], words[at:], strict=True):
        if word in _AUXILIARY or word in _PREPOSITION or word in _CLAUSE or word in _COPULA:
            break
        if spelt[0].isupper() and not _possessive(word) and thing:
            break  # a name opening a clause: "the dog Theo took in"
        if _possessive(word):
            thing = []  # "Tom's flatmate's girlfriend": what follows the last possessor is the thing
        elif word not in _DETERMINER:
            thing.append(word)
    if not thing or thing[-1] in _ATTRIBUTE:
        return None
    return thing[-1]


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
