"""Distilling tool results for the next turn: verbatim, metadata only, or statistics plus a sample.

plan_hydration's helper (the folder is a package). The result shapes it reads are the component's
``tool_results.shapes`` (``TurnRecord.results``), parsed by ``parse_result``.

Levels, per result: *full* (verbatim) while within the window type's ``distillation`` thresholds
(``max_rows``, ``max_chars``). Over them, a table with more than ``L1_ROWS`` rows or ``L1_CHARS``
characters gets *analytical* distillation (per-column statistics over ALL rows plus a stratified
sample); anything else over them becomes *metadata* only (row count and columns, or the text's size).
When the distilled results together exceed ``L2_TOTAL_CHARS``, samples shrink to ``L2_SAMPLE_ROWS``
(level *L2*); statistics are kept.
"""

from __future__ import annotations

import math
import operator
import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal

from components.context_window.fitting import clip
from components.context_window.tool_results.shapes import Table, Text

L1_ROWS = 100
L1_CHARS = 50_000
L2_TOTAL_CHARS = 200_000
SAMPLE_ROWS = 50
L2_SAMPLE_ROWS = 25
TYPE_PROBE = 50
NUMERIC_SHARE = 0.8
TOP_CATEGORIES = 10

Kind = Literal["numeric", "temporal", "categorical"]
Level = Literal["full", "metadata", "analytical"]
_TEMPORAL_NAME = re.compile(r"(date|time|timestamp|day|week|month|created|updated|(^|_)(at|on|ts)$)", re.I)


# --- sizes and verbatim rendering ------------------------------------------------------------------


def cell(value: Any) -> str:
    if value is None:
        return ""
    return str(value).replace("\n", " ")


def render_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], numbers: Sequence[int] | None = None) -> str:
    lines = [" | ".join(columns)]
    for k, row in enumerate(rows):
        line = " | ".join(map(cell, row))
        lines.append(f"[{numbers[k]}] {line}" if numbers is not None else line)
    return "\n".join(lines)


def chars_over(table: Table, limit: int) -> bool:
    """Whether the verbatim rendering exceeds ``limit`` characters; stops counting once it does."""
    total = len(" | ".join(table.columns))
    for row in table.rows:
        total += 1 + sum(len(cell(v)) for v in row) + 3 * max(len(row) - 1, 0)
        if total > limit:
            return True
    return False


# --- column typing and statistics (always over every row) ---------------------------------------------


def _is_null(v: Any) -> bool:
    return v is None or v == ""


_BIG = 1e150  # numbers beyond this are treated as text: sums of them would overflow a float


def as_number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        return None
    try:
        x = float(v.strip() if isinstance(v, str) else v)
    except (ValueError, OverflowError):
        return None
    return x if math.isfinite(x) and abs(x) < _BIG else None


def as_datetime(v: Any) -> datetime | None:
    if isinstance(v, datetime):
        return v
    if isinstance(v, date):
        return datetime(v.year, v.month, v.day)
    if isinstance(v, str) and len(v) >= 7 and v[:4].isdigit():
        try:
            return datetime.fromisoformat(v.strip())
        except ValueError:
            try:
                return datetime.strptime(v.strip(), "%Y-%m")
            except ValueError:
                return None
    return None


def numeric_values(values: list[Any]) -> list[float]:
    """The finite numbers among ``values`` (numbers as-is, numeric strings parsed)."""
    plain = values and set(map(type, values)) <= {int, float} and min(values) > -_BIG and max(values) < _BIG
    if plain and all(map(math.isfinite, values)):
        return values  # the common case: plain finite numbers, no per-value parsing
    return [x for x in map(as_number, values) if x is not None]


def column_kind(name: str, values: Sequence[Any]) -> Kind:
    """Numeric if over 80% of the first 50 non-null values parse as numbers; temporal by name or parse."""
    probe: list[Any] = []
    for v in values:
        if not _is_null(v):
            probe.append(v)
            if len(probe) == TYPE_PROBE:
                break
    if probe and sum(as_number(v) is not None for v in probe) > NUMERIC_SHARE * len(probe):
        return "numeric"
    if _TEMPORAL_NAME.search(name):
        return "temporal"
    if probe and sum(as_datetime(v) is not None for v in probe) > NUMERIC_SHARE * len(probe):
        return "temporal"
    return "categorical"


