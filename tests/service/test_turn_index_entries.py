"""The service's index of a session's earlier turns (``tda/recall/turns.py``) holds one entry per turn for the
session's life: what each entry costs beyond the modules' descriptions, and that each kind reads its own."""

from __future__ import annotations

import tracemalloc
from typing import Any

from components.context_window.base import TurnRecord
from tda.recall import turns as turn_index
from tda.recall.turns import TurnIndex
from tests.support import turn_row

KEY = ("s", "s@0")
SHARED = ("a description", "held by every turn")


def described_as_plan(turn: TurnRecord) -> Any:
    return SHARED


def described_as_number(turn: TurnRecord) -> Any:
    return turn.turn * 10


async def test_a_recorded_turn_costs_its_index_under_200_bytes_beyond_its_descriptions():
    """Two modules search a session's turns: each recorded turn's entry (its validity, phase and the two kinds'
    descriptions, here one shared object) adds under 200 bytes (~175; a dict per entry by kind made it ~300), and each
    kind lists its own descriptions."""
    index = TurnIndex(db=None, embedder=lambda: None)  # type: ignore[arg-type]
    for kind, describe in (("plan", described_as_plan), ("number", described_as_number)):
        assert await index.described(KEY, None, 0, kind, describe, before=0) == []  # the kinds asked for
    rows = [turn_row(n) for n in range(3_000)]
    held_here = [tracemalloc.Filter(True, turn_index.__file__)]
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot().filter_traces(held_here)
        for r in rows[:1_000]:
            await index.recorded(KEY, r)
        first = tracemalloc.take_snapshot().filter_traces(held_here)
        for r in rows[1_000:]:
            await index.recorded(KEY, r)
        after = tracemalloc.take_snapshot().filter_traces(held_here)
    finally:
        tracemalloc.stop()
    per_turn = sum(s.size_diff for s in after.compare_to(first, "filename")) / 2_000
    assert sum(s.size_diff for s in first.compare_to(before, "filename")) > 0
    assert per_turn < 200, f"{per_turn:.0f} bytes a turn"
    numbers = await index.described(KEY, None, 0, "number", described_as_number, before=3_000)
    plans = await index.described(KEY, None, 0, "plan", described_as_plan, before=3_000)
    assert numbers == [(n, n * 10) for n in range(3_000)]
    assert plans == [(n, SHARED) for n in range(3_000)]
