"""Property-based tests of the orchestrator's guarantees (docs/architecture.md, "Invariants the tests hold", 1-4)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from components.context_window.base import ContextModule, Message
from components.context_window.budget import BudgetExceeded
from components.context_window.handler import ContextWindowHandler
from components.context_window.module_registry import ModuleRegistry
from components.context_window.token_estimator import REPLY_PRIMING
from components.context_window.window_type import ContextWindowType
from tda.builtins import module_registry
from tests.fresh_builtins import new_builtins
from tests.oracle import cookbook_tokens, litellm_tools_tokens, text_tokens
from tests.support import Scripted, conversation, make_ctx, make_tools, tool_call_exchange, words

BEHAVIOURS = ["fit", "fit", "ignore", "raise", "hang", "huge"]
PLACEMENTS = ["system", "context", "tools", "history"]


@st.composite
def scripted_modules(draw: Any) -> list[Scripted]:
    count = draw(st.integers(1, 5))
    modules = []
    for i in range(count):
        n_blocks = draw(st.integers(0, 12))
        size = draw(st.integers(1, 400))
        modules.append(
            Scripted(
                f"m{i}",
                [words(size, f"b{i}x{j}") for j in range(n_blocks)],
                behaviour=draw(st.sampled_from(BEHAVIOURS)),
                condensable=draw(st.booleans()) if i else True,
                placement=draw(st.sampled_from(["system", "context"])),
                huge_words=draw(st.integers(100, 30_000)),
            )
        )
    return modules


@st.composite
def window_types(draw: Any, module_ids: list[str]) -> ContextWindowType:
    slots = {}
    for module_id in module_ids:
        lo, target, hi = sorted(draw(st.floats(0, 100, allow_nan=False)) for _ in range(3))
        slots[module_id] = {
            "active": draw(st.booleans()) if module_id != module_ids[0] else True,
            "target_pct": target,
            "min_pct": lo,
            "max_pct": hi,
            "priority": draw(st.integers(0, 100)),
        }
    active = [m for m, s in slots.items() if s["active"]]
    order = draw(st.permutations(active))[: draw(st.integers(0, len(active)))]
    rules = []
    if "conversation_history" in active:
        rules.append(
            {
                "condition": {"type": "long_conversation", "threshold": draw(st.integers(1, 20))},
                "action": {"type": "condense", "module": "conversation_history", "to_pct": draw(st.floats(1, 100))},
            }
        )
    if "tool_definitions" in active:
        rules.append(
            {"condition": {"type": "first_turn"}, "action": {"type": "force_full", "module": "tool_definitions"}}
        )
    return ContextWindowType.model_validate(
        {
            "id": "random",
            "name": "Random",
            "output_reserve_pct": draw(st.floats(0, 50)),
            "modules": slots,
            "condensation_order": list(order),
            "dynamic_adjustments": rules,
        }
    )


def history(draw: Any) -> list[Message]:
    turns = draw(st.integers(0, 30))
    messages: list[Message] = []
    for t in range(1, turns + 1):
        if draw(st.booleans()):
            messages += tool_call_exchange(t, f"call_{t}", draw(st.integers(1, 300)))
        else:
            messages += conversation(1, draw(st.integers(1, 200)))
    return messages


BUILTINS = ("system_prompt", "tool_definitions", "conversation_history")
"""Mixed into every scenario: new instances each example (tests/fresh_builtins.py), not a registry load each."""


@st.composite
def scenarios(draw: Any) -> tuple[list[ContextModule], ContextWindowType, Any]:
    modules: list[ContextModule] = draw(scripted_modules())
    modules += new_builtins(*BUILTINS)
    wtype = draw(window_types([m.module_id for m in modules]))
    ctx = make_ctx(
        messages=history(draw),
        tools=make_tools(draw(st.integers(0, 12))),
        limit=draw(st.one_of(st.integers(1_000, 6_000), st.integers(1_000, 1_000_000))),
        system_prompt=words(draw(st.integers(1, 1500)), "sys") + " {tools_context}",
    )
    return modules, wtype, ctx


def assert_counted_as_the_provider_counts(result: Any, model: str) -> None:
    """Recount the output with the independent oracles (tests/oracle.py), never the handler's estimator."""
    snap = result.snapshot
    messages_tokens = cookbook_tokens(result.messages, model)
    tools_charge = snap.total_used - messages_tokens
    if not result.tools:
        assert tools_charge == 0, "total_used differs from the cookbook count"
        return
    as_sent = sum(text_tokens(json.dumps(t, ensure_ascii=False, separators=(",", ":")), model) for t in result.tools)
    assert tools_charge >= as_sent, "tools charged below the JSON sent"
    assert tools_charge >= litellm_tools_tokens(result.tools, model), "tools charged below litellm's count"


