from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Session, TurnRecord
from components.context_window.phases import PHASES, VISIBLE_FROM


@pytest.fixture
def history(builtin):
    return builtin("workflow_history")


def turn(n: int, **kw) -> TurnRecord:
    return TurnRecord(
        turn=n,
        query=f"question {n}",
        plan="1. fetch data\n2. aggregate\n3. chart\n4. explain",
        tokens_in=1200,
        tokens_out=300,
        **kw,
    )


async def test_summaries_newest_first_with_outline_outcome_and_tokens(history, ctx_for):
    turns = [turn(1), turn(2, outcome="error"), turn(3, valid=False)]
    out = await history.contribute(1_000, ctx_for(session=Session(id="s", turns=turns)))
    assert out.placement == "context" and out.strategy == "full"
    outline = "\n  Plan: 1. fetch data → 2. aggregate → 3. chart → … (4 steps)"
    assert out.texts() == [
        "- Turn 2 (error; 1,200 in / 300 out tokens): question 2" + outline,
        "- Turn 1 (success; 1,200 in / 300 out tokens): question 1" + outline,
    ]


async def test_condense_keeps_fewer_turns_dropping_the_oldest(history, ctx_for, tokens_used):
    ctx = ctx_for(session=Session(id="s", turns=[turn(i) for i in range(1, 8)]))
    full = await history.contribute(2_000, ctx)
    smaller = await history.condense(full, tokens_used(full) // 2, ctx)
    assert smaller.strategy == "fewer_turns" and tokens_used(smaller) <= tokens_used(full) // 2
    assert smaller.texts()[0].startswith("- Turn 7") and smaller.texts() == full.texts()[: len(smaller.texts())]
    assert (await history.condense(full, 5, ctx)).metadata[
        "reason"
    ] == "5 tokens cannot hold the header and the newest turn"


async def test_max_turns_option(history, ctx_for):
    ctx = ctx_for(session=Session(id="s", turns=[turn(i) for i in range(1, 30)]), config={"max_turns": 3})
    out = await history.contribute(5_000, ctx)
    assert [t.split(" (")[0] for t in out.texts()] == ["- Turn 29", "- Turn 28", "- Turn 27"]


@pytest.mark.parametrize("current", PHASES)
async def test_only_turns_the_phase_may_see(history, ctx_for, current):
    turns = [turn(i + 1, phase=p) for i, p in enumerate(PHASES)] + [turn(9)]  # turn 9 predates IFOC: phase None
    out = await history.contribute(5_000, ctx_for(session=Session(id="s", turns=turns, phase=current)))
    shown = {t.split(" (")[0] for t in out.texts()}
    expected = {f"- Turn {PHASES.index(p) + 1}" for p in VISIBLE_FROM[current]} | {"- Turn 9"}
    assert shown == expected


async def test_unknown_phase_is_a_clear_error(history, ctx_for):
    with pytest.raises(ValueError, match="unknown IFOC phase 'done'"):
        await history.contribute(100, ctx_for(session=Session(id="s", turns=[turn(1)], phase="done")))


@settings(max_examples=60, deadline=None)
@given(queries=st.lists(st.text(max_size=300), max_size=15), budget=st.integers(-1, 600))
def test_contribute_never_exceeds_any_budget(builtin, ctx_for, tokens_used, run, queries, budget):
    history = builtin("workflow_history")
    turns = [TurnRecord(i, q, plan=q[::-1]) for i, q in enumerate(queries, 1)]
    out = run(history.contribute(budget, ctx_for(session=Session(id="s", turns=turns))))
    assert tokens_used(out) <= max(budget, 0)
