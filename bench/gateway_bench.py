"""Gateway benchmark (`make bench`, issue 22): what tda adds to a chat call, next to the LiteLLM proxy.

Three servers on 127.0.0.1, each in its own process: the fake OpenAI upstream (tests/gateway/upstream.py, no
delay, nothing recorded); `tda serve` (mock model off, SQLite, TDA_EMBEDDER=hashing) whose provider is the fake;
and the LiteLLM proxy (``litellm[proxy]==PROXY_VERSION``) routing ``gpt-4.1`` to the fake, installed in the bench's
own venv (bench/.peers/venv, made on first run; never a tda dependency). One client process (httpx, keep-alive):
* latency: CALLS sequential calls of a 4-message chat (system, user, assistant, user) to each target; the figure
  is the target's p50 / p90 minus the direct call's (the fake alone), i.e. what the hop adds;
* server CPU: the CPU time the target's server process spent per sequential call (less sensitive than wall time
  to other work on the machine; the fake's own for the direct row);
* throughput: CONCURRENCY clients call each target as fast as they can, for THROUGHPUT_S seconds or
  THROUGHPUT_MAX calls, whichever comes first: completed calls per second.
ROUNDS rounds, the targets in a different order each round; the medians are printed, then the ratios. Calls to tda
carry no X-TDA-Session header (what an unmodified client sends). Every reply is checked to be the fake's answer,
so a figure is never that of an error page or of tda's mock model. All servers are stopped at the end, also on
error (and on SIGTERM). Knobs: BENCH_GATEWAY_CALLS, BENCH_GATEWAY_ROUNDS, BENCH_GATEWAY_SECONDS.
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench.litellm_proxy import PROXY_KEY, start_proxy, tree_cpu_seconds  # noqa: E402
from tests.gateway.servers import (  # noqa: E402
    MODEL,
    admin_token,
    free_port,
    start_fake_upstream,
    start_tda,
    stop,
    wait_until_serving,
)
from tests.gateway.upstream import ECHO_PREFIX  # noqa: E402

CALLS = int(os.environ.get("BENCH_GATEWAY_CALLS", "300"))
ROUNDS = int(os.environ.get("BENCH_GATEWAY_ROUNDS", "3"))
THROUGHPUT_S = float(os.environ.get("BENCH_GATEWAY_SECONDS", "5"))
THROUGHPUT_MAX = 5_000
CONCURRENCY = 16
WARMUP = 20
LAST_QUESTION = "And what does it cost per month?"
CHAT = [
    {"role": "system", "content": "You are a concise assistant for a software company's support desk."},
    {"role": "user", "content": "Which plan includes single sign-on?"},
    {"role": "assistant", "content": "Single sign-on is part of the Business plan and above."},
    {"role": "user", "content": LAST_QUESTION},
]


@dataclass(frozen=True)
class Target:
    name: str
    url: str
    """The chat-completions URL."""
    key: str
    pid: int
    """The server process behind the URL: its CPU time is read from /proc."""


# --- the servers -----------------------------------------------------------------------------------------


@contextmanager
def servers(folder: Path) -> Iterator[list[Target]]:
    """The fake upstream, tda and the proxy, running; all stopped on the way out (also on error)."""
    processes: list[subprocess.Popen[bytes]] = []
    try:
        upstream, upstream_base = start_fake_upstream(folder)
        processes.append(upstream)

        tda_dir = folder / "tda"
        tda_dir.mkdir()
        token = admin_token(tda_dir)
        tda_port = free_port()
        tda = start_tda(tda_dir, tda_port, upstream_base)
        processes.append(tda)

        proxy, proxy_url = start_proxy(folder, upstream_base)
        processes.append(proxy)

        wait_until_serving(tda, f"http://127.0.0.1:{tda_port}/readyz", tda_dir / "server.log")
        yield [
            Target("direct", f"{upstream_base}/chat/completions", "sk-fake-upstream-key", upstream.pid),
            Target("tda", f"http://127.0.0.1:{tda_port}/v1/chat/completions", token, tda.pid),
            Target("litellm-proxy", proxy_url, PROXY_KEY, proxy.pid),
        ]
    finally:
        for process in reversed(processes):
            stop(process)


# --- the clients -----------------------------------------------------------------------------------------


async def call(client: httpx.AsyncClient, target: Target) -> None:
    r = await client.post(
        target.url, json={"model": MODEL, "messages": CHAT}, headers={"Authorization": f"Bearer {target.key}"}
    )
    if r.status_code != 200:
        raise RuntimeError(f"{target.name} answered {r.status_code}: {r.text[:500]}")
    content = r.json()["choices"][0]["message"]["content"]
    if content != ECHO_PREFIX + LAST_QUESTION:  # the fake's answer, not a mock's or an error's
        raise RuntimeError(f"{target.name} answered {content!r}, not the upstream's reply")


async def latencies(target: Target) -> tuple[list[float], float]:
    """CALLS sequential calls on one keep-alive connection, after WARMUP: seconds each, and the server's CPU
    milliseconds a call."""
    async with httpx.AsyncClient(timeout=60) as client:
        for _ in range(WARMUP):
            await call(client, target)
        out = []
        cpu_before = tree_cpu_seconds(target.pid)
        for _ in range(CALLS):
            started = time.perf_counter()
            await call(client, target)
            out.append(time.perf_counter() - started)
        return out, (tree_cpu_seconds(target.pid) - cpu_before) / CALLS * 1000


async def throughput(target: Target) -> float:
    """Calls a second with CONCURRENCY clients, bounded by THROUGHPUT_S and THROUGHPUT_MAX."""
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        await asyncio.gather(*(call(client, target) for _ in range(CONCURRENCY)))  # connections open
        done = 0
        started = time.perf_counter()
        deadline = started + THROUGHPUT_S

        async def worker() -> None:
            nonlocal done
            while time.perf_counter() < deadline and done < THROUGHPUT_MAX:
                await call(client, target)
                done += 1

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return done / (time.perf_counter() - started)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass
class Figures:
    p50: list[float]
    p90: list[float]
    cpu: list[float]
    """The server's CPU ms a sequential call (the direct row: the fake's own)."""
    rps: list[float]


async def measure(targets: list[Target]) -> dict[str, Figures]:
    figures = {t.name: Figures([], [], [], []) for t in targets}
    for round_no in range(ROUNDS):
        order = targets[round_no % len(targets) :] + targets[: round_no % len(targets)]
        for target in order:
            times, cpu = await latencies(target)
            figures[target.name].cpu.append(cpu)
            figures[target.name].p50.append(percentile(times, 0.5) * 1000)
            figures[target.name].p90.append(percentile(times, 0.9) * 1000)
        for target in order:
            figures[target.name].rps.append(await throughput(target))
        line = "  ".join(
            f"{t.name} p50 {figures[t.name].p50[-1]:.2f} ms {figures[t.name].rps[-1]:.0f}/s" for t in targets
        )
        print(f"round {round_no + 1}/{ROUNDS}: {line}", flush=True)
    return figures


def report(figures: dict[str, Figures]) -> dict[str, Any]:
    med = {
        name: {k: statistics.median(getattr(f, k)) for k in ("p50", "p90", "cpu", "rps")} for name, f in figures.items()
    }
    direct = med["direct"]
    print(
        f"\n{CALLS} sequential calls of a {len(CHAT)}-message chat per target and round; {CONCURRENCY} concurrent "
        f"clients for {THROUGHPUT_S:g} s; medians of {ROUNDS} rounds"
    )
    print(f"{'target':<15}{'p50 ms':>9}{'p90 ms':>9}{'added p50':>11}{'added p90':>11}{'CPU ms':>9}{'req/s':>9}")
    for name, m in med.items():
        added = "" if name == "direct" else f"{m['p50'] - direct['p50']:>11.2f}{m['p90'] - direct['p90']:>11.2f}"
        print(f"{name:<15}{m['p50']:>9.2f}{m['p90']:>9.2f}{added or ' ' * 22}{m['cpu']:>9.2f}{m['rps']:>9.0f}")
    tda, proxy = med["tda"], med["litellm-proxy"]
    added_p50 = (tda["p50"] - direct["p50"]) / (proxy["p50"] - direct["p50"])
    added_p90 = (tda["p90"] - direct["p90"]) / (proxy["p90"] - direct["p90"])
    print(
        f"tda / proxy: added p50 x{added_p50:.2f}, added p90 x{added_p90:.2f}, server CPU a call "
        f"x{tda['cpu'] / proxy['cpu']:.2f}, throughput x{tda['rps'] / proxy['rps']:.2f} (tda "
        f"{tda['rps'] / direct['rps']:.0%} and the proxy {proxy['rps'] / direct['rps']:.0%} of direct)"
    )
    return med


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # killed: the servers are still stopped (finally)
    with tempfile.TemporaryDirectory(prefix="tda-gateway-bench-") as folder, servers(Path(folder)) as targets:
        report(asyncio.run(measure(targets)))


if __name__ == "__main__":
    main()
