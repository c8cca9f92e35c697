"""tda in process: what one model call pays for its window (``tda.integrations.Window.assemble``), the framework
aside. A conversation of N earlier exchanges, a question and a two-message tool loop, assembled under the balanced
type for gpt-4o with a 16K limit, as the integrations do before every model call. Reports the median and p95 of
``--calls`` assemblies per length, after one warm-up (the first call loads the modules and tokenizer).

Its last lines (issue 32: a library assembly with recall at 10,000 messages under 50 ms cold, under 20 ms CPU warm):
a conversation of 200, 2,000 and 10,000 messages with recall on (the balanced type's ``recall_pct``), no server. Cold
is a library user's first call on that conversation: each of ``--samples`` samples a new ``Window`` with its own
modules (so recall's index is built anew), an empty token count cache and the conversation's dicts made anew; only
what a process loads once stays (imports, the tokenizer's encoding, the stemmer's words). Warm: ``--calls`` calls of
one of those windows, each a turn later (an answer and a question added). Medians of wall and CPU ms (CPU of the
whole process: other processes on a shared machine inflate wall, not CPU). No embedder: a ``Window`` has none, so
recall ranks by words (with one, the component's own path also ranks a history met cold by words while its vectors
are made in the background: the default embedder needs ~5 ms of CPU a part, ~60 s for 10,000 messages). Run from the
repository root: ``python bench/in_process_bench.py [--calls 50] [--samples 7]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time

from components.context_window import token_estimator
from tda.builtins import module_registry
from tda.integrations import Window


def conversation(exchanges: int) -> list[dict[str, object]]:
    earlier = [
        message
        for n in range(exchanges)
        for message in (
            {"role": "user", "content": f"Tell me about invoice {n}. " + "It was about shipping fees. " * 12},
            {"role": "assistant", "content": f"Invoice {n} is paid. " + "The fee was refunded in full. " * 12},
        )
    ]
    call = {"id": "call_1", "type": "function", "function": {"name": "order_status", "arguments": '{"order": 7}'}}
    return [
        {"role": "system", "content": "Answer briefly."},
        *earlier,
        {"role": "user", "content": "Where is order 7?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "order 7 left the warehouse on Monday"},
    ]


TOOLS = [{"type": "function", "function": {"name": "order_status", "parameters": {"type": "object"}}}]


async def measure(exchanges: int, calls: int) -> tuple[float, float, str]:
    window = Window("balanced", model="gpt-4o", model_limit=16_000)
    messages = conversation(exchanges)
    await window.assemble(messages, TOOLS)  # warm-up
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await window.assemble(messages, TOOLS)
        times.append((time.perf_counter() - started) * 1000)
    assert window.last is not None
    p95 = statistics.quantiles(times, n=20)[-1]
    return statistics.median(times), p95, window.last.snapshot.summary()


async def cold_and_warm(exchanges: int, calls: int) -> tuple[tuple[float, float], list[tuple[float, float]]]:
    """(wall, CPU) ms of the first assembly of a conversation by a new ``Window`` (cold), and of ``calls`` more, each a
    turn later (the answer and the next question added, as an agent sends them)."""
    token_estimator._estimators.clear()  # the token counts of an earlier sample are not this one's
    window = Window("balanced", model="gpt-4o", model_limit=16_000, registry=module_registry().load())
    messages = conversation(exchanges)
    gc.collect()
    timings = []
    for n in range(calls + 1):
        if n:
            messages = [
                *messages,
                {"role": "assistant", "content": f"Invoice {n} is paid."},
                {"role": "user", "content": f"And invoice {n}?"},
            ]
        wall, cpu = time.perf_counter(), time.process_time()
        await window.assemble(messages, TOOLS)
        timings.append(((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000))
    return timings[0], timings[1:]


def medians(timings: list[tuple[float, float]]) -> tuple[float, float]:
    """The median wall and the median CPU of ``timings``."""
    walls, cpus = zip(*timings, strict=True)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--samples", type=int, default=7, help="cold samples per length (each a new window)")
    args = parser.parse_args()
    print(f"{'exchanges':>10}{'messages':>10}{'median ms':>11}{'p95 ms':>9}  window")
    for exchanges in (10, 100, 1000):
        median, p95, summary = asyncio.run(measure(exchanges, args.calls))
        print(f"{exchanges:>10}{2 * exchanges + 4:>10}{median:>11.2f}{p95:>9.2f}  {summary}")
    print(
        f"with recall (issue 32 at 10,000 messages: < 50 ms cold, < 20 ms CPU warm), no embedder; medians, cold of "
        f"{args.samples} new windows, warm of {args.calls} calls a turn apart each"
    )
    asyncio.run(cold_and_warm(3, 0))  # the modules and tokenizer loaded
    for exchanges in (98, 998, 4_998):
        cold, warm = [], []
        for _ in range(args.samples):
            first, later = asyncio.run(cold_and_warm(exchanges, args.calls))
            cold.append(first)
            warm += later
        (cold_wall, cold_cpu), (warm_wall, warm_cpu) = medians(cold), medians(warm)
        print(
            f"{2 * exchanges + 4:>10,} messages: cold {cold_wall:.1f} wall / {cold_cpu:.1f} CPU ms, "
            f"warm {warm_wall:.1f} / {warm_cpu:.1f}"
        )


if __name__ == "__main__":
    main()
