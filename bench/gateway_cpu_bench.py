"""A gateway session's old call against a young one, in process (issue 32 item 5: "a turn's server time depends on
its window, not on the session").

long_session_bench.py's side mode reads the same two ends through `tda serve` by the process's CPU around each
request, on a host whose speed drifts by x1.4 for seconds at a time (docs/history/benchmarks-log.md,
"Session 48 (growth8)"). Here the application runs in this process (Quart's test client: no Hypercorn, no socket of
tda's own; the model is the fake upstream in its own process, reached over HTTP as the server reaches it), so each
call's CPU is read from ``time.process_time`` (every thread of the process) and ``time.thread_time`` (the event loop's),
with the body already serialised and the background writer drained before the clock starts: what the call does,
and only that.

Per round: a session grown to TURNS - 10 agent turns (unmeasured), then its last 10 turns alternating with a young
session's first 10, call by call (long_session_bench's side mode, the same texts and fake). Reported: the medians of
the young and the old calls' CPU (process and loop thread) and their ratio, over ROUNDS rounds; and per turn step
(the question's, the tool result's), with the window's messages (``usage.tda``: a full window holds more, smaller
units as a session offers them). With BENCH_GWCPU_PROFILE set, one more round under cProfile (the loop's thread,
switched on around each call only), then per function the old calls' time and calls a call less the young ones': the
split of the difference.
Knobs: BENCH_GWCPU_ROUNDS (default 3), BENCH_GWCPU_TURNS (default 100), BENCH_GWCPU_PROFILE (1: profile;
BENCH_GWCPU_PROFILE_DIR: a folder for the two profiles, young.prof and old.prof), BENCH_GWCPU_TOP (functions listed,
default 40), BENCH_LONG_ROWS (rows per tool result, default 20), BENCH_GWCPU_TIME (functions "module:Name.attr,...":
each wrapped with the loop thread's CPU clock, inclusive, recursion counted once; a coroutine function's figure
includes what ran on the loop while it awaited; ms a call young / old, no profiler).
"""

from __future__ import annotations

import asyncio
import cProfile
import dataclasses
import functools
import importlib
import inspect
import json
import logging
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.agent_session import SYSTEM, TOOLS, orders, question  # noqa: E402
from tests.gateway.servers import in_process_settings  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_GWCPU_ROUNDS", "3"))
TURNS = int(os.environ.get("BENCH_GWCPU_TURNS", "100"))
PROFILE = os.environ.get("BENCH_GWCPU_PROFILE") == "1"
TIMED = [name for name in os.environ.get("BENCH_GWCPU_TIME", "").split(",") if name]
TOP = int(os.environ.get("BENCH_GWCPU_TOP", "40"))
ROWS = int(os.environ.get("BENCH_LONG_ROWS", "20"))
LIMIT = 16_000
YOUNG_FIRST = 9_000
"""A young session's turns are numbered from YOUNG_FIRST + 100 * its round: none of its texts is another's."""


class Timed:
    """Named functions wrapped with the loop thread's CPU clock: seconds spent in each, into the current ``into``."""

    def __init__(self, names: list[str]) -> None:
        self.into: dict[str, float] | None = None
        self.active: set[str] = set()
        for name in names:
            self._wrap(name)

    def _wrap(self, name: str) -> None:
        module, path = name.split(":")
        loaded = [n for n in sys.modules if n == module or n.endswith("." + module)]  # modules load as packages
        owner: Any = sys.modules[loaded[-1]] if loaded else importlib.import_module(module)
        *parents, attr = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        function = inspect.getattr_static(owner, attr)
        static = isinstance(function, staticmethod)
        inner = function.__func__ if static else function

        def clocked(run: Any) -> Any:
            if self.into is None or name in self.active:
                return run()
            self.active.add(name)
            started = time.thread_time()
            try:
                return run()
            finally:
                self.active.discard(name)
                self.into[name] = self.into.get(name, 0.0) + time.thread_time() - started

        if inspect.iscoroutinefunction(inner):

            @functools.wraps(inner)
            async def wrapped_async(*args: Any, **kwargs: Any) -> Any:
                if self.into is None or name in self.active:
                    return await inner(*args, **kwargs)
                self.active.add(name)
                started, into = time.thread_time(), self.into
                try:
                    return await inner(*args, **kwargs)
                finally:
                    self.active.discard(name)
                    into[name] = into.get(name, 0.0) + time.thread_time() - started

            wrapped: Any = wrapped_async
        else:

            @functools.wraps(inner)
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                return clocked(lambda: inner(*args, **kwargs))

        setattr(owner, attr, staticmethod(wrapped) if static else wrapped)


