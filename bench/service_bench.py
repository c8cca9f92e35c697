"""Service benchmark: SSE fan-out latency to 1,000 subscribers, and requests per second.

A real server (`tda serve`: hypercorn, SQLite) runs in a child process on 127.0.0.1 with the demo data.
* SSE fan-out: SUBSCRIBERS raw-socket clients stream /v1/sessions/demo/events; FANOUT_TURNS turns are
  posted one after another; each event carries ``published_at`` (set just before the bus fans it out),
  and each client records receipt time minus that. 3 rounds, fresh connections each; the median p99 is
  the figure (one round can be hit by other work on a small machine). Target: p99 <= 100 ms.
* GET /v1/context-window-types: REQUESTS requests over CONCURRENCY keep-alive connections, 3 rounds.
* Turns with the mock model: TURNS turns spread over TURN_SESSIONS sessions, 3 rounds.
Every loop is bounded and stops by itself; run with `python bench/service_bench.py`.
The load average is printed with each round: on a shared 2-core machine, other processes' CPU use shows
directly in the tail latency. Knobs: BENCH_SUBSCRIBERS=n, BENCH_DEBUG=1 (per-event latencies), BENCH_PROFILE=file
(cProfile the server).
"""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tda.config import Settings  # noqa: E402
from tda.db import upgrade_async  # noqa: E402
from tda.demo import seed_demo  # noqa: E402
from tda.store import Store  # noqa: E402

SUBSCRIBERS = int(os.environ.get("BENCH_SUBSCRIBERS", "1000"))
FANOUT_TURNS = 20
TURN_GAP_S = 0.5
REQUESTS = 2_000
CONCURRENCY = 16
TURNS = 120
TURN_SESSIONS = 8
ROUNDS = 3
CONNECT_BATCH = 100
TIMEOUT_S = 60.0


SERVER_PID = 0


