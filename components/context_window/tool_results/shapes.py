"""Tool results as a turn records them (``TurnRecord.results``): the shapes modules and the application agree on.

Accepted result shapes (one mapping per tool call):

* table:   ``{"tool": str, "columns": [str, ...], "rows": [[value, ...], ...]}`` — each row as long as
  ``columns``;
* records: ``{"tool": str, "rows": [{column: value, ...}, ...]}`` — columns in first-seen key order
  (or as given in ``"columns"``), missing keys are nulls;
* text:    ``{"tool": str, "text": str}``.

Any other mapping is kept as its JSON text. ``tool`` is optional (default ``"tool"``). Values are
plain JSON scalars; ``None`` and ``""`` count as nulls. plan_hydration distils them
(``modules/plan_hydration/distillation.py``); the application checks a result's shape with ``parse_result``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_ROW_TYPES = (list, tuple)


@dataclass(frozen=True, slots=True)
class Table:
    tool: str
    columns: tuple[str, ...]
    rows: Sequence[Sequence[Any]]


@dataclass(frozen=True, slots=True)
class Text:
    tool: str
    text: str


def parse_result(raw: Mapping[str, Any], position: int) -> Table | Text:
    """One result in one of the accepted shapes; a malformed table says which row to fix."""
    if not isinstance(raw, Mapping):
        raise ValueError(
            f"result {position} must be a mapping such as {{'tool': ..., 'rows': [...]}}, got {type(raw).__name__}"
        )
    tool = str(raw.get("tool") or "tool")
    rows = raw.get("rows")
    if isinstance(rows, Sequence) and not isinstance(rows, str):
        if rows and all(isinstance(r, Mapping) for r in rows):
            return _records(tool, raw.get("columns"), rows)
        columns = tuple(str(c) for c in raw.get("columns") or ())
        width = len(columns)
        bad = next((i for i, row in enumerate(rows, 1) if type(row) not in _ROW_TYPES or len(row) != width), None)
        if bad is not None:
            raise ValueError(
                f"result {position} ({tool}): row {bad} must be a list of {width} values matching "
                f"'columns', got {rows[bad - 1]!r:.80}"
            )
        return Table(tool, columns, rows)
    if isinstance(raw.get("text"), str):
        return Text(tool, raw["text"])
    return Text(tool, json.dumps({k: v for k, v in raw.items() if k != "tool"}, default=str, ensure_ascii=False))


def _records(tool: str, columns: Sequence[str] | None, records: Sequence[Mapping[str, Any]]) -> Table:
    names = list(columns or dict.fromkeys(k for r in records for k in r))
    return Table(tool, tuple(map(str, names)), [tuple(r.get(c) for c in names) for r in records])
