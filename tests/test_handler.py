"""The five passes, each action and condition, overrides, output order and prefix stability."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from components.context_window.base import Document, TurnRecord
from components.context_window.budget import BudgetExceeded
from components.context_window.handler import ContextWindowHandler
from components.context_window.module_registry import ModuleRegistry
from tests.support import Scripted, conversation, make_ctx, make_tools, words, wtype


def handler(*modules, timeout_s: float = 2.0) -> ContextWindowHandler:
    return ContextWindowHandler(ModuleRegistry.from_modules(modules), timeout_s=timeout_s)


BLOCKS = [words(50, f"w{i}") for i in range(40)]


async def test_skipped_modules_share_is_redistributed_proportionally():
    a, b = Scripted("a", BLOCKS), Scripted("b", BLOCKS)
    only_chat = Scripted("c", BLOCKS, profile_types=["llm_only"])
    t = wtype({"a": (30, 0, 100, 50), "b": (10, 0, 100, 40), "c": (20, 0, 100, 30), "missing": (20, 0, 100, 20)})
    snap = (await handler(a, b, only_chat).assemble(make_ctx(), t)).snapshot
    assert snap.module("c").status == "skipped" and "not applicable" in snap.module("c").reason
    assert snap.module("missing").reason == "not installed"
    # 40 points freed, shared 3:1 between a and b
    assert snap.module("a").target_pct == pytest.approx(60)
    assert snap.module("b").target_pct == pytest.approx(20)


async def test_deactivated_and_inactive_modules_are_skipped_with_reasons():
    a, b, c = Scripted("a", BLOCKS), Scripted("b", BLOCKS), Scripted("c", BLOCKS)
    registry = ModuleRegistry.from_modules([a, b, c])
    registry.deactivate("b")
    t = wtype({"a": (30, 0, 100, 50), "b": (10, 0, 100, 40), "c": (10, 0, 100, 30)})
    t = t.model_copy(update={"modules": {**t.modules, "c": t.modules["c"].model_copy(update={"active": False})}})
    snap = (await ContextWindowHandler(registry).assemble(make_ctx(), t)).snapshot
    assert snap.module("b").reason == "deactivated"
    assert snap.module("c").reason == "inactive in this window type"
    assert b.calls == [] and c.calls == []
    assert snap.module("a").target_pct == pytest.approx(50)  # both skipped shares (10 + 10) went to a


async def test_an_inactive_slot_frees_its_share_for_the_others():
    a, b, c = Scripted("a", BLOCKS), Scripted("b", BLOCKS), Scripted("c", BLOCKS)
    t = wtype({"a": (30, 0, 100, 50), "b": (10, 0, 100, 40), "c": (22, 0, 100, 30)})
    t = t.model_copy(update={"modules": {**t.modules, "c": t.modules["c"].model_copy(update={"active": False})}})
    snap = (await handler(a, b, c).assemble(make_ctx(), t)).snapshot
    # 22 points freed, shared 3:1 like the active targets
    assert snap.module("a").target_pct == pytest.approx(30 + 22 * 0.75)
    assert snap.module("b").target_pct == pytest.approx(10 + 22 * 0.25)
    assert any("redistributed 22%" in line for line in snap.decisions)


async def test_first_turn_forces_full_tools_and_raises_target_to_max():
    tools = Scripted("tool_definitions", BLOCKS)
    hist = Scripted("conversation_history", BLOCKS)
    rule = {"condition": {"type": "first_turn"}, "action": {"type": "force_full", "module": "tool_definitions"}}
    t = wtype({"tool_definitions": (20, 0, 40, 85), "conversation_history": (70, 10, 80, 80)}, rules=[rule])
    snap = (await handler(tools, hist).assemble(make_ctx(), t)).snapshot
    assert snap.adjustments_fired == ["first_turn -> force_full tool_definitions"]
    assert tools.seen_directives[0].force_full is True
    assert snap.module("tool_definitions").target_pct == pytest.approx(40)
    assert sum(m.target_pct for m in snap.modules) <= 100.0 + 1e-6
    later = (await handler(tools, hist).assemble(make_ctx(messages=conversation(3)), t)).snapshot
    assert later.adjustments_fired == []


async def test_no_documents_transfers_share_and_documents_attached_does_not():
    docs, hist = Scripted("document_context", BLOCKS), Scripted("conversation_history", BLOCKS)
    rule = {
        "condition": {"type": "no_documents_attached"},
        "action": {"type": "transfer", "module": "document_context", "to": "conversation_history"},
    }
    t = wtype({"document_context": (10, 0, 20, 60), "conversation_history": (30, 0, 60, 80)}, rules=[rule])
    snap = (await handler(docs, hist).assemble(make_ctx(), t)).snapshot
    assert snap.module("conversation_history").target_pct == pytest.approx(40)
    assert snap.module("document_context").status == "skipped"  # nothing left to contribute with
    with_doc = make_ctx(documents=[Document("d", "d.txt", "text")])
    snap = (await handler(docs, hist).assemble(with_doc, t)).snapshot
    assert snap.adjustments_fired == [] and snap.module("document_context").target_pct == pytest.approx(10)


@pytest.mark.parametrize(("completed_turns", "fires"), [(9, False), (10, True)])
async def test_long_conversation_honours_threshold_and_condenses(completed_turns, fires):
    hist = Scripted("conversation_history", BLOCKS)
    rule = {
        "condition": {"type": "long_conversation", "threshold": 10},
        "action": {"type": "condense", "module": "conversation_history", "strategy": "summarize", "to_pct": 50},
    }
    t = wtype({"conversation_history": (50, 0, 60, 80)}, rules=[rule])
    snap = (await handler(hist).assemble(make_ctx(messages=conversation(completed_turns)), t)).snapshot
    assert bool(snap.adjustments_fired) is fires
    usage = snap.module("conversation_history")
    if fires:
        assert hist.seen_directives[0].condense_strategy == "summarize"
        first = usage.allocated - usage.surplus_received + usage.surplus_donated  # before the rule's cut
        assert hist.calls[:2] == [("contribute", first), ("condense", first // 2)]
        assert usage.condensed and snap.condensations[0].reason == "rule (summarize)"
        # nobody else wants the room the rule freed: it comes back to the history, which fills it again
        assert usage.surplus_received == usage.surplus_donated > 0
        assert usage.used > (usage.allocated - usage.surplus_received) // 2
    else:
        assert not usage.condensed and snap.condensations == []


async def test_room_a_module_leaves_unused_goes_to_the_history_a_rule_halved():
    """The Balanced default's long-conversation rule halves the history; what the others leave unused must not stay
    empty while the history is cut (it used to: 1,732 of 8,000 tokens sent at 8K)."""
    hist = Scripted("conversation_history", BLOCKS)
    quiet = Scripted("rag_context", BLOCKS[:1])  # uses one block of its share: a donor
    rule = {
        "condition": {"type": "long_conversation", "threshold": 10},
        "action": {"type": "condense", "module": "conversation_history", "strategy": "summarize", "to_pct": 50},
    }
    t = wtype({"conversation_history": (30, 0, 80, 80), "rag_context": (60, 0, 60, 70)}, rules=[rule], reserve=0)
    snap = (await handler(hist, quiet).assemble(make_ctx(messages=conversation(12), limit=8_000), t)).snapshot
    usage, rag = snap.module("conversation_history"), snap.module("rag_context")
    halved = usage.allocated - usage.surplus_received
    assert usage.condensed and usage.surplus_received > 0 and rag.surplus_donated > 0
    assert usage.used > halved  # beyond what the rule left it
    assert snap.total_used > snap.available_budget // 2  # the window is not mostly empty while history is cut
    assert snap.total_used <= snap.available_budget


class CondensesUpFront(Scripted):
    """Builds the rule's condensed result while contributing (as conversation_history does); ``honest=False``
    marks a result above the rule's target as condensed."""

    def __init__(self, module_id: str, blocks: list[str], honest: bool = True) -> None:
        super().__init__(module_id, blocks)
        self.honest = honest

    async def contribute(self, budget: int, ctx: Any) -> Any:
        target = ctx.directives.condense_to
        if target is None:
            return await super().contribute(budget, ctx)
        self.calls.append(("contribute", budget))
        return self._fit(target if self.honest else budget, ctx, strategy="fewer").replace(condensed=True)


