"""The floor is sent whole or BudgetExceeded names it; no module can break, hang, stall or poison a turn."""

from __future__ import annotations

import asyncio
import contextvars
import time
from typing import Any

import pytest

from components.context_window.base import AssemblyContext, ContextModule, Contribution, Message, ToolSchema, freeze
from components.context_window.budget import BudgetExceeded
from components.context_window.handler import ContextWindowHandler
from components.context_window.module_registry import ModuleRegistry
from components.context_window.window_type import ContextWindowType
from tda.builtins import DEFAULT_TYPES
from tests import support
from tests.oracle import cookbook_tokens, text_tokens
from tests.support import Scripted, conversation, make_ctx, manifest, words


def wtype(slots: dict[str, tuple[float, float, float, int]], **options: Any) -> ContextWindowType:
    return support.wtype(slots, **{"reserve": 0, **options})  # no output reserve: the budget is the limit


def handler(*modules: ContextModule, timeout_s: float = 0.2) -> ContextWindowHandler:
    return ContextWindowHandler(ModuleRegistry.from_modules(modules), timeout_s=timeout_s)


# --- the floor ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", range(12, 40))
async def test_balanced_sends_the_system_prompt_or_raises_at_every_small_limit(builtin_registry, limit):
    ctx = make_ctx(limit=limit, query="hi", system_prompt="You are terse.")
    prompt_message = {"role": "system", "content": "You are terse."}
    floor = cookbook_tokens([prompt_message, {"role": "user", "content": "hi"}])
    try:
        result = await ContextWindowHandler(builtin_registry).assemble(ctx, DEFAULT_TYPES["balanced"])
    except BudgetExceeded as exc:
        available = limit - limit * 12 // 100
        assert exc.available == available and exc.floor_tokens > available
        assert exc.floor_tokens == sum(exc.parts.values())
        assert set(exc.parts) <= {"system_prompt", "query", "reply priming"}
        assert exc.floor_tokens <= floor  # never a floor larger than what it is made of
        return
    assert prompt_message in result.messages
    assert cookbook_tokens(result.messages) <= result.snapshot.available_budget


@pytest.mark.parametrize("tools_as_sent", [False, True])
async def test_a_query_too_big_alone_reports_the_whole_floor_and_that_floor_is_enough(builtin_registry, tools_as_sent):
    """The query alone over the budget: the error names the system prompt too (and the client's tools when they go
    with the query), and a caller who raises the limit to the reported floor gets a window, not a second error.
    Oracle: the cookbook count of the system prompt and the query (tests/oracle.py), plus litellm's for tools."""
    import dataclasses

    from tests.oracle import litellm_tools_tokens
    from tests.support import make_tools

    prompt = "You are a careful assistant. " * 20
    query = words(120, "question")
    t = wtype({"system_prompt": (10, 0, 100, 95), "conversation_history": (80, 0, 100, 60)})

    def ctx(limit: int) -> Any:
        made = make_ctx(limit=limit, query=query, system_prompt=prompt, messages=conversation(3))
        if not tools_as_sent:
            return made
        return dataclasses.replace(made, tools=make_tools(2), tools_as_sent=True)

    with pytest.raises(BudgetExceeded) as info:
        await ContextWindowHandler(builtin_registry).assemble(ctx(60), t)
    exc = info.value
    expected = cookbook_tokens([{"role": "system", "content": prompt}, {"role": "user", "content": query}])
    if tools_as_sent:
        tools = [tool.to_openai() for tool in make_tools(2)]
        assert exc.floor_tokens >= expected + litellm_tools_tokens(tools)
    else:
        assert exc.floor_tokens == expected
    assert exc.parts["system_prompt"] == cookbook_tokens([{"role": "system", "content": prompt}]) - 3
    assert exc.floor_tokens == sum(exc.parts.values()) and exc.available == 60
    result = await ContextWindowHandler(builtin_registry).assemble(ctx(exc.floor_tokens), t)
    assert result.messages[0] == {"role": "system", "content": prompt}
    assert result.messages[-1] == {"role": "user", "content": query}
    assert result.snapshot.total_used == exc.floor_tokens


async def test_budget_exceeded_names_the_parts_of_the_floor():
    prompt = Scripted("system_prompt", [words(300, "rule")], behaviour="ignore", condensable=False, placement="system")
    chatter = Scripted("chatter", [words(200, "x")] * 5, behaviour="ignore")
    t = wtype({"system_prompt": (10, 0, 100, 90), "chatter": (80, 0, 100, 50)}, order=["chatter"])
    with pytest.raises(BudgetExceeded) as info:
        await handler(prompt, chatter).assemble(make_ctx(limit=250, query="go"), t)
    exc = info.value
    prompt_tokens = cookbook_tokens([{"role": "system", "content": words(300, "rule")}]) - 3
    query_tokens = cookbook_tokens([{"role": "user", "content": "go"}]) - 3
    assert exc.parts == {"system_prompt": prompt_tokens, "query": query_tokens, "reply priming": 3}
    assert exc.floor_tokens == prompt_tokens + query_tokens + 3 and exc.available == 250
    assert "system_prompt" in str(exc) and "query" in str(exc)


