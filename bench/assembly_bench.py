"""Assembly benchmark (`make bench`): warm and cold assembly time by history length, and counting throughput.

Workload (issue 2): histories of 200 / 2,000 / 10,000 messages of ~480 characters, 40 tools with 4
arguments each, 10 knowledge passages of ~1,950 characters, 3 RAG cases, 20 workflow turns, the
Balanced type, a tool_enabled profile, model limits of 128K and 16K.
"""

from __future__ import annotations

import asyncio
import gc
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from components.context_window import token_estimator as te
from components.context_window.base import (
    AssemblyContext,
    ChampionCase,
    Message,
    Passage,
    Profile,
    Session,
    ToolSchema,
    TurnRecord,
)
from components.context_window.handler import ContextWindowHandler
from components.context_window.module_registry import ModuleRegistry
from components.context_window.providers import StaticCases, StaticKnowledge
from components.context_window.window_type import DEFAULT_TYPES
from tda.config import offline_library_defaults

WARM_RUNS = 20
ROUNDS = 5
HISTORY_SIZES = (200, 2_000, 10_000)
LIMITS = (128_000, 16_000)
MODEL = "gpt-4o"
_WORDS = (
    "revenue quarter customer order region forecast table query column average growth margin product "
    "report pipeline schema index latency budget analysis trend segment churn cohort metric dashboard "
    "the a of to and in for with on by from is was are were this that which as at be it"
).split()

offline_library_defaults()  # tiktoken loads litellm's bundled encodings, as in the service


def prose(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 16))).capitalize() + "."
        out.append(sentence)
        size += len(sentence) + 1
    return " ".join(out)[:chars]


def workload(history: int, seed: int = 7) -> AssemblyContext:
    rng = random.Random(seed)
    messages = [
        Message("user" if i % 2 == 0 else "assistant", prose(rng, 480), turn=i // 2 + 1) for i in range(history)
    ]
    tools = [
        ToolSchema(
            f"tool_{i}",
            prose(rng, 160),
            {
                "type": "object",
                "properties": {f"arg_{j}": {"type": "string", "description": prose(rng, 60)} for j in range(4)},
                "required": ["arg_0"],
            },
        )
        for i in range(40)
    ]
    passages = [
        Passage(prose(rng, 1950), 0.9 - i * 0.03, f"doc{i // 3}", f"Document {i // 3}", "Section", chunk_index=i % 3)
        for i in range(10)
    ]
    cases = [
        ChampionCase(f"case{i}", prose(rng, 80), 0.8 - i * 0.1, prose(rng, 300), prose(rng, 200)) for i in range(3)
    ]
    turns = [
        TurnRecord(
            turn=t, query=prose(rng, 80), plan=prose(rng, 120), answer=prose(rng, 200), tokens_in=900, tokens_out=120
        )
        for t in range(max(1, history // 2 - 19), history // 2 + 1)
    ]
    return AssemblyContext(
        query="Which regions grew fastest last quarter, and why?",
        profile=Profile("bench", "tool_enabled", "Bench analyst", "You are a data analyst. {tools_context}"),
        session=Session("bench", messages=messages, turns=turns[-20:]),
        model=MODEL,
        tools=tools,
        knowledge=StaticKnowledge(passages),
        cases=StaticCases(cases),
    )


def fresh_estimators() -> None:
    te._estimators.clear()


def run(handler: ContextWindowHandler, ctx: AssemblyContext, loop: asyncio.AbstractEventLoop) -> tuple[float, object]:
    start = time.perf_counter()
    result = loop.run_until_complete(handler.assemble(ctx, DEFAULT_TYPES["balanced"]))
    return (time.perf_counter() - start) * 1000, result


def measure(
    registry: ModuleRegistry, loop: asyncio.AbstractEventLoop, size: int, limit: int
) -> tuple[float, float, Any]:
    """One round on fresh objects and a fresh token cache: (cold ms, warm median ms, snapshot)."""
    ctx = workload(size)
    ctx = AssemblyContext(**{**ctx.__dict__, "model_limit": limit})
    gc.collect()
    gc.freeze()  # as `tda serve` does after start-up: long-lived data is not re-scanned by every collection
    fresh_estimators()
    handler = ContextWindowHandler(registry)
    cold, result = run(handler, ctx, loop)
    warm = [run(handler, ctx, loop)[0] for _ in range(WARM_RUNS)]
    return cold, statistics.median(warm), result.snapshot  # type: ignore[attr-defined]


def bench_assembly(registry: ModuleRegistry, loop: asyncio.AbstractEventLoop) -> None:
    """Each figure is the median of ROUNDS rounds (this VM runs some rounds ~2x slower, whole-round)."""
    print(f"warm = median of {WARM_RUNS} assemblies per round; median of {ROUNDS} rounds [fastest-slowest round]")
    print(f"{'limit':>8} {'messages':>9} {'cold ms':>9} {'warm ms':>8} {'rounds':>15} {'used/available':>18}  method")
    for limit in LIMITS:
        medians: dict[int, float] = {}
        for size in HISTORY_SIZES:
            rounds = [measure(registry, loop, size, limit) for _ in range(ROUNDS)]
            warm = sorted(r[1] for r in rounds)
            medians[size] = statistics.median(warm)
            cold, snap = rounds[0][0], rounds[0][2]
            print(
                f"{limit:>8,} {size:>9,} {cold:>9.2f} {medians[size]:>8.3f} {f'[{warm[0]:.2f}-{warm[-1]:.2f}]':>15} "
                f"{snap.total_used:>8,}/{snap.available_budget:<9,}  {snap.token_method}"
            )
        ratio = medians[HISTORY_SIZES[-1]] / medians[HISTORY_SIZES[0]]
        print(f"{'':>8} t({HISTORY_SIZES[-1]:,})/t({HISTORY_SIZES[0]:,}) = {ratio:.2f}  (target <= 2)")


def bench_counting() -> None:
    """Cold counting through TokenEstimator vs raw tiktoken encode on the same texts, single thread."""
    texts = [m.content for m in workload(10_000, seed=11).session.messages]
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    encoding = te._load_encoding(te.encoding_name_for(MODEL))
    raw, ours = [], []
    for _ in range(3):
        start = time.perf_counter()
        for t in texts:
            len(encoding.encode_ordinary(t))
        raw.append(time.perf_counter() - start)
        est = te.TokenEstimator(te.encoding_name_for(MODEL))
        start = time.perf_counter()
        for t in texts:
            est.count(t)
        ours.append(time.perf_counter() - start)
    raw_mbs, ours_mbs = (megabytes / statistics.median(x) for x in (raw, ours))
    print(f"\ncold counting of {len(texts):,} messages ({megabytes:.1f} MB), median of 3:")
    print(f"  raw tiktoken encode_ordinary   {raw_mbs:6.2f} MB/s")
    print(f"  TokenEstimator.count           {ours_mbs:6.2f} MB/s  ({ours_mbs / raw_mbs:.0%} of raw; target >= 80%)")


def main() -> None:
    registry = ModuleRegistry(entry_point_group=None).load()
    print(f"modules: {', '.join(sorted(registry.modules))}")
    loop = asyncio.new_event_loop()
    try:
        bench_assembly(registry, loop)
    finally:
        loop.close()
    bench_counting()


if __name__ == "__main__":
    main()