@pytest.mark.parametrize("honest", [True, False])
async def test_a_condense_rule_is_offered_up_front_and_recorded_when_honoured(honest):
    hist = CondensesUpFront("conversation_history", BLOCKS, honest=honest)
    rule = {
        "condition": {"type": "long_conversation", "threshold": 2},
        "action": {"type": "condense", "module": "conversation_history", "to_pct": 40},
    }
    # a module that uses all its room and more: it takes what the rule frees, so the history stays cut
    busy = Scripted("rag_context", BLOCKS * 4)
    t = wtype({"conversation_history": (50, 0, 60, 80), "rag_context": (30, 0, 90, 70)}, rules=[rule])
    snap = (await handler(hist, busy).assemble(make_ctx(messages=conversation(3)), t)).snapshot
    usage = snap.module("conversation_history")
    allocated = usage.allocated + usage.surplus_donated  # before the rule's cut went to rag_context
    assert usage.surplus_received == 0 and snap.module("rag_context").surplus_received == usage.surplus_donated
    assert usage.condensed and usage.used <= allocated * 40 // 100
    (step,) = snap.condensations
    if honest:  # taken as it came: one call, recorded against the allocation the rule cut
        assert hist.calls == [("contribute", allocated)]
        assert (step.before, step.after) == (allocated, usage.used)
        assert step.reason == "rule (summarize), applied while contributing"
    else:  # above the target whatever it says: condensed by the orchestrator as any other
        assert hist.calls[-1] == ("condense", allocated * 40 // 100)
        assert step.reason == "rule (summarize)" and step.before > allocated * 40 // 100


async def test_condensed_means_nothing_without_a_rule():
    marked = CondensesUpFront("a", BLOCKS)
    snap = (await handler(marked).assemble(make_ctx(), wtype({"a": (50, 0, 60, 80)}))).snapshot
    assert not snap.module("a").condensed and snap.condensations == []


@pytest.mark.parametrize(("score", "fires"), [(0.90, True), (0.85, True), (0.84, False)])
async def test_high_confidence_rag_uses_signals_gathered_before_allocation(score, fires):
    rag = Scripted("rag_context", BLOCKS, signals={"top_score": score})
    tools = Scripted("tool_definitions", BLOCKS)
    rule = {
        "condition": {"type": "high_confidence_rag", "threshold": 0.85},
        "action": {"type": "reduce", "module": "tool_definitions", "by_pct": 50},
    }
    t = wtype({"rag_context": (20, 0, 40, 75), "tool_definitions": (20, 0, 40, 85)}, rules=[rule])
    snap = (await handler(rag, tools).assemble(make_ctx(messages=conversation(2)), t)).snapshot
    assert bool(snap.adjustments_fired) is fires
    expected_tools, expected_rag = (10, 30) if fires else (20, 20)
    assert snap.module("tool_definitions").target_pct == pytest.approx(expected_tools)
    assert snap.module("rag_context").target_pct == pytest.approx(expected_rag)


async def test_small_window_and_phase_conditions():
    tools, hist = Scripted("tool_definitions", BLOCKS), Scripted("conversation_history", BLOCKS)
    rules = [
        {
            "condition": {"type": "small_window", "threshold": 8192},
            "action": {"type": "reduce", "module": "tool_definitions", "by_pct": 100},
        },
        {
            "condition": {"type": "phase_is", "phase": "operate"},
            "action": {"type": "force_full", "module": "tool_definitions"},
        },
    ]
    t = wtype({"tool_definitions": (20, 0, 30, 85), "conversation_history": (40, 0, 60, 80)}, rules=rules)
    small = (await handler(tools, hist).assemble(make_ctx(limit=8000, messages=conversation(2)), t)).snapshot
    assert small.adjustments_fired == ["small_window(8192) -> reduce tool_definitions by 100%"]
    operate = (await handler(tools, hist).assemble(make_ctx(messages=conversation(2), phase="operate"), t)).snapshot
    assert operate.adjustments_fired == ["phase_is(operate) -> force_full tool_definitions"]


@pytest.mark.parametrize("behaviour", ["raise", "hang"])
async def test_failing_module_never_breaks_the_turn_and_its_budget_goes_to_others(behaviour):
    bad = Scripted("bad", BLOCKS, behaviour=behaviour)
    good = Scripted("good", BLOCKS)
    t = wtype({"bad": (40, 0, 60, 90), "good": (20, 0, 60, 50)})
    snap = (await handler(bad, good, timeout_s=0.05).assemble(make_ctx(limit=8000), t)).snapshot
    usage = snap.module("bad")
    assert usage.status == ("failed" if behaviour == "raise" else "timeout")
    assert "scripted failure" in usage.reason or "longer than" in usage.reason
    assert snap.module("good").status == "ok"
    assert snap.module("good").surplus_received > 0
    assert snap.module("good").used > snap.module("good").allocated - snap.module("good").surplus_received


OWN = [words(50, f"own{i}") for i in range(40)]
"""What a failing module holds: none of it is the others'."""


class FallingBack(Scripted):
    """Fails as ``behaviour`` says; its fallback sends its first block, or fails as ``fallback_behaviour`` says."""

    def __init__(self, *args: Any, fallback_behaviour: str = "first", **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.fallback_behaviour = fallback_behaviour

    async def fallback(self, budget, ctx):
        self.calls.append(("fallback", budget))
        assert not ctx.memo, "the failed call's memo is not handed on"
        if self.fallback_behaviour == "raise":
            raise RuntimeError("the fallback failed as well")
        if self.fallback_behaviour == "hang":
            await asyncio.sleep(3600)
        return self._made(self.blocks[:1])


@pytest.mark.parametrize("behaviour", ["raise", "hang"])
async def test_a_failed_modules_fallback_is_sent_in_its_place_and_the_rest_of_its_budget_goes_to_others(behaviour):
    bad = FallingBack("bad", OWN, behaviour=behaviour)
    good = Scripted("good", BLOCKS)
    t = wtype({"bad": (40, 0, 60, 90), "good": (20, 0, 60, 50)})
    assembled = await handler(bad, good, timeout_s=0.05).assemble(make_ctx(limit=8000), t)
    usage, sent = assembled.snapshot.module("bad"), "\n".join(m["content"] for m in assembled.messages)
    assert usage.status == ("failed" if behaviour == "raise" else "timeout")  # what happened stays said
    assert "its fallback was sent" in usage.reason
    assert bad.calls[-1] == ("fallback", usage.allocated + usage.surplus_donated)  # asked within its budget
    assert usage.used > 0 and OWN[0] in sent and OWN[1] not in sent
    assert assembled.snapshot.module("good").surplus_received > 0
    assert assembled.snapshot.total_used <= assembled.snapshot.available_budget


@pytest.mark.parametrize("fallback_behaviour", ["raise", "hang"])
async def test_a_fallback_that_fails_too_sends_nothing_and_says_so(fallback_behaviour):
    bad = FallingBack("bad", OWN, behaviour="raise", fallback_behaviour=fallback_behaviour)
    t = wtype({"bad": (40, 0, 60, 90), "good": (20, 0, 60, 50)})
    assembled = await handler(bad, Scripted("good", BLOCKS), timeout_s=0.05).assemble(make_ctx(limit=8000), t)
    usage = assembled.snapshot.module("bad")
    assert usage.status == "failed" and usage.used == 0
    assert f"its fallback {'failed' if fallback_behaviour == 'raise' else 'timeout'} too" in usage.reason
    assert not any(OWN[0] in m["content"] for m in assembled.messages)


async def test_a_module_returning_garbage_is_recorded_as_failed():
    class Garbage(Scripted):
        async def contribute(self, budget, ctx):
            return {"not": "a contribution"} if self.behaviour == "dict" else Contribution("x", units=(({"a": 1},),))

    from components.context_window.base import Contribution

    t = wtype({"bad": (30, 0, 60, 90), "worse": (30, 0, 60, 80), "good": (20, 0, 60, 50)})
    bad, worse = Garbage("bad", behaviour="dict"), Garbage("worse")
    snap = (await handler(bad, worse, Scripted("good", BLOCKS)).assemble(make_ctx(), t)).snapshot
    assert snap.module("bad").status == "failed" and "not a Contribution" in snap.module("bad").reason
    assert snap.module("worse").status == "failed" and "use str, Message or ToolSchema" in snap.module("worse").reason
    assert snap.module("good").status == "ok"


async def test_surplus_goes_from_under_users_to_condensable_modules_near_their_allocation():
    small = Scripted("small", [words(5)])
    full_a = Scripted("hungry", BLOCKS)
    full_b = Scripted("floor", BLOCKS, condensable=False)
    t = wtype({"small": (30, 0, 40, 90), "hungry": (20, 0, 50, 60), "floor": (20, 0, 50, 70)})
    snap = (await handler(small, full_a, full_b).assemble(make_ctx(limit=10_000), t)).snapshot
    donated = snap.module("small").surplus_donated
    received = snap.module("hungry").surplus_received
    assert donated > 0 and received == donated
    assert snap.module("floor").surplus_received == 0  # not condensable: not a recipient
    hungry = snap.module("hungry")
    assert hungry.allocated <= 0.5 * (snap.available_budget - snap.query_tokens - 3) + 1  # capped at max
    assert len(full_a.calls) == 2  # re-contributed with the larger budget
    assert sum(r.tokens for r in snap.reallocations) == 0


async def test_condensation_follows_the_order_then_trims_lowest_priority_whole_units():
    first = Scripted("first", BLOCKS, behaviour="ignore")  # cannot condense: will be trimmed
    second = Scripted("second", BLOCKS, behaviour="ignore")
    t = wtype({"first": (30, 0, 50, 30), "second": (30, 0, 50, 60)}, order=["second", "first"])
    snap = (await handler(first, second).assemble(make_ctx(limit=4000), t)).snapshot
    assert [c for c in first.calls + second.calls if c[0] == "condense"]
    assert snap.total_used <= snap.available_budget
    trims = [c for c in snap.condensations if c.strategy == "trim"]
    assert trims[0].module_id == "first"  # lowest priority is trimmed first


async def test_budget_exceeded_only_when_the_non_condensable_floor_cannot_fit():
    floor = Scripted("floor", [words(3000)], behaviour="ignore", condensable=False)
    t = wtype({"floor": (50, 0, 100, 95)})
    with pytest.raises(BudgetExceeded) as info:
        await handler(floor).assemble(make_ctx(limit=2000), t)
    assert info.value.floor_tokens > info.value.available
    assert "non-condensable floor" in str(info.value)
    snap = (await handler(floor).assemble(make_ctx(limit=8000), t)).snapshot
    assert snap.total_used <= snap.available_budget


async def test_huge_single_item_is_dropped_whole_not_cut():
    huge = Scripted("huge", behaviour="huge", huge_words=20_000)
    t = wtype({"huge": (50, 0, 100, 50)})
    result = await handler(huge).assemble(make_ctx(limit=4000), t)
    assert result.snapshot.module("huge").used == 0
    assert result.snapshot.total_used <= result.snapshot.available_budget


async def test_overrides_only_lower_the_limit_profile_then_session():
    t = wtype({"a": (50, 0, 100, 50)})
    a = Scripted("a", BLOCKS)
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({}, 16_000, "context"),
        ({"profile_limit": 12_000}, 12_000, "profile_override"),
        ({"profile_limit": 12_000, "session_limit": 9_000}, 9_000, "session_override"),
        ({"profile_limit": 9_000, "session_limit": 12_000}, 9_000, "profile_override"),
        ({"session_limit": 50_000}, 16_000, "context"),
    ]
    for overrides, effective, source in cases:
        snap = (await handler(a).assemble(make_ctx(**overrides), t)).snapshot
        assert snap.effective_limit == effective, overrides
        assert snap.available_budget == effective - effective * 10 // 100
        assert f"({source})" in snap.decisions[0]


async def test_output_is_stable_first_and_prefix_stability_is_measured():
    system = Scripted("system_prompt", ["You are stable."], placement="system", condensable=False)
    tools = Scripted("tool_definitions", ["unused"], placement="tools")
    context = Scripted("rag_context", ["per-turn context"], placement="context")
    t = wtype({"system_prompt": (10, 0, 20, 95), "rag_context": (10, 0, 20, 75), "tool_definitions": (10, 0, 20, 85)})
    h = handler(context, tools, system)
    first = await h.assemble(make_ctx(), t)
    roles = [m["role"] for m in first.messages]
    assert first.messages[0]["content"] == "You are stable."
    assert first.messages[-1] == {"role": "user", "content": "What should we do next?"}
    assert roles == ["system", "system", "system", "user"]
    assert first.snapshot.prefix_stable_tokens == 0
    second = await h.assemble(make_ctx(query="And then?"), t)
    assert second.snapshot.prefix_stable_tokens == first.snapshot.total_used - first.snapshot.query_tokens - 3


async def test_builtin_modules_produce_provider_ready_output(builtin_registry):
    from tda.builtins import DEFAULT_TYPES

    handler_ = ContextWindowHandler(builtin_registry)
    first = await handler_.assemble(make_ctx(tools=make_tools(6), limit=128_000), DEFAULT_TYPES["balanced"])
    assert [t["function"]["name"] for t in first.tools] == [f"tool_{i}" for i in range(6)]
    assert first.tools[0]["function"]["parameters"]["properties"]["arg_0"]["description"]  # full schemas
    later_ctx = make_ctx(messages=conversation(3), tools=make_tools(6), limit=128_000)
    later = await handler_.assemble(later_ctx, DEFAULT_TYPES["balanced"])
    assert later.tools == first.tools  # full schemas on every turn they fit, in the same order (prompt caches hit)
    assert later.messages[0]["role"] == "system"
    assert [m["role"] for m in later.messages[-7:]] == ["user", "assistant"] * 3 + ["user"]
    assert later.messages[-1]["content"] == later_ctx.query


async def test_turn_records_count_as_completed_turns():
    hist = Scripted("conversation_history", BLOCKS)
    rule = {
        "condition": {"type": "long_conversation", "threshold": 2},
        "action": {"type": "condense", "module": "conversation_history"},
    }
    t = wtype({"conversation_history": (50, 0, 60, 80)}, rules=[rule])
    turns = [TurnRecord(turn=i, query=f"q{i}") for i in (1, 2)]
    snap = (await handler(hist).assemble(make_ctx(turns=turns), t)).snapshot
    assert snap.turn == 3 and snap.adjustments_fired


async def test_a_turn_continues_with_its_tool_loop_after_the_query_and_counts_it():
    import dataclasses

    from components.context_window.base import Message

    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    loop = (
        Message("assistant", "", turn=3, tool_calls=(call,)),
        Message("tool", words(200, "row"), turn=3, tool_call_id="c1"),
    )
    hist = Scripted("conversation_history", BLOCKS)
    t = wtype({"conversation_history": (60, 0, 90, 80)})
    plain = await handler(hist).assemble(make_ctx(limit=4_000), t)
    ctx = dataclasses.replace(make_ctx(limit=4_000), continuation=loop)
    out = await handler(hist).assemble(ctx, t)
    assert [m["role"] for m in out.messages[-3:]] == ["user", "assistant", "tool"]
    assert out.messages[-1]["tool_call_id"] == "c1" and out.messages[-3]["content"] == ctx.query
    assert out.snapshot.query_tokens > plain.snapshot.query_tokens
    assert out.snapshot.total_used <= out.snapshot.available_budget
    assert out.snapshot.module("conversation_history").used < plain.snapshot.module("conversation_history").used
    # A loop larger than the window (issue 32, session 49): its result's beginning, noted, and nothing older.
    result = words(5000, "row")
    huge = dataclasses.replace(ctx, continuation=(loop[0], Message("tool", result, tool_call_id="c1")))
    cut = await handler(hist).assemble(huge, t)
    assert cut.snapshot.total_used <= cut.snapshot.available_budget
    assert [m["role"] for m in cut.messages[-3:]] == ["user", "assistant", "tool"]
    sent = cut.messages[-1]["content"]
    assert sent.endswith("is not shown]") and result.startswith(sent[: sent.index("\n[... the rest")])
    assert not any(m["content"] in BLOCKS for m in cut.messages)
    assert any("tool loop exceeds the room" in d for d in cut.snapshot.decisions)


def enum_tools(names: list[str]) -> list:
    from components.context_window.base import ToolSchema

    colours = ["red", "green", "blue", "cyan", "magenta", "yellow", "black", "white"]
    return [
        ToolSchema(
            name,
            f"Paint with {name}.",
            {
                "type": "object",
                "properties": {f"p{j}": {"type": "string", "enum": colours} for j in range(4)},
                "required": ["p0"],
            },
        )
        for name in names
    ]


async def test_prefix_stable_tokens_are_the_shared_prefix_as_charged(builtin_registry):
    """Oracle: the cookbook count of the system message (tests/oracle.py), the only item before the tools; the
    first window and a changed system prompt share nothing; an identical window shares all but the priming."""
    from tests.oracle import cookbook_message_tokens

    t = wtype({"system_prompt": (10, 0, 20, 95), "tool_definitions": (60, 0, 80, 85)})
    h = ContextWindowHandler(builtin_registry)
    names = ["paint_a", "paint_b", "paint_c", "paint_d"]

    def ctx(tool_names: list[str], prompt: str = "You paint things.") -> Any:
        return make_ctx(tools=enum_tools(tool_names), system_prompt=prompt, limit=50_000)

    first = await h.assemble(ctx(names), t)
    assert first.snapshot.prefix_stable_tokens == 0  # nothing to share with: a session's first window
    same = await h.assemble(ctx(names), t)
    assert same.snapshot.prefix_stable_tokens == same.snapshot.total_used - 3  # everything but the reply priming
    renamed = await h.assemble(ctx(["paint_x", "paint_y", *names[2:]]), t)
    system = [m for m in renamed.messages if m["role"] == "system"]
    assert len(system) == 1 and len(renamed.tools) == 4
    assert renamed.snapshot.prefix_stable_tokens == cookbook_message_tokens(system[0])
    other_prompt = await h.assemble(ctx(["paint_x", "paint_y", *names[2:]], prompt="You draw things."), t)
    assert other_prompt.snapshot.prefix_stable_tokens == 0  # the very first message differs