@dataclasses.dataclass
class Calls:
    """Each call's process and loop-thread CPU seconds; cProfile over them when profiling."""

    process: list[float] = dataclasses.field(default_factory=list)
    thread: list[float] = dataclasses.field(default_factory=list)
    profile: cProfile.Profile | None = None
    timed: dict[str, float] = dataclasses.field(default_factory=dict)
    first_steps: list[bool] = dataclasses.field(default_factory=list)
    """Per call, whether it is its turn's first step (the question; else the step with the tool's result)."""
    sent: list[int] = dataclasses.field(default_factory=list)
    """Per call, the window's messages (``usage.tda.messages_sent``)."""


class Gateway:
    def __init__(self, client: Any, svc: Any, token: str, timed: Timed | None = None) -> None:
        self.client, self.svc, self.timed = client, svc, timed
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    async def call(self, chat: list[dict[str, Any]], session: str, calls: Calls | None) -> dict[str, Any]:
        """One call of ``session`` sending ``chat``: its reply message; its CPU kept in ``calls``."""
        body = json.dumps({"model": "tda", "messages": chat, "tools": TOOLS}).encode()
        headers = {**self.headers, "X-TDA-Profile": "agent", "X-TDA-Session": session}
        await self.svc.writer.drain()  # the last call's work after its response is not this call's
        await asyncio.sleep(0.01)  # nor what it left on the loop
        if calls and calls.profile:
            calls.profile.enable()
        if self.timed is not None:
            self.timed.into = calls.timed if calls is not None else None
        process, thread = time.process_time(), time.thread_time()
        r = await self.client.post("/v1/chat/completions", data=body, headers=headers)
        data = await r.get_data()
        if calls is not None:
            calls.process.append(time.process_time() - process)
            calls.thread.append(time.thread_time() - thread)
            if calls.profile:
                calls.profile.disable()
        if self.timed is not None:
            self.timed.into = None
        if r.status_code != 200:
            raise RuntimeError(f"tda answered {r.status_code}: {data[:500]!r}")
        answer = json.loads(data)
        if calls is not None:
            calls.first_steps.append(chat[-1]["role"] == "user")
            calls.sent.append(answer["usage"]["tda"]["messages_sent"])
        message = answer["choices"][0]["message"]
        return {k: v for k, v in message.items() if k in ("role", "content", "tool_calls") and v is not None}

    async def turn(self, chat: list[dict[str, Any]], session: str, turn: int, calls: Calls | None) -> None:
        """An agent turn going on from ``chat``: the question, the model's tool call, its result, the answer."""
        chat.append({"role": "user", "content": question(turn)})
        called = await self.call(chat, session, calls)
        chat.append(called)
        chat.append({"role": "tool", "tool_call_id": called["tool_calls"][0]["id"], "content": orders(turn, ROWS)})
        chat.append(await self.call(chat, session, calls))


async def rounds(gateway: Gateway, young: Calls, old: Calls, first_round: int, count: int) -> None:
    """``count`` rounds: an old session grown unmeasured, then its last 10 turns alternating with a young one's."""
    for r in range(first_round, first_round + count):
        old_chat: list[dict[str, Any]] = [SYSTEM]
        young_chat: list[dict[str, Any]] = [SYSTEM]
        for turn in range(1, TURNS - 9):
            await gateway.turn(old_chat, f"old-{r}", turn, None)
        for n in range(1, 11):
            await gateway.turn(young_chat, f"young-{r}", YOUNG_FIRST + 100 * r + n, young)
            await gateway.turn(old_chat, f"old-{r}", TURNS - 10 + n, old)
        print(f"round {r}: young / old CPU ms a call so far {summary(young, old)}", flush=True)


def summary(young: Calls, old: Calls) -> str:
    def ms(values: list[float]) -> float:
        return statistics.median(values) * 1000

    process = ms(young.process), ms(old.process)
    thread = ms(young.thread), ms(old.thread)
    return (
        f"process {process[0]:.2f} / {process[1]:.2f} (x{process[1] / process[0]:.3f}), "
        f"loop thread {thread[0]:.2f} / {thread[1]:.2f} (x{thread[1] / thread[0]:.3f}), {len(young.process)} calls each"
    )