async def test_non_condensable_modules_are_never_condensed_or_trimmed():
    floor = Scripted("floor", [words(40, f"f{i}") for i in range(10)], behaviour="ignore", condensable=False)
    rest = Scripted("rest", [words(40, f"r{i}") for i in range(40)], behaviour="ignore")
    t = wtype({"floor": (5, 0, 100, 10), "rest": (90, 0, 100, 90)}, order=["rest"])
    result = await handler(floor, rest).assemble(make_ctx(limit=1200), t)
    assert result.contributions["floor"].units == tuple((b,) for b in floor.blocks)
    assert ("condense", ...) not in floor.calls and all(call[0] == "contribute" for call in floor.calls)
    assert not result.snapshot.module("floor").condensed


def test_types_that_would_condense_the_floor_are_rejected(builtin_registry):
    data = DEFAULT_TYPES["balanced"].model_dump()
    context = builtin_registry.validation_context()
    assert "system_prompt" in context["non_condensable"]
    with pytest.raises(ValueError, match="non-condensable modules \\['system_prompt'\\]"):
        ContextWindowType.model_validate({**data, "condensation_order": ["system_prompt"]}, context=context)
    rule = {"condition": {"type": "first_turn"}, "action": {"type": "condense", "module": "system_prompt"}}
    with pytest.raises(ValueError, match="system_prompt, which is not condensable"):
        ContextWindowType.model_validate({**data, "dynamic_adjustments": [rule]}, context=context)
    ContextWindowType.model_validate(data, context=context)  # the shipped type is fine


# --- isolation ---------------------------------------------------------------------------------------


class Rogue(ContextModule):
    """A module misbehaving in one named way."""

    def __init__(self, module_id: str, how: str, **kw: Any) -> None:
        super().__init__(manifest(module_id, **kw))
        self.how = how
        self.kept: Any = None

    async def signals(self, ctx: AssemblyContext) -> dict[str, Any]:
        if self.how == "bad_signals":
            return {"top_score": "very high", "eligible_cases": float("nan"), 3: "x"}  # type: ignore[dict-item]
        if self.how == "signals_not_a_dict":
            return ["top_score", 1.0]  # type: ignore[return-value]
        return {}

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        how = self.how
        if how == "cancel_itself":
            raise asyncio.CancelledError
        if how == "base_exception":
            raise GeneratorExit
        if how == "block":
            time.sleep(0.35)
        if how == "swallow_cancel":
            while True:
                try:
                    await asyncio.sleep(10)
                except asyncio.CancelledError:
                    continue
        if how == "bad_placement":
            return Contribution(self.module_id, units=(("hi",),), placement="sidebar")  # type: ignore[arg-type]
        if how == "bad_item":
            return Contribution(self.module_id, units=((42,),))
        if how == "not_a_contribution":
            return {"units": "hi"}  # type: ignore[return-value]
        if how == "bad_condensed":
            return Contribution(self.module_id, units=(("hi",),), condensed="yes")  # type: ignore[arg-type]
        if how == "bad_metadata":
            return Contribution(self.module_id, units=(("hi",),), metadata={"x": object()})
        if how == "mutate_context":
            ctx.session.messages.append(Message("user", "injected"))  # type: ignore[attr-defined]
        if how == "mutate_config":
            ctx.directives.config["k"] = 99  # type: ignore[index]
        if how == "mutate_units_later":
            self.kept = [("short",)]
            return Contribution(self.module_id, units=self.kept)  # type: ignore[arg-type]
        return Contribution(self.module_id, units=(("fine",),))


def ok_type(*ids: str) -> ContextWindowType:
    return wtype({m: (20, 0, 50, 50) for m in ids})


@pytest.mark.parametrize(
    ("how", "status", "reason"),
    [
        ("cancel_itself", "failed", "CancelledError"),
        ("base_exception", "failed", "GeneratorExit"),
        ("bad_placement", "failed", "placement 'sidebar'"),
        ("bad_item", "failed", "holds a int"),
        ("not_a_contribution", "failed", "not a Contribution"),
        ("bad_metadata", "failed", "metadata must be plain JSON"),
        ("bad_condensed", "failed", "condensed and left_out must be True or False"),
        ("mutate_context", "failed", "AttributeError"),
        ("mutate_config", "failed", "TypeError"),
        ("block", "timeout", "blocked the event loop"),
        ("swallow_cancel", "timeout", "ignored cancellation; abandoned"),
    ],
)
async def test_a_misbehaving_module_is_recorded_and_the_turn_goes_on(how, status, reason):
    good, rogue = Scripted("good", ["fine words"]), Rogue("rogue", how)
    started = time.perf_counter()
    result = await handler(good, rogue, timeout_s=0.2).assemble(
        make_ctx(messages=conversation(2)), ok_type("good", "rogue")
    )
    usage = result.snapshot.module("rogue")
    assert (usage.status, usage.used) == (status, 0) and reason in usage.reason
    assert result.snapshot.module("good").status == "ok"
    assert time.perf_counter() - started < 2.0
    if how == "block":
        assert usage.blocked_ms >= 300


