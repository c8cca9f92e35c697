"""The floor is sent whole or BudgetExceeded names it; no module can break, hang, stall or poison a turn."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from components.context_window import isolation
from components.context_window.base import AssemblyContext, ContextModule, Contribution, Message, ToolSchema, freeze
from components.context_window.budget import BudgetExceeded
from components.context_window.handler import ContextWindowHandler
from components.context_window.module_registry import ModuleRegistry
from components.context_window.window_type import ContextWindowType
from tda.builtins import DEFAULT_TYPES
from tests import support
from tests.oracle import cookbook_message_tokens, cookbook_tokens, text_tokens
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


# --- a loaded machine: the waits for a CPU are not the module's -------------------------------------------


class CpuWaits:
    """An injected run-queue clock (``isolation.waited_for_a_cpu``): time spent inside ``waiting()`` is reported
    as time the thread waited for a CPU other processes had."""

    def __init__(self) -> None:
        self.total = 0.0

    def __call__(self) -> float:
        return self.total

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.total += time.perf_counter() - started


def compute(cpu_s: float) -> None:
    """Work on this thread's CPU until it has had ``cpu_s`` of it (however long that takes on a loaded machine)."""
    until = time.thread_time() + cpu_s
    while time.thread_time() < until:
        sum(range(1000))


class SlowFill(ContextModule):
    """As many of 60 blocks as fit the budget, ``left_out`` when not all do. The fill's ask (a larger budget than
    the first) holds the loop 0.35 s in one step: ``loaded`` waiting for a CPU (``waits``), ``blocked`` in
    ``time.sleep``, ``computing`` on its own CPU."""

    def __init__(self, how: str, waits: CpuWaits) -> None:
        super().__init__(manifest("history"))
        self.how, self.waits = how, waits
        self.blocks = [f"block {i}: " + words(30, f"w{i}") for i in range(60)]
        self.budgets: list[int] = []

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        self.budgets.append(budget)
        if budget > self.budgets[0]:
            self.hold_the_loop()
        assert ctx.tokens is not None
        kept: list[str] = []
        for block in self.blocks:
            if ctx.tokens.count_text_message("\n\n".join([*kept, block])) > budget:
                break
            kept.append(block)
        units = tuple((block,) for block in kept)
        return Contribution(self.module_id, units=units, left_out=len(kept) < len(self.blocks))

    def hold_the_loop(self) -> None:
        if self.how == "loaded":
            with self.waits.waiting():
                time.sleep(0.35)
        elif self.how == "blocked":
            time.sleep(0.35)
        else:
            compute(0.35)


def fitting(blocks: list[str], budget: int) -> int:
    """How many of the first blocks fit ``budget`` as one system message, by the cookbook's count."""
    n = 0
    while (
        n < len(blocks)
        and cookbook_message_tokens({"role": "system", "content": "\n\n".join(blocks[: n + 1])}) <= budget
    ):
        n += 1
    return n


async def assembled_with_a_slow_fill(how: str, monkeypatch: pytest.MonkeyPatch) -> tuple[SlowFill, Any]:
    waits = CpuWaits()
    monkeypatch.setattr(isolation, "waited_for_a_cpu", waits)
    module = SlowFill(how, waits)
    ctx = make_ctx(limit=1500, query="go", system_prompt="")
    result = await handler(module, timeout_s=0.2).assemble(ctx, wtype({"history": (30, 0, 40, 50)}))
    assert cookbook_tokens(result.messages) == result.snapshot.total_used <= result.snapshot.available_budget
    return module, result


async def test_a_fill_slowed_by_the_machine_keeps_what_it_gathered(monkeypatch):
    """The fill's step held the loop 0.35 s, past the 0.2 s timeout, all of it waiting for a CPU: its window is sent.
    Oracle: the blocks that fit the fill's budget, counted by the cookbook."""
    module, result = await assembled_with_a_slow_fill("loaded", monkeypatch)
    first, fill = module.budgets[0], module.budgets[-1]
    assert len(module.budgets) == 2 and fitting(module.blocks, fill) > fitting(module.blocks, first)
    usage = result.snapshot.module("history")
    assert usage.status == "ok"
    assert result.contributions["history"].texts() == module.blocks[: fitting(module.blocks, fill)]
    assert usage.blocked_ms >= 350 and usage.waited_ms >= 350  # the snapshot says it was slow, and why


@pytest.mark.parametrize("how", ["blocked", "computing"])
async def test_a_fill_that_blocks_or_computes_past_the_timeout_is_dropped(how, monkeypatch):
    """The same 0.35 s hold, the module's own (asleep or computing, no wait for a CPU): the fill's result is
    discarded and the first ask's window is sent."""
    module, result = await assembled_with_a_slow_fill(how, monkeypatch)
    usage = result.snapshot.module("history")
    assert result.contributions["history"].texts() == module.blocks[: fitting(module.blocks, module.budgets[0])]
    assert usage.status == "ok" and usage.blocked_ms >= 350 and usage.waited_ms == 0
    assert any("kept as it was" in line for line in result.snapshot.decisions)


@pytest.mark.parametrize("how", ["loaded", "blocked", "computing"])
async def test_a_contribution_is_judged_by_the_time_it_held_the_loop_less_its_waits_for_a_cpu(how, monkeypatch):
    waits = CpuWaits()
    monkeypatch.setattr(isolation, "waited_for_a_cpu", waits)
    slow = SlowFill(how, waits)
    slow.budgets.append(0)  # every ask is "larger than the first": the contribution itself holds the loop
    result = await handler(slow, timeout_s=0.2).assemble(make_ctx(limit=1500), ok_type("history"))
    usage = result.snapshot.module("history")
    if how == "loaded":
        assert (usage.status, usage.reason) == ("ok", "") and usage.used > 0
    else:
        assert usage.status == "timeout" and usage.used == 0
        assert "blocked the event loop for" in usage.reason and "waiting for a CPU" not in usage.reason


@pytest.mark.skipif(not os.path.exists("/proc/thread-self/schedstat"), reason="Linux's run-queue figures")
def test_the_waits_for_a_cpu_are_what_another_process_on_the_same_cpu_took():
    """The real clock, on one CPU shared with a busy process: a step computing 0.15 s of CPU takes about twice that
    in wall time, and what is charged (wall less the waits) is its own CPU. Sleeping is not waiting for a CPU.
    Oracle: the thread's CPU clock (``time.thread_time``), which the load does not stretch."""
    cpu = min(os.sched_getaffinity(0))
    kept = os.sched_getaffinity(0)
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        os.sched_setaffinity(busy.pid, {cpu})
        os.sched_setaffinity(0, {cpu})
        time.sleep(0.1)  # the busy process is running
        waited, wall, own = isolation.waited_for_a_cpu(), time.perf_counter(), time.thread_time()
        compute(0.15)
        waited = isolation.waited_for_a_cpu() - waited
        wall, own = time.perf_counter() - wall, time.thread_time() - own
        assert wall > 0.25  # the busy process had the CPU about half the time
        assert abs((wall - waited) - own) < 0.03
        before = isolation.waited_for_a_cpu()
        time.sleep(0.2)
        assert isolation.waited_for_a_cpu() - before < 0.1  # at most a slice's wait once it wakes
    finally:
        os.sched_setaffinity(0, kept)
        busy.kill()
        busy.wait()


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
