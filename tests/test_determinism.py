"""Same input, same output, whatever was assembled before in the process (module caches keyed by content)."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.context_window.base import (
    AssemblyContext,
    ChampionCase,
    InMemoryMessages,
    Message,
    Session,
    TurnRecord,
)
from components.context_window.handler import ContextWindowHandler
from components.context_window.providers import StaticCases
from modules.conversation_history.handler import RECALL_MARKER, TAIL_MARKER
from tda.builtins import DEFAULT_TYPES, module_registry
from tests.support import conversation, make_ctx, make_tools

BALANCED = DEFAULT_TYPES["balanced"]
UNHURRIED_S = 120.0
"""The time limits of these handlers (each module's, the history's wait for recall's index): out of reach, so a
window on a loaded machine (a fresh handler's first index, built in the time a warm one needs none) is the same
window. What a limit met does is tested apart (tests/test_history_recall.py, tests/test_window_digests.py)."""


def unhurried_handler() -> ContextWindowHandler:
    registry = module_registry(entry_point_group=None).load()
    registry.get("conversation_history").recall_wait_s = UNHURRIED_S
    return ContextWindowHandler(registry, timeout_s=UNHURRIED_S)


def outcome(result: Any) -> tuple[Any, ...]:
    """What must not depend on earlier assemblies: everything but timing and the prefix-cache report."""
    snap = result.snapshot.comparable()
    snap.pop("prefix_stable_tokens")
    return result.messages, result.tools, snap


async def fresh(ctx: AssemblyContext) -> tuple[Any, ...]:
    handler = unhurried_handler()
    return outcome(await handler.assemble(ctx, BALANCED))


def with_session(ctx: AssemblyContext, **changes: Any) -> AssemblyContext:
    session = ctx.session
    fields = {f: getattr(session, f) for f in session.__dataclass_fields__}
    return AssemblyContext(**{**ctx.__dict__, "session": Session(**{**fields, **changes})})


def balance_turn(balance: float) -> TurnRecord:
    result = {"tool": "accounts", "columns": ["account", "balance"], "rows": [["acme", balance], ["globex", 5.0]]}
    return TurnRecord(turn=1, query="Balances?", results=(result,))


async def test_plan_hydration_serves_the_values_not_a_cached_shape():
    handler = unhurried_handler()
    base = make_ctx(limit=16_000, messages=conversation(1))
    first = with_session(base, turns=[balance_turn(100.00)])
    second = with_session(base, turns=[balance_turn(999.99)])
    await handler.assemble(first, BALANCED)
    later = outcome(await handler.assemble(second, BALANCED))
    assert "999.99" in str(later[0]) and "100.00" not in str(later[0])
    assert later == await fresh(second)


async def test_rag_serves_current_feedback_on_a_repeated_query():
    handler = unhurried_handler()
    good = ChampionCase("c1", "How did EMEA do?", 0.9, plan="Query sales by region.", answer="EMEA grew 12 percent.")
    before = AssemblyContext(**{**make_ctx(limit=16_000).__dict__, "cases": StaticCases([good])})
    rated = AssemblyContext(**{**before.__dict__, "cases": StaticCases([dataclasses.replace(good, feedback=-1)])})
    assert "EMEA grew" in str(outcome(await handler.assemble(before, BALANCED))[0])
    later = outcome(await handler.assemble(rated, BALANCED))
    assert "EMEA grew" not in str(later[0])
    assert later == await fresh(rated)


async def test_history_appended_to_the_same_list_is_read_anew():
    handler = unhurried_handler()
    messages = conversation(30, 60)
    ctx = make_ctx(limit=4_000, messages=messages, tools=make_tools(3))
    await handler.assemble(ctx, BALANCED)
    ctx.session.messages.append(Message("user", "one more thing about EMEA", turn=31))  # type: ignore[attr-defined]
    later = outcome(await handler.assemble(ctx, BALANCED))
    assert "one more thing about EMEA" in str(later[0])
    assert later == await fresh(ctx)


async def test_earlier_different_inputs_leave_no_trace():
    """One handler assembles a run of different sessions; each result equals a fresh process's."""
    handler = unhurried_handler()
    inputs = [
        make_ctx(limit=limit, messages=conversation(turns, 40), tools=make_tools(tools), query=f"question {i}")
        for i, (limit, turns, tools) in enumerate([(3_000, 20, 5), (50_000, 3, 0), (3_000, 25, 5), (8_000, 20, 12)])
    ]
    for ctx in inputs + inputs[::-1]:
        assert outcome(await handler.assemble(ctx, BALANCED)) == await fresh(ctx)


class Paged:
    """A third party's MessageSource over a list its application keeps appending to (like a store's cache)."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    @property
    def total(self) -> int:
        return len(self.messages)

    @property
    def last_turn(self) -> int:
        return self.messages[-1].turn if self.messages else 0

    async def page(self, cursor: Any, limit: int) -> Any:
        return await InMemoryMessages(self.messages).page(cursor, limit)


async def test_a_growing_history_source_is_read_anew_every_turn():
    """The same MessageSource object over a list that grew: each turn's window holds the newest exchange,
    as a fresh handler's does (the oracle: the history's own last messages)."""
    for make_source in (InMemoryMessages, Paged):
        handler = unhurried_handler()
        messages = conversation(30, 60)
        ctx = with_session(make_ctx(limit=4_000, tools=make_tools(3)), history=make_source(messages))
        for turn in range(31, 34):
            await handler.assemble(ctx, BALANCED)
            messages += [Message("user", f"newest question {turn}", turn=turn), Message("assistant", f"reply {turn}")]
            later = outcome(await handler.assemble(ctx, BALANCED))
            sent = [m["content"] for m in later[0]]
            # the newest exchange ends the history's stable part (older messages, if any, follow it behind a marker)
            end = next((i for i, c in enumerate(sent) if c.startswith((RECALL_MARKER, TAIL_MARKER))), len(sent) - 1)
            assert sent[end - 2 : end] == [f"newest question {turn}", f"reply {turn}"], make_source
            assert later == await fresh(ctx)


# --- in-place edits: every cache is keyed by content, so an edited input is never served from memory ------------

EDITS = st.sampled_from(["cell", "append_row", "drop_row", "rename_column", "slot_config"])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.floats(0, 1e6, allow_nan=False).map(lambda x: round(x, 2)), min_size=1, max_size=6),
    st.lists(EDITS, min_size=1, max_size=4),
    st.floats(0, 1e6, allow_nan=False).map(lambda x: round(x, 2) + 0.01),
)
async def test_inputs_edited_in_place_are_read_anew(balances, edits, fresh_value):
    """A library caller keeps its turn records and window type and edits them in place between turns (the
    previous turn's result rows, a module's options): the same handler's window equals a fresh handler's (the
    oracle: nothing remembered) after every edit."""
    handler = unhurried_handler()
    rows = [[f"account{i}", b] for i, b in enumerate(balances)]
    result = {"tool": "accounts", "columns": ["account", "balance"], "rows": rows}
    wtype = BALANCED.model_copy(deep=True)
    earlier = [TurnRecord(turn=n, query=f"Revenue of region {n}?", plan=f"Query region {n}.") for n in (1, 2)]
    base = make_ctx(limit=16_000, messages=conversation(3))
    ctx = with_session(base, turns=[*earlier, TurnRecord(turn=3, query="Balances?", results=(result,))])
    await handler.assemble(ctx, wtype)
    for edit in edits:
        if edit == "cell":
            rows[0][1] = fresh_value
        elif edit == "append_row":
            rows.append([f"account{len(rows)}", fresh_value])
        elif edit == "drop_row" and len(rows) > 1:
            rows.pop()
        elif edit == "rename_column":
            result["columns"][1] = "balance_eur"
        elif edit == "slot_config":
            wtype.modules["workflow_history"].config["max_turns"] = 1  # one earlier turn summarised, not two
        later = outcome(await handler.assemble(ctx, wtype))
        assert later == outcome(await unhurried_handler().assemble(ctx, wtype))
    if "cell" in edits:
        assert f"{fresh_value}" in str(later[0])
