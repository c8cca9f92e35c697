"""The service's index of a session's earlier turns (``tda/recall/turns.py``) holds one entry per turn for the
session's life: what each entry costs beyond the modules' descriptions, and that each kind reads its own."""

from __future__ import annotations

import gc
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


async def test_a_recorded_turn_costs_its_index_a_few_columns_beyond_its_descriptions():
    """Two modules search a session's turns: each recorded turn's entry (its validity, phase and the two kinds'
    descriptions, here one shared object and a number) adds under 40 bytes (~20: a byte of flags, two of phase, a
    pointer per kind; an entry object with its tuple and dict slot was ~175 on main) and no object the collector
    tracks (main: one a turn, walked by every full pass for the session's life), and each kind lists its own
    descriptions."""
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
        gc.collect()  # what a turn leaves for the collector is not what it holds
        first = tracemalloc.take_snapshot().filter_traces(held_here)
        tracked = len(gc.get_objects())
        for r in rows[1_000:]:
            await index.recorded(KEY, r)
        gc.collect()
        tracked = len(gc.get_objects()) - tracked
        after = tracemalloc.take_snapshot().filter_traces(held_here)
    finally:
        tracemalloc.stop()
    per_turn = sum(s.size_diff for s in after.compare_to(first, "filename")) / 2_000
    assert sum(s.size_diff for s in first.compare_to(before, "filename")) > 0
    assert per_turn < 40, f"{per_turn:.0f} bytes a turn"
    assert tracked < 100, f"{tracked} more objects tracked after 2,000 turns"
    numbers = await index.described(KEY, None, 0, "number", described_as_number, before=3_000)
    plans = await index.described(KEY, None, 0, "plan", described_as_plan, before=3_000)
    assert numbers == [(n, n * 10) for n in range(3_000)]
    assert plans == [(n, SHARED) for n in range(3_000)]


def described_if_tenth(turn: TurnRecord) -> Any:
    """A kind with nothing to search in most turns (plan_hydration's: a turn without tool results)."""
    return f"results of turn {turn.turn}" if turn.turn % 10 == 0 else None


async def test_a_kind_lists_only_the_turns_it_has_something_to_search_in():
    """The turns a kind described as ``None`` are not in its lists (main: a number and a pointer each, listed every turn
    for the session's life), listed afresh or extended a turn at a time."""
    index = TurnIndex(db=None, embedder=lambda: None)  # type: ignore[arg-type]
    assert await index.described(KEY, None, 0, "results", described_if_tenth, before=0) == []
    for n in range(300):
        await index.recorded(KEY, turn_row(n))
        listed = await index.described(KEY, None, 0, "results", described_if_tenth, before=n + 1)
    expected = [(n, f"results of turn {n}") for n in range(0, 300, 10)]
    assert list(listed) == expected and len(listed.numbers) == len(listed.items) == 30
    fresh = TurnIndex(db=None, embedder=lambda: None)  # type: ignore[arg-type]
    await fresh.described(KEY, None, 0, "results", described_if_tenth, before=0)
    for n in range(300):
        await fresh.recorded(KEY, turn_row(n))
    assert list(await fresh.described(KEY, None, 0, "results", described_if_tenth, before=300)) == expected
