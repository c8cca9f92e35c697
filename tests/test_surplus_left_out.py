"""A surplus recipient that left content out (a long history) is asked once more, in the fill, with all the room left:
not also in the surplus pass, whose window the fill replaced (an old gateway call's first step recalled a whole
window there, ranked and packed, for nothing: ~1.9 ms of ~16). The snapshot stays truthful: each module's allocation is
the one pass 3 gave it, less what it donated, plus what it received (the fill's room beyond it included)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.context_window.base import Contribution, Message, ToolSchema
from components.context_window.handler import ContextWindowHandler
from components.context_window.module_registry import ModuleRegistry
from components.context_window.snapshot import ContextWindowSnapshot
from components.context_window.token_estimator import REPLY_PRIMING
from tda.builtins import DEFAULT_TYPES
from tests.agent_session import TOOLS, orders, question, turn_messages
from tests.support import Scripted, make_ctx, words, wtype
from tests.test_full_window import agent_history

TOOL_SCHEMAS = [ToolSchema(f["name"], f["description"], f["parameters"]) for f in (t["function"] for t in TOOLS)]


class LeavesOut(Scripted):
    """Fits its blocks to the budget and says when some did not fit (``left_out``), as conversation_history does."""

    async def contribute(self, budget: int, ctx: Any) -> Contribution:
        made = await super().contribute(budget, ctx)
        return made.replace(left_out=len(made.units) < len(self.blocks))


@contextmanager
def asked(registry: ModuleRegistry) -> Iterator[dict[str, list[int]]]:
    """The budgets each of ``registry``'s modules is asked to contribute within, in order, while inside."""
    budgets: dict[str, list[int]] = defaultdict(list)
    wrapped = []
    for module in registry.modules.values():
        inner = module.contribute

        async def contribute(budget: int, ctx: Any, inner: Any = inner, module_id: str = module.module_id) -> Any:
            budgets[module_id].append(budget)
            return await inner(budget, ctx)

        module.contribute = contribute  # type: ignore[method-assign]
        wrapped.append(module)
    try:
        yield budgets
    finally:
        for module in wrapped:
            del module.contribute


def assert_adds_up(snap: ContextWindowSnapshot, budgets: dict[str, list[int]]) -> None:
    """Each module's allocation is pass 3's (the budget it was first asked within), less what it donated, plus what it
    received; what it sends fits it; the modules' use, the query and the reply priming make the total."""
    for usage in snap.modules:
        if usage.status == "skipped":
            continue
        first = budgets[usage.module_id][0] if budgets[usage.module_id] else 0
        assert usage.allocated == first - usage.surplus_donated + usage.surplus_received, usage
        assert usage.used <= usage.allocated or usage.surplus_received == 0, usage  # the floor may exceed its own
    assert snap.total_used == sum(m.used for m in snap.modules) + snap.query_tokens + REPLY_PRIMING
    assert snap.total_used <= snap.available_budget


async def test_a_recipient_that_left_content_out_is_asked_in_the_fill_not_twice():
    """On main it was asked three times: at its allocation, with the surplus (a window the fill replaced), in the
    fill."""
    history = LeavesOut("hist", [words(50, f"h{i}") for i in range(200)])
    quiet = Scripted("quiet", [words(20, "q")])  # uses a sliver of its share: a donor
    t = wtype({"hist": (30, 0, 50, 80), "quiet": (50, 0, 60, 70)})
    registry = ModuleRegistry.from_modules([history, quiet])
    with asked(registry) as budgets:
        snap = (await ContextWindowHandler(registry).assemble(make_ctx(limit=8_000), t)).snapshot
    usage = snap.module("hist")
    allocation, fill = budgets["hist"]
    assert usage.surplus_received > 0 and snap.module("quiet").surplus_donated > 0
    assert fill > allocation + snap.module("quiet").surplus_donated  # the fill offers all the room left
    assert usage.used > 0.9 * fill
    assert any("hist left content out: asked in the fill" in line for line in snap.decisions)
    assert_adds_up(snap, budgets)


async def test_a_recipient_that_left_nothing_out_is_still_asked_with_the_surplus():
    whole = Scripted("whole", [words(50, f"w{i}") for i in range(200)])  # Scripted never says it left content out
    quiet = Scripted("quiet", [words(20, "q")])
    t = wtype({"whole": (30, 0, 50, 80), "quiet": (50, 0, 60, 70)})
    registry = ModuleRegistry.from_modules([whole, quiet])
    with asked(registry) as budgets:
        snap = (await ContextWindowHandler(registry).assemble(make_ctx(limit=8_000), t)).snapshot
    allocation, surplus = budgets["whole"]
    assert surplus == allocation + snap.module("whole").surplus_received  # its grant, asked for in pass 3b
    assert_adds_up(snap, budgets)


def agent_chat(turns: int) -> list[Message]:
    """``turns`` of tests/agent_session.py's agent turns (question, tool call, a 20-row result, answer)."""
    chat = []
    for turn in range(1, turns + 1):
        for message in turn_messages(turn):
            content = orders(turn, 20) if message["role"] == "tool" else message["content"] or ""
            chat.append(Message.from_chat({**message, "content": content}))
    return chat


@pytest.mark.parametrize("turns", [40, 90])
async def test_an_old_agent_calls_first_step_recalls_twice_not_three_times(builtin_registry, turns):
    """The old gateway session's first step (Balanced at 16K: the long-conversation rule halves the history, the
    others leave most of their shares unused): the history's window at the rule's target, then the fill's; main
    recalled a third window in between, with the surplus."""
    ctx = make_ctx(
        messages=agent_chat(turns),
        tools=TOOL_SCHEMAS,
        query=question(turns + 1),
        current_turn=turns + 1,
    )
    with asked(builtin_registry) as budgets:
        assembled = await ContextWindowHandler(builtin_registry, timeout_s=60).assemble(ctx, DEFAULT_TYPES["balanced"])
    snap = assembled.snapshot
    history = snap.module("conversation_history")
    assert history.condensed and history.surplus_received > history.surplus_donated > 0
    assert len(budgets["conversation_history"]) == 2
    assert history.used > 0.8 * (snap.available_budget - snap.query_tokens)  # the fill's window was sent
    assert_adds_up(snap, budgets)


@pytest.mark.parametrize("type_id", sorted(DEFAULT_TYPES))
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(
    data=st.data(),
    limit=st.sampled_from([4_000, 16_000]),
    with_tools=st.booleans(),
    asked_turn=st.integers(1, 40),
)
async def test_every_modules_figures_add_up(builtin_registry, type_id, data, limit, with_tools, asked_turn):
    """Invariant, over generated agent histories, every shipped type, tools offered or not: the snapshot's
    allocation, donations and receipts add up for every module (the fill's room included), and the total is the
    modules' use with the query's."""
    history = data.draw(agent_history(limit))
    query = f"Which orders of customer CUST-{asked_turn:03d} were open? " + json.dumps({"asked": asked_turn})
    ctx = make_ctx(messages=history, tools=TOOL_SCHEMAS if with_tools else (), limit=limit, query=query)
    with asked(builtin_registry) as budgets:
        assembled = await ContextWindowHandler(builtin_registry, timeout_s=60).assemble(ctx, DEFAULT_TYPES[type_id])
    assert_adds_up(assembled.snapshot, budgets)
