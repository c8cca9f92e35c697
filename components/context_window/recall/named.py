"""The names a chat gives things: "a half share in a narrowboat, she's called Marigold", "the builder, a bloke called
Gary Price". Later messages use only the name ("Took Marigold up to Skipton and back"), so a question asking about the
thing by its word ("How many trips has Ray taken the boat on?") shares no word with them. Read with function words
alone (no model call): a capitalised name after "called" or "named" binds to the few content words just before it in
its sentence."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ..relevance import terms

NAMED_BEFORE = 3
"""A name binds to at most this many content words before "called" / "named" in its sentence: the thing it names is
said just before ("a narrowboat with Geoff from bowls, she's called Marigold": bowls, Geoff, narrowboat)."""
MIN_SUFFIX = 4
"""A question's word also matches a longer word it ends ("boat" in "narrowboat"): English writes many compounds as
one word. Only words this long at least: "car" would match "Oscar"."""
PRONOUNS = frozenset("i me my we us our you he him his she her it they them s ve re ll d m".split())
"""Not the thing named: "she's called Marigold" names what comes before "she's" (as terms: "she", "s")."""
CUE_TERMS = ("call", "name")
"""The stems of "called" and "named": only the messages holding one can give a name (a lookup in the word index)."""

_GIVEN = re.compile(r"(?<![\w-])(?:called|named)\s+([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)")
"""A capitalised name (one or two words) after "called" / "named", not "so-called"."""
_MAY_GIVE = (re.compile(r"called\s+[A-Z]"), re.compile(r"named\s+[A-Z]"))
"""What a text giving a name holds: searched first, one literal each (a search of ``_GIVEN`` itself cost a
10,000-message history's 924 texts holding "call" or "name" 5.5 ms, these 0.36 ms)."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


Binding = tuple[tuple[str, ...], tuple[str, ...]]
"""A name a sentence gives: the terms of the words that may say the thing, and of the name."""


def bindings(text: str) -> list[Binding]:
    """The names ``text`` gives, each with the content words just before it in its sentence (``NAMED_BEFORE``)."""
    found: list[Binding] = []
    if not any(cue.search(text) for cue in _MAY_GIVE):
        return found
    for sentence in _SENTENCE_END.split(text):
        for match in _GIVEN.finditer(sentence):
            things = tuple(_thing_words(sentence[: match.start()])[-NAMED_BEFORE:])
            if things:
                found.append((things, tuple(terms(match.group(1)))))
    return found


def names_for(given: Iterable[Binding], asked: Sequence[str]) -> list[str]:
    """The terms of the names among ``given`` that name a thing one of the ``asked`` terms says, once each, in order;
    none the question says itself."""
    wanted = set(asked)
    found: dict[str, None] = {}
    for things, name in given:
        if any(_says(word, wanted) for word in things):
            found.update((term, None) for term in name if term not in wanted)
    return list(found)


def _thing_words(text: str) -> list[str]:
    """The terms of ``text``'s words that may say a thing: lower-case ones (a capitalised word is a name itself, or a
    speaker's tag: "Isla bit a boy called Rory" does not name Isla) but pronouns."""
    lower = " ".join(word for word in text.split() if word[:1].islower())
    return [word for word in terms(lower) if word not in PRONOUNS]


def _says(word: str, asked: set[str]) -> bool:
    """Whether ``word`` is one of the ``asked`` terms or a compound ending in one ("narrowboat" for "boat")."""
    return word in asked or any(len(term) >= MIN_SUFFIX and word.endswith(term) for term in asked)
