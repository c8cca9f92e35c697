"""Earlier turns' results as plan_hydration searches them (the turns it offloads to its recall index).

A turn is searched by words over its query, its plan and its results (each result's tool, columns and the first
``SEARCH_CHARS`` characters of its rows or text: a fact deep in a huge result is found through the statistics the
recalled distillation shows, not the search), and by meaning over short parts: the query with the plan's first
line, and each result's tool with its columns or first line. Built once per distinct turn (by content).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from components.context_window.base import TurnRecord
from components.context_window.fitting import clip
from components.context_window.session_cache import BoundedCache, content_key
from components.context_window.turn_recall import TurnText, turn_gist
from components.context_window.turn_results import Table, parse_result

from .distillation import cell

SEARCH_CHARS = 8_000
"""Characters of a result searched by words (its start: a table's columns and first rows, a text's opening)."""
PART_CHARS = 300
"""Characters of a part embedded: names and openings, which say what a result is about."""


@dataclass(frozen=True, slots=True)
class Searchable:
    text: TurnText
    chars: int
    """Characters of the turn's results (rows as rendered, estimated past ``SEARCH_CHARS``; texts whole): what
    ``recall_min_chars`` compares."""


def searchable(turn: TurnRecord, key: Hashable) -> Searchable | None:
    """The turn's searchable text and size; ``None`` when a result is malformed (it is never recalled)."""
    try:
        results = [parse_result(raw, i) for i, raw in enumerate(turn.results, 1)]
    except ValueError:
        return None
    words = [turn.query, turn.plan]
    parts = [turn_gist(turn)]
    chars = 0
    for r in results:
        if isinstance(r, Table):
            head = f"{r.tool}: {', '.join(r.columns)}"
            body, size = _rows_text(r)
        else:
            head = f"{r.tool}: {r.text.strip().splitlines()[0] if r.text.strip() else ''}"
            body, size = r.text[:SEARCH_CHARS], len(r.text)
        words += [head, body]
        parts.append(clip(head, PART_CHARS))
        chars += size
    return Searchable(TurnText(key, "\n".join(words), tuple(parts)), chars)


def _rows_text(table: Table) -> tuple[str, int]:
    """The rows as searched (up to ``SEARCH_CHARS``) and the size of all of them as rendered (rows past the searched
    ones estimated at the searched ones' average: rendering every row of a huge result costs more than the search)."""
    lines, shown = [], 0
    for row in table.rows:
        if shown >= SEARCH_CHARS:
            break
        line = " | ".join(map(cell, row))
        lines.append(line)
        shown += len(line) + 1
    size = shown if len(lines) == len(table.rows) else round(shown * len(table.rows) / len(lines))
    return "\n".join(lines)[:SEARCH_CHARS], size


class TurnKeys:
    """Content keys of turns. A turn's results may be large, and hashing them every turn for every earlier turn
    would cost more than the search: a key is kept for the record it was computed from (held here, so its id
    cannot be reused while the entry lives) and recomputed for any other record, equal or not."""

    def __init__(self, max_entries: int = 8_192) -> None:
        self._memo: BoundedCache[int, tuple[TurnRecord, str]] = BoundedCache(max_entries)

    def results(self, turn: TurnRecord) -> str:
        entry = self._memo.get(id(turn))
        if entry is not None and entry[0] is turn:
            return entry[1]
        return self._memo.put(id(turn), (turn, content_key(turn.results)))[1]

    def turn(self, turn: TurnRecord) -> Hashable:
        """Everything a turn's searchable text is made from."""
        return (turn.turn, turn.query, turn.plan, self.results(turn))
