"""Names a question asks about that its knowledge base never mentions: "Who wrote the Odyssey?" of a corpus of
elements, Bierce and Bible chapters, "... the PostgreSQL server ...?" of system manuals. A name has no synonym, so a
question naming what no chunk of the collections holds asks what they cannot answer, however near in meaning its
other words bring a passage (these reach cosine 0.26-0.36, above the module's floor of 0.25).

Only the clear cases count, since a word wrongly taken for an unknown name costs an answer:

* a capitalised word that qualifies a noun ("the Moabite widow", "Which Norse deity", "an Anglican priest") or names
  a region is a kind of thing, which a text names by its instance (Moab, Vanadis) and never by the adjective;
* a name counts as mentioned when the collections hold it without a suffix that makes people of a place
  ("the Israelites" of a text saying "Israel");
* an abbreviation ("FDL", "OOM") counts as mentioned when a chunk spells it out, word by word ("Free Documentation
  License", "out of memory": ``KnowledgeVocabulary.held_words``).

Product names are read by their shape (a capital inside the word, or capitals only), which no adjective has; so
they count in title case and before a noun too ("the PostgreSQL server")."""

from __future__ import annotations

import re
from collections.abc import Sequence

from components.context_window.relevance import STOPWORDS, names_a_kind, names_a_region, names_asked

_SHAPED = re.compile(r"\b(?:[A-Za-z]*[a-z][A-Z][A-Za-z]*|[A-Z]{2,}s?)\b")
"""A product name or an abbreviation by its shape: a capital after a small letter ("PostgreSQL", "NetworkManager"),
or capitals only ("OOM", "GPUs")."""
_JOINING = STOPWORDS | frozenset(
    "about after against among around before behind between but during into like near nor not off onto over since "
    "than through under until upon via within without".split()
)
"""Words that may follow a name without making it an adjective: a name before one of them is the thing itself."""
_PEOPLE_OF = ("ites", "ite", "ians", "ian", "ans", "an", "n", "s")
"""Suffixes that make people or things of a named place or person ("Israelites", "Moabite", "Assyrian")."""


def asked_names(query: str) -> list[str]:
    """The names ``query`` asks about, in order, once each: ``names_asked``'s that do not qualify a noun or name a
    region, and every product name or abbreviation by its shape."""
    names = [n for n in names_asked(query) if not (_qualifies(query, n) or names_a_kind(query, n))]
    names = [n for n in names if not names_a_region(query, n)]
    return list(dict.fromkeys([*names, *(m.group() for m in _SHAPED.finditer(query))]))


def _qualifies(query: str, name: str) -> bool:
    """Whether ``name`` stands before a noun in ``query`` as an adjective would ("the Moabite widow"): followed by
    a small word that joins nothing."""
    after = re.search(rf"\b{re.escape(name)}\s+([a-z]+)\b", query)
    return after is not None and after.group(1) not in _JOINING


def spellings(name: str) -> list[str]:
    """The forms of ``name`` a text mentioning it may hold: itself, and for a word of one capital, itself without
    a suffix of people or things of a place (never shorter than four letters)."""
    if not re.fullmatch(r"[A-Z][a-z]+", name):
        return [name]
    low = name.lower()
    return [name, *(low[: -len(s)] for s in _PEOPLE_OF if low.endswith(s) and len(low) - len(s) >= 4)]


def unknown_names(names: Sequence[str], held: set[str]) -> list[str]:
    """The ``names`` none of whose ``spellings`` the collections hold (``held``: those of them they do)."""
    return [n for n in names if not any(s in held for s in spellings(n))]
