"""tda in process: what one model call pays for its window (``tda.integrations.Window.assemble``), the framework
aside. A conversation of N earlier exchanges, a question and a two-message tool loop, assembled under the balanced
type for gpt-4o with a 16K limit, as the integrations do before every model call. Reports the median and p95 of
``--calls`` assemblies per length, after one warm-up (the first call loads the modules and tokenizer).

Its last lines: a conversation of 200, 2,000 and 10,000 messages assembled once in a process (cold: recall's index
built) and then a turn later each call (warm), CPU ms. Run from the repository root:
``python bench/in_process_bench.py [--calls 50]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

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


async def growing(exchanges: int, calls: int) -> tuple[float, float]:
    """CPU ms of the first assembly of a long conversation in a process (cold: its recall index built), and the median
    of ``calls`` more, each a turn later (the answer and the next question added, as an agent sends them)."""
    window = Window("balanced", model="gpt-4o", model_limit=16_000)
    await window.assemble(conversation(3), TOOLS)  # the modules and tokenizer loaded
    messages = conversation(exchanges)
    started = time.process_time()
    await window.assemble(messages, TOOLS)
    cold = (time.process_time() - started) * 1000
    times = []
    for n in range(calls):
        messages = [
            *messages,
            {"role": "assistant", "content": f"Invoice {n} is paid."},
            {"role": "user", "content": f"And invoice {n}?"},
        ]
        started = time.process_time()
        await window.assemble(messages, TOOLS)
        times.append((time.process_time() - started) * 1000)
    return cold, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    print(f"{'exchanges':>10}{'messages':>10}{'median ms':>11}{'p95 ms':>9}  window")
    for exchanges in (10, 100, 1000):
        median, p95, summary = asyncio.run(measure(exchanges, args.calls))
        print(f"{exchanges:>10}{2 * exchanges + 4:>10}{median:>11.2f}{p95:>9.2f}  {summary}")
    print("with recall (issue 32 at 10,000 messages: < 50 ms cold, < 20 ms warm), CPU ms; warm: a turn later each call")
    for exchanges in (98, 998, 4_998):
        cold, warm = asyncio.run(growing(exchanges, args.calls))
        print(f"{2 * exchanges + 4:>10,} messages: cold {cold:.1f}, warm {warm:.1f}")


if __name__ == "__main__":
    main()