def by_step(young: Calls, old: Calls) -> str:
    """The medians of each turn step's process CPU, and of the window's messages, young / old: what a median of
    both steps mixes."""

    def ms(calls: Calls, first: bool) -> float:
        return statistics.median(t for t, f in zip(calls.process, calls.first_steps, strict=True) if f == first) * 1000

    steps = ", ".join(f"step {n + 1} {ms(young, n == 0):.2f} / {ms(old, n == 0):.2f}" for n in range(2))
    return f"{steps}; the window's messages {statistics.median(young.sent):g} / {statistics.median(old.sent):g}"


def split(young: Calls, old: Calls) -> None:
    """Per function, the old calls' own time, cumulative time and calls a call, less the young ones'."""
    if young.profile is None or old.profile is None:
        return
    per = []
    for calls in (young, old):
        stats = pstats.Stats(calls.profile).stats  # type: ignore[attr-defined]
        n = len(calls.process)
        per.append({f: (nc / n, tt / n * 1000, ct / n * 1000) for f, (_, nc, tt, ct, _) in stats.items()})
    y, o = per
    rows = []
    for f in {*y, *o}:
        (yc, yt, ycum), (oc, ot, ocum) = y.get(f, (0, 0, 0)), o.get(f, (0, 0, 0))
        rows.append((ot - yt, ocum - ycum, oc - yc, yc, oc, yt, ot, f))
    total_young = sum(t for _, t, _ in y.values())
    total_old = sum(t for _, t, _ in o.values())
    print(f"profiled, own time summed ms a call: young {total_young:.2f}, old {total_old:.2f}")
    print("own ms old-young | cum ms old-young | calls young -> old | own young -> old | function")
    for own, cum, _, yc, oc, yt, ot, f in sorted(rows, key=lambda row: -row[0])[:TOP]:
        where = pstats.func_std_string(f)
        print(f"{own:+7.3f} | {cum:+7.3f} | {yc:7.1f} -> {oc:7.1f} | {yt:6.3f} -> {ot:6.3f} | {where}")
    print("largest call-count growth:")
    for _, cum, grown, yc, oc, _, _, f in sorted(rows, key=lambda row: -row[2])[:TOP]:
        print(f"{grown:+8.1f} calls ({yc:.1f} -> {oc:.1f}), cum {cum:+.3f} ms | {pstats.func_std_string(f)}")


async def measure(settings: Any, token: str) -> None:
    from quart.testing.app import TestApp

    from tda.app import create_app

    app = create_app(settings, migrate=False, warm_up_llm=False)
    async with TestApp(app, startup_timeout=300, shutdown_timeout=300) as test_app:
        client = test_app.test_client()
        profile = {"id": "agent", "type": "tool_enabled", "model": "gpt-4.1", "context_limit": LIMIT}
        r = await client.post("/v1/profiles", json=profile, headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 201, await r.get_data()
        gateway = Gateway(client, app.extensions["tda"], token, Timed(TIMED) if TIMED else None)
        young, old = Calls(), Calls()
        await rounds(gateway, young, old, 0, ROUNDS)
        if ROUNDS:
            print(f"young (turns 1-10) / old (turns {TURNS - 9}-{TURNS}) CPU ms a call, medians: {summary(young, old)}")
            print(f"  by step (process CPU ms, medians): {by_step(young, old)}")
        for name in TIMED if ROUNDS else ():
            y, o = (calls.timed.get(name, 0.0) / len(calls.process) * 1000 for calls in (young, old))
            print(f"  {name}: {y:.3f} / {o:.3f} ms a call (+{o - y:.3f})")
        if PROFILE:
            young_p, old_p = (Calls(profile=cProfile.Profile(time.thread_time)) for _ in range(2))
            await rounds(gateway, young_p, old_p, ROUNDS, 1)
            split(young_p, old_p)
            if folder := os.environ.get("BENCH_GWCPU_PROFILE_DIR"):
                for label, calls in (("young", young_p), ("old", old_p)):
                    assert calls.profile is not None
                    calls.profile.dump_stats(Path(folder) / f"{label}.prof")


def main() -> None:
    from tda.memory import tune_malloc

    tune_malloc()  # as `tda serve` does
    logging.getLogger("components").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="tda-gwcpu-") as tmp, in_process_settings(Path(tmp)) as (settings, token):
        asyncio.run(measure(settings, token))


if __name__ == "__main__":
    main()