def fmt(value: float) -> str:
    x = float(value)
    if x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    if abs(x) >= 1000:
        return f"{x:,.2f}"
    return f"{x:.6g}"


def numeric_line(values: list[float], unparsed: int) -> str:
    s = sorted(values)
    n = len(s)
    mean = statistics.fmean(s)
    p25, median, p75 = statistics.quantiles(s, n=4, method="inclusive") if n > 1 else (s[0], s[0], s[0])
    stddev = _stdev(s, mean)
    figures = dict(min=s[0], max=s[-1], mean=mean, median=median, p25=p25, p75=p75, stddev=stddev, sum=math.fsum(s))
    text = ", ".join(f"{k} {fmt(v)}" for k, v in figures.items())
    return text + (f"; {unparsed:,} non-numeric" if unparsed else "")


def _stdev(values: list[float], mean: float) -> float:
    """Sample standard deviation. statistics.stdev is exact but ~100x slower; a two-pass fsum, scaled
    by the largest magnitude so squares cannot overflow, is accurate enough for a summary."""
    n = len(values)
    if n < 2:
        return 0.0
    scale = max(abs(values[0]), abs(values[-1])) or 1.0
    deviations = [(x - mean) / scale for x in values]
    return scale * math.sqrt(math.fsum(map(operator.mul, deviations, deviations)) / (n - 1))


def temporal_line(values: list[Any]) -> str:
    distinct = set(map(str, values))
    # parse each distinct value once: dates repeat a lot, and parsing is the slow part
    parsed = [(d, text) for d, text in zip(map(as_datetime, distinct), distinct, strict=True) if d is not None]
    try:
        lo, hi = (min(parsed)[1], max(parsed)[1]) if parsed else (min(distinct), max(distinct))
    except TypeError:  # naive and aware timestamps mixed: fall back to text order (ISO sorts in time order)
        lo, hi = min(distinct), max(distinct)
    unparsed = len(distinct) - len(parsed)
    note = f"; {unparsed:,} distinct values unparsed" if parsed and unparsed else ""
    return f"range {lo} → {hi}, {len(distinct):,} distinct{note}"


def categorical_line(values: list[Any]) -> str:
    counts = Counter(map(str, values))
    n = len(values)
    top = ", ".join(f"{clip(v, 60)} {100 * c / n:.1f}%" for v, c in counts.most_common(TOP_CATEGORIES))
    return f"{len(counts):,} distinct; top: {top}"


def column_statistics(table: Table) -> tuple[str, ...]:
    """One line per column: its kind, null count and figures over all rows."""
    lines = []
    for j, name in enumerate(table.columns):
        column = list(map(operator.itemgetter(j), table.rows))  # C-level; zip(*rows) is slow for long tables
        present = [v for v in column if v is not None and v != ""]
        kind = column_kind(name, present)
        nulls = len(column) - len(present)
        head = f"- {name} ({kind}, {len(present):,} values" + (f", {nulls:,} null)" if nulls else ")")
        if not present:
            lines.append(f"{head}: all null")
            continue
        if kind == "numeric":
            numbers = numeric_values(present)
            body = numeric_line(numbers, len(present) - len(numbers))
        elif kind == "temporal":
            body = temporal_line(present)
        else:
            body = categorical_line(present)
        lines.append(f"{head}: {body}")
    return tuple(lines)


# --- stratified sample -------------------------------------------------------------------------------


