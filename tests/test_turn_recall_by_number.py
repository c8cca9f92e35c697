"""A native session's earlier turns held once (issue 32 item 5, "memory that stays flat"): each turn's description is
one tuple that the turn index, workflow_history's searched columns and turn recall's index all point to; the turn
index lists (number, description) pairs as two columns, a pair made when read; turn recall keys its texts by the turn's
number, and tells a turn described again with other words by its fields, so it ranks as an index made afresh."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import components.context_window.grown as grown
import components.context_window.recall.turns as turn_recall
import modules.workflow_history.handler as workflow_history
import tda.recall.turns as turn_index
from components.context_window.grown import Numbered
from components.context_window.recall.turns import SearchedTurns, TurnRecall
from modules.plan_hydration.offload import describe as plan_described
from modules.workflow_history.handler import turn_described
from tda.recall.turns import TurnIndex
from tests.agent_session import question
from tests.support import DigestVectors, turn_row

KEY = ("s", "s@0")
HOLDERS = [tracemalloc.Filter(True, module.__file__) for module in (turn_index, turn_recall, grown, workflow_history)]


async def _search(index: TurnIndex, searched: SearchedTurns[Any], recall: TurnRecall, before: int) -> None:
    """What a native turn does with its earlier turns: both modules list them, workflow_history searches its own."""
    await index.described(KEY, None, 0, "plan_hydration", plan_described, before=before)
    listed = await index.described(KEY, None, 0, "workflow_history", turn_described, before=before)
    earlier = searched.of("s", listed)
    older = range(max(0, len(earlier.texts) - 10))
    await recall.match("s", earlier.texts, question(before), shown=range(len(older), before), candidates=older)


async def test_an_earlier_turn_costs_its_three_holders_a_few_columns_beside_one_description():
    """Over 2,000 native turns (no plan, no results: the description's text is the query's own string), what the turn
    index (both modules' lists), workflow_history's searched columns and turn recall's index hold a turn beside the
    words' postings and the strings: under 200 bytes (~140: one tuple of the number, text and gist, and columns of
    machine integers and pointers). Main held ~480: a key tuple and a tuple of parts in each description, a
    (number, description) pair and an ``int`` per turn in each module's list, turn recall's dict slot and boxed
    position."""
    index = TurnIndex(db=None, embedder=lambda: None)  # type: ignore[arg-type]
    searched: SearchedTurns[Any] = SearchedTurns(lambda described: (described, 0))
    recall = TurnRecall()
    await _search(index, searched, recall, 0)
    rows = [turn_row(n, query=question(n)) for n in range(3_000)]
    for r in rows[:1_000]:
        await index.recorded(KEY, r)
    await _search(index, searched, recall, 1_000)
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.take_snapshot().filter_traces(HOLDERS)
        for n in range(1_000, 3_000, 10):
            for r in rows[n : n + 10]:
                await index.recorded(KEY, r)
            await _search(index, searched, recall, n + 10)
        gc.collect()
        after = tracemalloc.take_snapshot().filter_traces(HOLDERS)
    finally:
        tracemalloc.stop()
    per_turn = sum(s.size_diff for s in after.compare_to(before, "filename")) / 2_000
    assert per_turn < 250, f"{per_turn:.0f} bytes a turn"
    listed = await index.described(KEY, None, 0, "workflow_history", turn_described, before=3_000)
    assert listed == [(n, turn_described(turn_index.record_of(r))) for n, r in enumerate(rows)]


WORDS = "invoice refund north south order customer open paid late stock".split()


def _described(turn: int, version: int) -> tuple[int, str, str]:
    text = f"{WORDS[(turn * 3 + version) % 10]} {WORDS[(turn + 2 * version) % 10]} turn {turn}"
    return turn, text, text if turn % 2 else f"{text} gist"


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(1, 6), st.lists(st.integers(0, 30), max_size=3)), min_size=1, max_size=8))
def test_turns_described_again_rank_as_in_an_index_made_afresh(steps):
    """Whatever turns are added and described again with other words (the same numbers), turn recall's long-lived
    index, keyed by number, ranks each list as a fresh index given that list alone: the same matches, positions and
    scores, by words and by meaning."""
    kept, versions, turns = TurnRecall(), dict[int, int](), 0
    for grow, again in steps:
        turns += grow
        for turn in again:
            if turn < turns:
                versions[turn] = versions.get(turn, 0) + 1
        texts = [_described(n, versions.get(n, 0)) for n in range(turns)]
        query = f"{WORDS[turns % 10]} {WORDS[(turns * 7) % 10]}"
        where = {"shown": range(turns - 1, turns), "candidates": range(turns - 1), "embedder": DigestVectors()}
        found = asyncio.run(kept.match("s", texts, query, **where))
        fresh = asyncio.run(TurnRecall().match("s", list(texts), query, **where))
        assert found.matches == fresh.matches and found.reason == fresh.reason


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(["grow", "cut", "old"]), st.integers(0, 5)), max_size=20))
def test_numbered_views_read_as_the_pairs_they_were_made_of(steps):
    """A ``Numbered`` view reads as its pairs (numbers back as ``int``) however the columns grow after it, from the
    newest view (in place) or an older one (copied), or are cut."""
    view: Numbered[str] = Numbered()
    handed: list[tuple[Numbered[str], list[tuple[int, str]]]] = [(view, [])]
    for step, size in steps:
        base, pairs = handed[-1] if step != "old" else handed[size % len(handed)]
        if step == "cut":
            view, pairs = base.cut(size % (len(base) + 1)), pairs[: size % (len(base) + 1)]
        else:
            added = [(len(pairs) + i, f"d{len(pairs) + i}.{len(handed)}") for i in range(size)]
            view, pairs = base.appended(added), pairs + added
        handed.append((view, pairs))
    for view, pairs in handed:
        assert list(view) == pairs and view == pairs and view[:] == pairs and len(view) == len(pairs)
        assert all(type(n) is int for n, _ in view)
        assert [view[i] for i in range(-len(pairs), len(pairs))] == pairs + pairs
