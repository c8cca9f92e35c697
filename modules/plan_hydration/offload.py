"""Earlier turns' results as plan_hydration searches them (the turns it offloads to its recall index).

A turn is searched by words over its query, its plan and its results (each result's tool, columns and its first
``SEARCH_ROWS`` rows or ``SEARCH_CHARS`` characters: a fact deep in a huge result is found through the statistics
the recalled distillation shows, not the search), and by meaning over its gist (``recall.turns.turn_gist``: its
query and the plan's first step, one vector shared with workflow_history). Embedding each result's tool with its
columns or opening as well was measured and dropped: 87% answered either way on bench/tool_recall_bench.py
(minilm-int8), and a turn costs one embedding instead of two or more. Built once per distinct turn.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.context_window.base import TurnRecord
from components.context_window.recall.turns import TurnText, turn_gist
from components.context_window.session_cache import content_key
from components.context_window.tool_results.shapes import Table, parse_result

from .distillation import cell

SEARCH_CHARS = 8_000
SEARCH_ROWS = 64
"""Rows of a table searched by words: its columns and first rows say what it holds (ids and figures further down add
little to a search), and what is searched is what the turn's key reads, every turn, for every earlier turn."""
"""Characters of a result searched by words (its start: a table's columns and first rows, a text's opening)."""


@dataclass(frozen=True, slots=True)
class Searchable:
    text: TurnText
    chars: int
    """Characters of the turn's results (rows as rendered, estimated past ``SEARCH_CHARS``; texts whole): what
    ``recall_min_chars`` compares."""


def searchable(turn: TurnRecord) -> Searchable | None:
    """The turn's searchable text (keyed by its number) and size; ``None`` when a result is malformed (it is never
    recalled)."""
    try:
        results = [parse_result(raw, i) for i, raw in enumerate(turn.results, 1)]
    except ValueError:
        return None
    words = [turn.query, turn.plan]
    chars = 0
    for r in results:
        if isinstance(r, Table):
            head = f"{r.tool}: {', '.join(r.columns)}"
            body, size = _rows_text(r)
        else:
            opening = r.text[:SEARCH_CHARS].strip()
            head = f"{r.tool}: {opening.splitlines()[0] if opening else ''}"
            body, size = r.text[:SEARCH_CHARS], len(r.text)
        words += [head, body]
        chars += size
    return Searchable(TurnText(turn.turn, "\n".join(words), turn_gist(turn)), chars)


def _rows_text(table: Table) -> tuple[str, int]:
    """The rows as searched (up to ``SEARCH_ROWS`` and ``SEARCH_CHARS``) and the size of all of them as rendered
    (rows past the searched ones estimated at their average: rendering every row of a huge result costs more than
    the search)."""
    lines, shown = [], 0
    for row in table.rows[:SEARCH_ROWS]:
        if shown >= SEARCH_CHARS:
            break
        line = " | ".join(map(cell, row))
        lines.append(line)
        shown += len(line) + 1
    if not lines:
        return "", 0
    size = shown if len(lines) == len(table.rows) else round(shown * len(table.rows) / len(lines))
    return "\n".join(lines)[:SEARCH_CHARS], size


def search_key(turn: TurnRecord) -> Hashable:
    """What ``searchable`` reads of ``turn``: the key its searchable text is cached by."""
    return (turn.turn, turn.query, turn.plan, tuple(map(searched_part, turn.results)))


def describe(turn: TurnRecord) -> Searchable | None:
    """An older turn as the service keeps it for plan_hydration (``EarlierTurns``): its searchable text when it has
    results (the same text as when the module was handed the turn itself)."""
    return searchable(turn) if turn.results else None


def searched_part(raw: Any) -> Hashable:
    """What ``searchable`` reads of one raw result."""
    if not isinstance(raw, Mapping):
        return repr(raw)[:SEARCH_CHARS]
    rows = raw.get("rows")
    if isinstance(rows, Sequence) and not isinstance(rows, str):
        rest = {k: v for k, v in raw.items() if k != "rows"}
        return content_key(rest, len(rows), list(rows[:SEARCH_ROWS]))
    text = raw.get("text")
    if isinstance(text, str):
        return (str(raw.get("tool")), len(text), text[:SEARCH_CHARS])
    return content_key(raw)