def server_cpu() -> float:
    """CPU seconds the server process has used (Linux /proc)."""
    fields = Path(f"/proc/{SERVER_PID}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def prepare(settings: Settings) -> str:
    await upgrade_async(settings.sqlalchemy_url)
    store = Store.connect(settings.sqlalchemy_url)
    try:
        await seed_demo(store)
        token, _ = await store.tokens.create("bench", "admin")
        for i in range(TURN_SESSIONS):
            await store.sessions.create({"id": f"bench-{i}", "profile_id": "demo-tools"}, "bench")
        return token
    finally:
        await store.close()


def start_server(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "TDA_DATA_DIR": str(data_dir),
        "TDA_MODULES_DIR": str(data_dir / "modules"),
        "TDA_PORT": str(port),
        "TDA_MOCK_MODEL": "1",
        "PYTHONPATH": str(ROOT),
    }
    profile = ["-m", "cProfile", "-o", os.environ["BENCH_PROFILE"]] if os.environ.get("BENCH_PROFILE") else []
    return subprocess.Popen(
        [sys.executable, *profile, "-m", "tda.cli", "serve"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


async def wait_ready(base: str) -> None:
    async with httpx.AsyncClient() as client:
        for _ in range(300):
            try:
                if (await client.get(f"{base}/healthz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError("server did not start within 30 s")


# --- SSE fan-out ---------------------------------------------------------------------------------


def published_at(frame: bytes) -> float:
    """Read ``published_at`` without decoding the whole snapshot: 1,000 clients share this process's CPU."""
    start = frame.index(b'"published_at":') + len(b'"published_at":')
    return float(frame[start : frame.index(b",", start)])


class Subscriber(asyncio.Protocol):
    """A minimal SSE client as a raw asyncio protocol: a callback per chunk, no task or stream reader, so
    1,000 of them in one process add little of their own delay to what is measured."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.latencies: list[float] = []
        self.ready = asyncio.get_running_loop().create_future()
        self.done = asyncio.get_running_loop().create_future()
        self.pending = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, chunk: bytes) -> None:
        received = time.time()
        *frames, self.pending = (self.pending + chunk).split(b"\n\n")
        for frame in frames:
            if b'"published_at":' in frame:
                self.latencies.append(received - published_at(frame))
            elif b"retry:" in frame and not self.ready.done():
                self.ready.set_result(None)
        if len(self.latencies) >= self.expected and not self.done.done():
            self.done.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        for future in (self.ready, self.done):
            if not future.done():
                future.set_exception(ConnectionError("the server closed the stream"))

    async def connect(self, port: int, path: str, token: str) -> None:
        await asyncio.get_running_loop().create_connection(lambda: self, "127.0.0.1", port)
        assert self.transport is not None
        self.transport.write(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
            "Accept: text/event-stream\r\n\r\n".encode()
        )

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def sse_fanout(port: int, base: str, token: str) -> dict[str, float]:
    subs = [Subscriber(FANOUT_TURNS) for _ in range(SUBSCRIBERS)]
    for i in range(0, SUBSCRIBERS, CONNECT_BATCH):  # batches: stay inside the listen backlog
        await asyncio.gather(*(s.connect(port, "/v1/sessions/demo/events", token) for s in subs[i : i + CONNECT_BATCH]))
    gc.collect()
    gc.freeze()  # the measuring client's own GC pauses are not the server's latency
    await asyncio.wait_for(asyncio.gather(*(s.ready for s in subs)), TIMEOUT_S)
    cpu_client = time.process_time()
    cpu_server = server_cpu()
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        for i in range(FANOUT_TURNS):
            r = await client.post("/v1/sessions/demo/turns", json={"query": f"fan-out question {i}"})
            r.raise_for_status()
            await asyncio.sleep(TURN_GAP_S)  # let each fan-out finish: measures fan-out, not a backlog of turns
    await asyncio.wait_for(asyncio.gather(*(s.done for s in subs)), TIMEOUT_S)
    server_ms = (server_cpu() - cpu_server) / FANOUT_TURNS * 1000
    client_ms = (time.process_time() - cpu_client) / FANOUT_TURNS * 1000
    for s in subs:
        s.close()
    if os.environ.get("BENCH_DEBUG"):
        for i in range(FANOUT_TURNS):
            per = sorted(s.latencies[i] * 1000 for s in subs if len(s.latencies) > i)
            print(f"  event {i}: min {per[0]:.1f} p50 {per[len(per) // 2]:.1f} max {per[-1]:.1f} ms")
    latencies = sorted(x * 1000 for s in subs for x in s.latencies)
    received = len(latencies)
    q = statistics.quantiles(latencies, n=100)
    return {
        "events": received,
        "expected": SUBSCRIBERS * FANOUT_TURNS,
        "p50_ms": q[49],
        "p99_ms": q[98],
        "max_ms": latencies[-1],
        "server_cpu_ms": server_ms,
        "client_cpu_ms": client_ms,
    }


# --- throughput ----------------------------------------------------------------------------------


async def rps_get(base: str, token: str) -> float:
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}, limits=limits) as client:
        await client.get("/v1/context-window-types")
        remaining = iter(range(REQUESTS))

        async def worker() -> None:
            for _ in remaining:
                (await client.get("/v1/context-window-types")).raise_for_status()

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return REQUESTS / (time.perf_counter() - started)


async def rps_turns(base: str, token: str, round_no: int) -> float:
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        per_session = TURNS // TURN_SESSIONS

        async def session_worker(i: int) -> None:
            for n in range(per_session):
                r = await client.post(f"/v1/sessions/bench-{i}/turns", json={"query": f"round {round_no} question {n}"})
                if r.status_code != 201:
                    raise RuntimeError(f"turn failed: {r.status_code} {r.text[:800]}")

        started = time.perf_counter()
        await asyncio.gather(*(session_worker(i) for i in range(TURN_SESSIONS)))
        return per_session * TURN_SESSIONS / (time.perf_counter() - started)


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tda-bench-") as tmp:
        data = Path(tmp)
        settings = Settings(data_dir=data, modules_dir=data / "modules")
        token = await prepare(settings)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = start_server(data, port)
        global SERVER_PID
        SERVER_PID = server.pid
        try:
            await wait_ready(base)
            print(f"server: tda serve (hypercorn, SQLite) on {base}; client: this process; {os.cpu_count()} cores")
            fans = []
            for r in range(ROUNDS):
                fan = await sse_fanout(port, base, token)
                fans.append(fan)
                print(
                    f"  SSE round {r + 1}: received {fan['events']:,}/{fan['expected']:,} events; publish->receipt "
                    f"p50 {fan['p50_ms']:.1f} ms, p99 {fan['p99_ms']:.1f} ms, max {fan['max_ms']:.1f} ms; CPU per "
                    f"event: server {fan['server_cpu_ms']:.1f} ms (turn included), client {fan['client_cpu_ms']:.1f} ms"
                    f"; load average {os.getloadavg()[0]:.1f}"
                )
            p50 = statistics.median(f["p50_ms"] for f in fans)
            p99 = statistics.median(f["p99_ms"] for f in fans)
            print(
                f"SSE fan-out, {SUBSCRIBERS} subscribers x {FANOUT_TURNS} turns x {ROUNDS} rounds: median p50 "
                f"{p50:.1f} ms, median p99 {p99:.1f} ms (target p99 <= 100 ms: {'met' if p99 <= 100 else 'MISSED'})"
            )
            gets = [await rps_get(base, token) for _ in range(ROUNDS)]
            print(
                f"GET /v1/context-window-types: median {statistics.median(gets):,.0f} req/s "
                f"({REQUESTS} requests x {ROUNDS} rounds, {CONCURRENCY} connections; rounds: "
                + ", ".join(f"{x:,.0f}" for x in gets)
                + ")"
            )
            turns = [await rps_turns(base, token, r) for r in range(ROUNDS)]
            print(
                f"POST /v1/sessions/{{id}}/turns (mock model): median {statistics.median(turns):,.1f} turns/s "
                f"({TURNS} turns over {TURN_SESSIONS} sessions x {ROUNDS} rounds; rounds: "
                + ", ".join(f"{x:,.1f}" for x in turns)
                + ")"
            )
        finally:
            server.terminate()
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()


if __name__ == "__main__":
    from tda.server_cli import run_event_loop

    run_event_loop(main())  # the client side gets uvloop too, as the server does