def sample_plan(n: int, size: int) -> tuple[list[int], int]:
    """Row indices of a stratified sample and K: the first K, one row from the middle of each of
    ``size - 2K`` equal interior strata, the last K (K = size // 5, at least 1). All rows when n <= size."""
    if n <= size:
        return list(range(n)), n
    if size <= 2:
        return [0, n - 1][: max(size, 0)], min(max(size, 0), 1)
    edge = max(1, size // 5)
    interior, span = size - 2 * edge, n - 2 * edge
    middle = [edge + int((i + 0.5) * span / interior) for i in range(interior)]
    return [*range(edge), *middle, *range(n - edge, n)], edge


def describe_sample(n: int, indices: Sequence[int], edge: int) -> str:
    if len(indices) == n:
        return f"all {n:,} rows"
    return f"{len(indices):,} of {n:,} rows: first {edge}, {len(indices) - 2 * edge} evenly spaced, last {edge}"


# --- the distilled result ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Distilled:
    """A result with its level and, for tables, its statistics (computed once, re-rendered cheaply)."""

    position: int
    result: Table | Text
    level: Level
    stats: tuple[str, ...] = ()
    _renders: dict[tuple[str, int], str] = field(default_factory=dict, compare=False, repr=False)

    def render(self, *, level: Level | None = None, sample_rows: int = SAMPLE_ROWS) -> str:
        """The block for ``level`` (default: the chosen one); memoised, as the budget ladder asks repeatedly."""
        key = (level or self.level, sample_rows)
        text = self._renders.get(key)
        if text is None:
            text = self._renders[key] = self._render(*key)
        return text

    def _render(self, level: Level, sample_rows: int) -> str:
        r = self.result
        if isinstance(r, Text):
            size = f"text, {len(r.text):,} characters"
            if level == "full":
                return f"### Result {self.position}: {r.tool} ({size})\n{r.text}"
            size += f", {r.text.count(chr(10)) + 1:,} lines"
            return f"### Result {self.position}: {r.tool} ({size}; too large to include: metadata only)"
        shape = f"{len(r.rows):,} rows × {len(r.columns)} columns"
        if level == "full":
            return f"### Result {self.position}: {r.tool} ({shape})\n{render_rows(r.columns, r.rows)}"
        if level == "metadata":
            return (
                f"### Result {self.position}: {r.tool} ({shape}; too large to include: metadata only)\n"
                f"Columns: {', '.join(r.columns)}"
            )
        return self._analytical(sample_rows)

    def _analytical(self, sample_rows: int) -> str:
        r = self.result
        assert isinstance(r, Table)
        n = len(r.rows)
        parts = [
            f"### Result {self.position}: {r.tool} ({n:,} rows × {len(r.columns)} columns; "
            f"analytical distillation: statistics over all {n:,} rows, then a sample)",
            *self.stats,
        ]
        indices, edge = sample_plan(n, sample_rows)
        if indices:
            parts.append(f"Sample ({describe_sample(n, indices, edge)}; [row number]):")
            parts.append(render_rows(r.columns, [r.rows[i] for i in indices], [i + 1 for i in indices]))
        return "\n".join(parts)


def base_level(result: Table | Text, max_rows: int, max_chars: int) -> Level:
    """The level the thresholds call for (before the L2 check and any budget squeeze)."""
    if isinstance(result, Text):
        return "full" if len(result.text) <= max_chars else "metadata"
    rows = len(result.rows)
    if rows <= max_rows and not chars_over(result, max_chars):
        return "full"
    if rows > L1_ROWS or chars_over(result, L1_CHARS):
        return "analytical"
    return "metadata"


def distill(result: Table | Text, position: int, max_rows: int, max_chars: int) -> Distilled:
    """Choose the level and, for tables, compute the statistics (a budget squeeze may need them)."""
    stats = column_statistics(result) if isinstance(result, Table) else ()
    return Distilled(position, result, base_level(result, max_rows, max_chars), stats)


def apply_l2(items: Sequence[Distilled]) -> tuple[list[str], bool]:
    """Render every result; when together they exceed L2_TOTAL_CHARS, cut samples to L2_SAMPLE_ROWS."""
    blocks = [d.render() for d in items]
    if sum(map(len, blocks)) <= L2_TOTAL_CHARS:
        return blocks, False
    cut = [
        d.render(sample_rows=L2_SAMPLE_ROWS) if d.level == "analytical" else b
        for d, b in zip(items, blocks, strict=True)
    ]
    return cut, True