def assert_tool_units_whole(messages: list[dict[str, Any]]) -> None:
    for i, m in enumerate(messages):
        if m.get("tool_calls"):
            answers = {x.get("tool_call_id") for x in messages[i + 1 : i + 1 + len(m["tool_calls"])]}
            assert answers == {c["id"] for c in m["tool_calls"]}, "a tool call lost its results"
        if m["role"] == "tool":
            callers = [p for p in messages[:i] if p.get("tool_calls")]
            assert callers and m["tool_call_id"] in {c["id"] for c in callers[-1]["tool_calls"]}, "orphan tool result"


async def assert_floor_alone_does_not_fit(modules: list[ContextModule], wtype: ContextWindowType, ctx: Any) -> None:
    """Re-run with every condensable module switched off: the floor must overflow on its own too.

    Non-condensable modules then get more budget, so their output can only grow: if even that fits,
    the original BudgetExceeded was wrong.
    """
    floor_ids = {m.module_id for m in modules if not m.manifest.capabilities.condensable}
    data = wtype.model_dump()
    for module_id, slot in data["modules"].items():
        slot["active"] = slot["active"] and module_id in floor_ids
    if not any(slot["active"] for slot in data["modules"].values()):
        data["modules"]["system_prompt"]["active"] = True  # the floor is then the query alone
    data["condensation_order"] = [m for m in data["condensation_order"] if m in floor_ids]
    floor_type = ContextWindowType.model_validate(data)
    try:
        await ContextWindowHandler(ModuleRegistry.from_modules(modules), timeout_s=0.1).assemble(ctx, floor_type)
    except BudgetExceeded:
        return
    raise AssertionError("BudgetExceeded although the non-condensable floor alone fits")


FAST = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@FAST
@given(scenarios())
async def test_never_over_budget_and_only_the_floor_may_fail(scenario):
    modules, wtype, ctx = scenario
    handler = ContextWindowHandler(ModuleRegistry.from_modules(modules), timeout_s=0.1)
    try:
        result = await handler.assemble(ctx, wtype)
    except BudgetExceeded as exc:
        event("floor exceeded")
        assert exc.floor_tokens > exc.available
        await assert_floor_alone_does_not_fit(modules, wtype, ctx)
        return
    snap = result.snapshot
    event("trimmed" if any(c.strategy == "trim" for c in snap.condensations) else "fits")
    assert snap.total_used <= snap.available_budget
    assert_counted_as_the_provider_counts(result, ctx.model)
    assert sum(m.used for m in snap.modules) + snap.query_tokens + REPLY_PRIMING == snap.total_used
    assert_tool_units_whole(result.messages)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios())
async def test_same_input_same_output(scenario):
    modules, wtype, ctx = scenario
    modules = [m for m in modules if getattr(m, "behaviour", "") != "hang"]  # a timeout races the clock
    if not any(m.module_id in wtype.active_ids for m in modules):
        return
    outcomes = []
    for _ in range(2):
        handler = ContextWindowHandler(ModuleRegistry.from_modules(modules))
        try:
            result = await handler.assemble(ctx, wtype)
        except BudgetExceeded as exc:
            outcomes.append(("exceeded", exc.floor_tokens, exc.available))
        else:
            outcomes.append((result.messages, result.tools, result.snapshot.comparable()))
    assert outcomes[0] == outcomes[1]


def test_each_scenario_gets_new_built_in_modules_as_a_registry_makes_them() -> None:
    """The built-ins are read once but built anew per example: nothing one example leaves in them reaches the next."""
    first, second = new_builtins(*BUILTINS), new_builtins(*BUILTINS)
    loaded = module_registry(entry_point_group=None).load()
    assert [m.module_id for m in first] == list(BUILTINS)
    assert [(type(m).__module__, type(m).__qualname__) for m in first] == [
        (type(loaded.modules[m]).__module__, type(loaded.modules[m]).__qualname__) for m in BUILTINS
    ]
    assert [m.manifest for m in first] == [loaded.modules[m].manifest for m in BUILTINS]
    assert not any(a is b for a, b in zip(first, second, strict=True))
