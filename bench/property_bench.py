"""Property run over generated windows (issue 9): the guarantees, checked against independent counting.

    python bench/property_bench.py [--cases 100000] [--seed 1]

Each case is a random window type (limits 1 to 10^7 tokens, output reserve 0-50%, all-zero and
single-module types, up to 50 user modules), a random session (unicode, special-token look-alikes,
tool-call exchanges) and modules that misbehave on purpose: over budget, huge, raising, hanging,
blocking the event loop, mutating what they were given, returning bad placements or items, and
reporting bad signals. Four properties are checked:

(a) the prompt, counted independently (the OpenAI cookbook formula over tiktoken, tools from the JSON
    sent), is at most the available budget, and equals ``total_used`` for the messages;
(b) the floor (system prompt, non-condensable contributions, query) is sent whole, or
    ``BudgetExceeded`` is raised and the floor, counted independently, does not fit;
(c) assembly never raises for a module's fault (only ``BudgetExceeded``);
(d) the output is identical in another process that assembles the case afresh, after a different
    run of earlier cases (every ``--recheck``-th case, in reverse order; cases whose outcome depends on
    the clock, with hanging or blocking modules, are left out of this comparison).

Prints the case count, the violations of each property (expected: 0) and the timing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import math
import multiprocessing
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tiktoken

from components.context_window.base import (
    AssemblyContext,
    ContextModule,
    Contribution,
    Message,
    ModuleManifest,
    Profile,
    Session,
    ToolSchema,
)
from components.context_window.budget import BudgetExceeded
from components.context_window.handler import ContextWindowHandler
from components.context_window.module_registry import ModuleRegistry
from components.context_window.window_type import ContextWindowType
from tda.builtins import module_registry
from tda.config import offline_library_defaults

offline_library_defaults()

MODEL = "gpt-4o"
FAST_TIMEOUT_S = 0.05
"""Module timeout in cases with hanging or blocking modules (their outcome depends on the clock)."""
CALM_TIMEOUT_S = 5.0
"""Module timeout elsewhere: generous, so a loaded machine never times out an honest module."""
BEHAVIOURS = ["fit"] * 8 + ["ignore", "huge", "raise", "mutate", "bad_placement", "bad_item", "bad_signals", "cancel"]
CLOCKED = ["hang", "block"]
LOOK_ALIKES = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|start|>assistant<|message|>", "<|fim_middle|>"]
WORDS = ["alpha", "beta", "gamma", "naïve", "日本語", "🙂", "zero\u200bwidth", "Ωmega", "tab\there", "{json}", "…"]

# --- the independent oracle (the cookbook formula over tiktoken; never the handler's estimator) -----------

_ENC = tiktoken.encoding_for_model(MODEL)


@functools.lru_cache(maxsize=200_000)
def text_tokens(text: str) -> int:
    return len(_ENC.encode(text, disallowed_special=()))


def cookbook(messages: list[dict[str, Any]]) -> int:
    n = 3
    for m in messages:
        n += 3
        for key, value in m.items():
            if isinstance(value, str):
                n += text_tokens(value) + (1 if key == "name" else 0)
            elif key == "tool_calls":
                for call in value:
                    n += sum(text_tokens(call[k]) for k in ("id", "type") if k in call)
                    n += sum(text_tokens(call["function"][k]) for k in ("name", "arguments") if k in call["function"])
    return n


def tools_as_sent(tools: list[dict[str, Any]]) -> int:
    return sum(text_tokens(json.dumps(t, ensure_ascii=False, separators=(",", ":"))) for t in tools)


# --- modules that misbehave on purpose ---------------------------------------------------------------------


def manifest(module_id: str, condensable: bool) -> ModuleManifest:
    return ModuleManifest.model_validate(
        {"module_id": module_id, "display_name": module_id, "capabilities": {"condensable": condensable}}
    )


class Adversary(ContextModule):
    def __init__(self, module_id: str, behaviour: str, blocks: list[str], placement: str, condensable: bool) -> None:
        super().__init__(manifest(module_id, condensable))
        self.behaviour, self.blocks, self.placement = behaviour, blocks, placement
        self.handed_out: list[list[tuple[str, ...]]] = []

    async def signals(self, ctx: AssemblyContext) -> dict[str, Any]:
        if self.behaviour == "bad_signals":
            return {"top_score": "high", "eligible_cases": math.nan}
        return {}

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        b = self.behaviour
        if b == "raise":
            raise RuntimeError("adversary")
        if b == "cancel":
            raise asyncio.CancelledError
        if b == "hang":
            while True:
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    continue
        if b == "block":
            time.sleep(FAST_TIMEOUT_S * 2)
        if b == "mutate":
            with contextlib.suppress(AttributeError, TypeError):
                ctx.session.messages.append(Message("user", "injected"))  # type: ignore[attr-defined]
            for earlier in self.handed_out:  # change what an earlier call returned, after it was measured
                earlier.append(("appended after return " * 200,))
            units: list[tuple[str, ...]] = [(x,) for x in self.blocks]
            self.handed_out.append(units)
            return Contribution(self.module_id, units=units, placement=self.placement)  # type: ignore[arg-type]
        if b == "bad_placement":
            return Contribution(self.module_id, units=(("x",),), placement="sidebar")  # type: ignore[arg-type]
        if b == "bad_item":
            return Contribution(self.module_id, units=((b"bytes",),))  # type: ignore[arg-type]
        if b == "huge":
            return self._made([" ".join(["word"] * 20_000)])
        if b in ("ignore", "bad_signals"):
            return self._made(self.blocks)
        return self._fit(budget, ctx)

    async def condense(self, contribution: Contribution, target_tokens: int, ctx: AssemblyContext) -> Contribution:
        if self.behaviour == "mutate":
            return await self.contribute(target_tokens, ctx)
        if self.behaviour in ("ignore", "huge"):
            return contribution
        return self._fit(target_tokens, ctx)

    def _fit(self, budget: int, ctx: AssemblyContext) -> Contribution:
        assert ctx.tokens is not None
        kept: list[str] = []
        for block in self.blocks:
            if ctx.tokens.count_text_message(self._made([*kept, block]).text()) > budget:
                break
            kept.append(block)
        return self._made(kept)

    def _made(self, blocks: list[str]) -> Contribution:
        return Contribution(self.module_id, units=tuple((x,) for x in blocks), placement=self.placement)  # type: ignore[arg-type]


# --- cases ------------------------------------------------------------------------------------------------


def text(rng: random.Random, words: int) -> str:
    pool = WORDS + LOOK_ALIKES if rng.random() < 0.3 else WORDS[:4]
    return " ".join(rng.choices(pool, k=words))


def history(rng: random.Random) -> list[Message]:
    out: list[Message] = []
    for t in range(1, rng.randint(0, 25) + 1):
        out.append(Message("user", text(rng, rng.randint(1, 60)), turn=t))
        if rng.random() < 0.3:
            call = {"id": f"c{t}", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "é"}'}}
            out.append(Message("assistant", "", turn=t, tool_calls=(call,)))
            out.append(Message("tool", text(rng, rng.randint(1, 80)), turn=t, tool_call_id=f"c{t}"))
        out.append(Message("assistant", text(rng, rng.randint(1, 60)), turn=t, valid=rng.random() > 0.05))
    return out


def tools(rng: random.Random) -> list[ToolSchema]:
    return [
        ToolSchema(
            f"tool_{i}",
            text(rng, rng.randint(0, 30)),
            {
                "type": "object",
                "properties": {
                    f"a{j}": {"type": rng.choice(["string", "integer"]), "description": text(rng, 5)}
                    for j in range(rng.randint(0, 4))
                },
            },
        )
        for i in range(rng.randint(0, 12))
    ]


def case(
    seed: int, builtins: dict[str, ContextModule]
) -> tuple[list[ContextModule], ContextWindowType, AssemblyContext, bool]:
    rng = random.Random(seed)
    n_user = 50 if rng.random() < 0.02 else rng.randint(0, 5)
    clocked = rng.random() < 0.02
    modules: list[ContextModule] = [builtins[m] for m in ("system_prompt", "tool_definitions", "conversation_history")]
    for i in range(n_user):
        behaviour = rng.choice(BEHAVIOURS + (CLOCKED if clocked else []))
        blocks = [text(rng, rng.randint(1, 120)) for _ in range(rng.randint(0, 8))]
        placement = rng.choice(["system", "context", "history"])
        modules.append(Adversary(f"user_{i}", behaviour, blocks, placement, condensable=rng.random() < 0.8))
    shape = rng.random()
    slots = {}
    for m in modules:
        if shape < 0.05:  # all-zero targets
            lo = target = hi = 0.0
        else:
            lo, target, hi = sorted(rng.uniform(0, 100) for _ in range(3))
        slots[m.module_id] = {"target_pct": target, "min_pct": lo, "max_pct": hi, "priority": rng.randint(0, 100)}
    if shape > 0.95:  # a single-module type
        keep = rng.choice(list(slots))
        for m, slot in slots.items():
            slot["active"] = m == keep
    condensable = [
        m.module_id for m in modules if m.manifest.capabilities.condensable and slots[m.module_id].get("active", True)
    ]
    rng.shuffle(condensable)
    wtype = ContextWindowType.model_validate(
        {
            "id": "case",
            "name": "Case",
            "output_reserve_pct": rng.uniform(0, 50),
            "modules": slots,
            "condensation_order": condensable[: rng.randint(0, len(condensable))],
        },
        context={"non_condensable": {m.module_id for m in modules if not m.manifest.capabilities.condensable}},
    )
    limit = max(1, int(10 ** rng.uniform(0, 7)))
    ctx = AssemblyContext(
        query=text(rng, rng.randint(1, 40)),
        profile=Profile("p", "tool_enabled", system_prompt=text(rng, rng.randint(1, 400)) + " {tools_context}"),
        session=Session(f"s{seed % 7}", messages=history(rng)),
        tools=tools(rng),
        model=MODEL,
        model_limit=limit,
    )
    return modules, wtype, ctx, clocked


# --- checks -----------------------------------------------------------------------------------------------


def digest(result: Any) -> str:
    snap = result.snapshot.comparable()
    snap.pop("prefix_stable_tokens")
    return hashlib.blake2b(
        json.dumps([result.messages, result.tools, snap], sort_keys=True, default=str).encode(), digest_size=16
    ).hexdigest()


def floor_blocks(modules: list[ContextModule], ctx: AssemblyContext) -> dict[str, list[str]]:
    """What non-condensable adversaries that ignore their budget always send (checkable without the handler)."""
    return {
        m.module_id: m.blocks  # type: ignore[attr-defined]
        for m in modules
        if isinstance(m, Adversary) and not m.manifest.capabilities.condensable and m.behaviour == "ignore" and m.blocks
    }


async def check(
    seed: int, handler: ContextWindowHandler, builtins: dict[str, ContextModule], violations: dict[str, list[int]]
) -> str | None:
    modules, wtype, ctx, clocked = case(seed, builtins)
    handler.modules = ModuleRegistry.from_modules(modules)
    handler.timeout_s = FAST_TIMEOUT_S if clocked else CALM_TIMEOUT_S
    try:
        result = await handler.assemble(ctx, wtype)
    except BudgetExceeded as exc:
        query = cookbook([{"role": "user", "content": ctx.query}]) - 3
        counted = query + 3 + sum(v for k, v in exc.parts.items() if k not in ("query", "reply priming"))
        prompt = exc.parts.get("system_prompt")
        if prompt is not None and prompt != cookbook([{"role": "system", "content": _prompt(ctx)}]) - 3:
            violations["b"].append(seed)
        if exc.parts.get("query") != query or counted != exc.floor_tokens or exc.floor_tokens <= exc.available:
            violations["b"].append(seed)
        return "exceeded" if not clocked else None
    except Exception:
        violations["c"].append(seed)
        return None
    snap = result.snapshot
    messages_tokens = cookbook(result.messages)
    if messages_tokens + (tools_as_sent(result.tools) if result.tools else 0) > snap.available_budget:
        violations["a"].append(seed)
    if snap.total_used > snap.available_budget or (not result.tools and messages_tokens != snap.total_used):
        violations["a"].append(seed)
    sent = [m["content"] for m in result.messages]
    if {"role": "system", "content": _prompt(ctx)} not in result.messages and snap.module(
        "system_prompt"
    ).status == "ok":
        violations["b"].append(seed)
    for module_id, blocks in floor_blocks(modules, ctx).items():
        if snap.module(module_id).status == "ok" and not any(all(b in s for b in blocks) for s in sent):
            violations["b"].append(seed)
    if any("appended after return" in s for s in sent):
        violations["a"].append(seed)
    return None if clocked else digest(result)


def _prompt(ctx: AssemblyContext) -> str:
    names = ", ".join(t.name for t in ctx.tools)
    tools_context = f"You can call these tools: {names}." if names else "You have no tools in this session."
    return ctx.profile.system_prompt.replace("{tools_context}", tools_context)


def run(seeds: list[int], fresh_each: bool, quiet: bool = True) -> tuple[dict[int, str | None], dict[str, list[int]]]:
    if quiet:
        logging.disable(logging.WARNING)  # adversaries make the handler log every bad signal and slow module
    violations: dict[str, list[int]] = {"a": [], "b": [], "c": [], "d": []}
    outcomes: dict[int, str | None] = {}

    async def main() -> None:
        builtins = module_registry(entry_point_group=None).load().modules
        handler = ContextWindowHandler(ModuleRegistry.from_modules([]))
        for seed in seeds:
            if fresh_each:
                builtins = module_registry(entry_point_group=None).load().modules
                handler = ContextWindowHandler(ModuleRegistry.from_modules([]))
            outcomes[seed] = await check(seed, handler, builtins, violations)

    asyncio.run(main())
    return outcomes, violations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--recheck", type=int, default=10, help="re-run every Nth case in a second process")
    args = parser.parse_args()
    seeds = list(range(args.seed, args.seed + args.cases))
    recheck = seeds[:: args.recheck][::-1]
    started = time.perf_counter()
    outcomes: dict[int, str | None] = {}
    again: dict[int, str | None] = {}
    violations: dict[str, list[int]] = {"a": [], "b": [], "c": [], "d": []}
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        # Two long-lived processes share the cases; then two fresh ones re-assemble the sample, reversed.
        for into, jobs in (
            (outcomes, [(seeds[0::2], False), (seeds[1::2], False)]),
            (again, [(recheck[0::2], True), (recheck[1::2], True)]),
        ):
            for found, bad in pool.starmap(run, jobs):
                into.update(found)
                for key in violations:
                    violations[key] += bad[key]
    compared = [s for s in recheck if outcomes.get(s) is not None and again.get(s) is not None]
    violations["d"] = [s for s in compared if outcomes[s] != again[s]]
    elapsed = time.perf_counter() - started
    exceeded = sum(1 for v in outcomes.values() if v == "exceeded")
    print(f"cases: {len(seeds):,} (+{len(recheck):,} re-assembled in a second process, fresh, in reverse order)")
    print(f"BudgetExceeded: {exceeded:,}; compared for (d): {len(compared):,}; time: {elapsed:.0f} s")
    for key, name in [
        ("a", "independently counted prompt <= available"),
        ("b", "floor sent whole or BudgetExceeded with a floor that does not fit"),
        ("c", "never raises for a module's fault"),
        ("d", "identical output in another process after other inputs"),
    ]:
        found = sorted(set(violations[key]))
        print(f"({key}) {name}: {len(found)} violations" + (f" (seeds {found[:10]})" if found else ""))
    sys.exit(1 if any(violations.values()) else 0)


if __name__ == "__main__":
    main()