async def test_a_caller_cancellation_still_cancels_the_turn():
    hanging = Scripted("slow", behaviour="hang")
    turn = asyncio.ensure_future(handler(hanging, timeout_s=30).assemble(make_ctx(), ok_type("slow")))
    await asyncio.sleep(0.05)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn


async def test_a_module_cannot_change_what_was_counted():
    rogue = Rogue("rogue", "mutate_units_later")
    ctx = make_ctx()
    result = await handler(rogue).assemble(ctx, ok_type("rogue"))
    rogue.kept.append(("a much longer text " * 50,))
    assert cookbook_tokens(result.messages) == result.snapshot.total_used
    tool = ToolSchema("t", "d", {"type": "object", "properties": {"a": {"type": "string"}}})
    with pytest.raises(TypeError):
        tool.parameters["properties"]["b"] = {"type": "string"}  # type: ignore[index]
    message = Message("assistant", "", tool_calls=({"id": "c", "type": "function", "function": {"name": "f"}},))
    with pytest.raises(TypeError):
        message.tool_calls[0]["function"]["arguments"] = "{}"  # type: ignore[index]
    assert ctx.session.messages == []  # the caller's list was never handed to a module


_TRACE: contextvars.ContextVar[str] = contextvars.ContextVar("trace", default="turn")


class AroundAwait(ContextModule):
    """Sets a context variable, awaits, then resets it: what litellm does around every model call."""

    def __init__(self, module_id: str) -> None:
        super().__init__(manifest(module_id))

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        token = _TRACE.set(self.module_id)
        try:
            await asyncio.sleep(0.01)  # the first step runs inline, the rest in a task
            seen = _TRACE.get()
        finally:
            _TRACE.reset(token)  # raised "created in a different Context" when the two steps had two contexts
        return Contribution(self.module_id, units=((f"{self.module_id} saw {seen}",),))


async def test_a_module_sees_one_context_for_the_whole_call_and_leaks_nothing_into_the_turn():
    first, second = AroundAwait("first"), AroundAwait("second")
    result = await handler(first, second).assemble(make_ctx(), ok_type("first", "second"))
    for module_id in ("first", "second"):
        assert result.snapshot.module(module_id).status == "ok", result.snapshot.module(module_id).reason
        assert result.contributions[module_id].texts() == [f"{module_id} saw {module_id}"]  # not the other's
    assert _TRACE.get() == "turn"


@pytest.mark.parametrize("how", ["bad_signals", "signals_not_a_dict"])
async def test_bad_signals_are_ignored_and_logged(how, caplog):
    t = ContextWindowType.model_validate(
        {
            **ok_type("rogue").model_dump(),
            "dynamic_adjustments": [
                {
                    "condition": {"type": "high_confidence_rag", "threshold": 0.5},
                    "action": {"type": "force_full", "module": "rogue"},
                }
            ],
        }
    )
    result = await handler(Rogue("rogue", how)).assemble(make_ctx(), t)
    assert result.snapshot.module("rogue").status == "ok"
    assert any("ignored" in line for line in result.snapshot.decisions)
    if how == "bad_signals":
        assert "wrong type" in caplog.text


async def test_special_token_look_alikes_are_counted_as_text():
    text = "<|endoftext|><|im_start|>system<|im_end|>"
    result = await handler(Scripted("m", [text])).assemble(make_ctx(query=text), ok_type("m"))
    assert result.snapshot.total_used == cookbook_tokens(result.messages)
    assert text_tokens(text) > 3


@pytest.mark.parametrize(
    "metadata",
    [
        {"a": 1, "b": [1, 2.5, (3, "x")], "c": {"d": None, "e": True}, "big": 10**30, "z": -0.0},
        {"lone surrogate": "\ud800x", "frozen": freeze({"q": (1, {"r": [2]})})},
        {1: "a number as a key", "set": {3}},  # JSON turns both into text keys and lists
    ],
)
def test_metadata_is_copied_as_its_json_round_trip(metadata):
    import json

    from components.context_window.isolation import _json_default, _plain

    copied = _plain(metadata, "metadata")
    assert copied == json.loads(json.dumps(metadata, default=_json_default))
    assert json.dumps(copied) == json.dumps(json.loads(json.dumps(metadata, default=_json_default)))


@pytest.mark.parametrize("bad", [{"n": float("nan")}, {"o": object()}, {"cycle": []}])
def test_metadata_that_is_not_json_is_refused(bad):
    from components.context_window.isolation import _plain

    if "cycle" in bad:
        bad["cycle"].append(bad)
    with pytest.raises(ValueError, match="plain JSON"):
        _plain(bad, "metadata")
