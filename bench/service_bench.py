"""Service benchmark, one run: cost of a turn at 200 vs 10,000 messages, reads against the framework's ceiling,
memory over 10,000 turns, and SSE fan-out latency to 1,000 subscribers.

A real server (`tda serve`: hypercorn, SQLite, the mock model, TDA_EMBEDDER=hashing) runs in a child process on
127.0.0.1 with the demo data. Figures are ratios measured side by side in the same run, so the machine's speed and
load cancel out:
* Turn latency: LAT_TURNS turns alternate between sessions holding 200 messages and one holding 10,000 (recorded
  as turns, so its turn table is long too). p50 of the client-side latency at 10,000 / at 200: target <= 1.5.
  The turn's own overhead is the server's ``Server-Timing`` turn time minus its model time: target <= 10 ms p50.
* GET /v1/sessions/{id} latency, the same way: target ratio <= 1.5.
* GET /v1/context-window-types req/s by `wrk` against a bare Quart app serving the same JSON on the same server
  stack (bench/bare_quart.py), rounds alternating: target >= 60% of the bare app's.
* Memory: MEMORY_TURNS turns over MEMORY_SESSIONS sessions after WARMUP_TURNS; the server's RSS growth past the
  warm-up: target < 50 MB.
* SSE fan-out: SUBSCRIBERS raw-socket clients stream /v1/sessions/demo/events; FANOUT_TURNS turns are posted
  one after another; each event carries ``published_at`` and each client records receipt time minus that.
  The median p99 of ROUNDS rounds is the figure (target p99 <= 100 ms).
* SSE fan-out over 2 replicas (``replicas_fanout``): the same, with the subscribers split over two `tda serve`
  replicas on PostgreSQL + Redis + a Chroma server (started as the replica tests start them) and the turns
  posted to each replica in turn, so half the deliveries cross replicas through Redis (target p99 <= 100 ms).
  BENCH_REPLICAS=0 skips it; `python bench/service_bench.py --replicas` runs only it.
Every loop is bounded and stops by itself; run with `python bench/service_bench.py`. Knobs: BENCH_SUBSCRIBERS=n,
BENCH_SSE=0 (skip fan-out), BENCH_MEMORY_TURNS=n, BENCH_DEBUG=1 (per-event latencies), BENCH_PROFILE=file
(cProfile the server).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tda.config import Settings, offline_library_defaults  # noqa: E402
from tda.db import upgrade_async  # noqa: E402
from tda.demo import seed_demo  # noqa: E402
from tda.store import Store  # noqa: E402

offline_library_defaults()  # as the service does: the history written here is stored with its token counts

SUBSCRIBERS = int(os.environ.get("BENCH_SUBSCRIBERS", "1000"))
RUN_SSE = os.environ.get("BENCH_SSE", "1") != "0"
RUN_REPLICAS = os.environ.get("BENCH_REPLICAS", "1") != "0"
FANOUT_TURNS = 20
TURN_GAP_S = 0.5
CONCURRENCY = 16
WRK_SECONDS = 5
ROUNDS = 3
CONNECT_BATCH = 100
TIMEOUT_S = 60.0
SMALL, LARGE = 200, 10_000
SMALL_SESSIONS = 10
"""Turns at 200 messages go round these, so each stays near 200 as the benchmark adds to it."""
LAT_TURNS = 60
LAT_GETS = 200
MEMORY_SESSIONS = 100
MEMORY_TURNS = int(os.environ.get("BENCH_MEMORY_TURNS", "10000"))
WARMUP_TURNS = int(os.environ.get("BENCH_WARMUP_TURNS", "1000"))
MEMORY_WORKERS = 8
WORDS = (
    "the order shipped late because the depot in Ostrava ran out of boxes so we refunded half of the delivery fee "
    "and promised a voucher next quarter revenue grew four percent while returns fell in every region except north"
).split()


SERVER_PID = 0


def server_cpu() -> float:
    """CPU seconds the server process has used (Linux /proc)."""
    fields = Path(f"/proc/{SERVER_PID}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sentence(rng: random.Random) -> str:
    """A chat message of 10 to 80 words (about 15 to 110 tokens)."""
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 80))).capitalize() + "."


async def record_history(store: Store, session_id: str, messages: int, rng: random.Random) -> None:
    """``messages`` messages recorded as turns (a question and its answer each): both tables grow, as in use."""
    await store.sessions.create({"id": session_id, "profile_id": "demo-tools"}, "bench")
    for turn in range(1, messages // 2 + 1):
        question, answer = sentence(rng), sentence(rng)
        await store.sessions.record_turn(
            session_id,
            {"turn": turn, "query": question, "answer": answer, "model": "gpt-4o"},
            [{"role": "user", "content": question}, {"role": "assistant", "content": answer}],
        )


async def prepare(settings: Settings) -> str:
    await upgrade_async(settings.sqlalchemy_url)
    store = Store.connect(settings.sqlalchemy_url)
    rng = random.Random(11)
    try:
        await seed_demo(store)
        token, _ = await store.tokens.create("bench", "admin")
        for i in range(SMALL_SESSIONS):
            await record_history(store, f"small-{i}", SMALL, rng)
        await record_history(store, "large", LARGE, rng)
        for i in range(MEMORY_SESSIONS):
            await store.sessions.create({"id": f"mem-{i}", "profile_id": "demo-tools"}, "bench")
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
        "TDA_EMBEDDER": "hashing",
        "PYTHONPATH": str(ROOT),
    }
    profile = ["-m", "cProfile", "-o", os.environ["BENCH_PROFILE"]] if os.environ.get("BENCH_PROFILE") else []
    log = (data_dir / f"server-{port}.log").open("wb")  # a pipe nobody reads would fill up and stall the server
    # BENCH_STALLS=1: bench/loop_stalls.py names what holds the event loop (printed in the server's log on exit)
    tda = [str(ROOT / "bench" / "loop_stalls.py")] if os.environ.get("BENCH_STALLS") else ["-m", "tda.cli"]
    return subprocess.Popen(
        [sys.executable, *profile, *tda, "serve"],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


async def wait_ready(base: str, path: str = "/readyz") -> None:
    async with httpx.AsyncClient() as client:
        for _ in range(300):
            try:
                if (await client.get(f"{base}{path}")).status_code == 200:
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


# --- latency at 200 and 10,000 messages ------------------------------------------------------------


def server_timing(header: str) -> dict[str, float]:
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"(\w+);dur=([\d.]+)", header)}


def p50(values: list[float]) -> float:
    return statistics.median(values)


async def latencies(base: str, token: str) -> dict[str, Any]:
    """Turns and session reads alternating between 200 and 10,000 messages: the machine's noise hits both alike."""
    turn_ms: dict[str, list[float]] = {"small": [], "large": []}
    overhead_ms: dict[str, list[float]] = {"small": [], "large": []}
    steps_ms: dict[str, dict[str, list[float]]] = {"small": {}, "large": {}}
    get_ms: dict[str, list[float]] = {"small": [], "large": []}
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        cpu = server_cpu()
        for i in range(LAT_TURNS):
            for size, session in (("small", f"small-{i % SMALL_SESSIONS}"), ("large", "large")):
                started = time.perf_counter()
                r = await client.post(f"/v1/sessions/{session}/turns", json={"query": f"latency question {i}"})
                elapsed = (time.perf_counter() - started) * 1000
                if r.status_code != 201:
                    raise RuntimeError(f"turn failed: {r.status_code} {r.text[:800]}")
                timing = server_timing(r.headers.get("server-timing", ""))
                if i >= 5:  # the first few warm caches up
                    turn_ms[size].append(elapsed)
                    overhead_ms[size].append(timing["turn"] - timing["model"])
                    for step, ms in timing.items():
                        steps_ms[size].setdefault(step, []).append(ms)
        cpu_per_turn = (server_cpu() - cpu) / (2 * LAT_TURNS) * 1000
        for i in range(LAT_GETS):
            for size, session in (("small", f"small-{i % SMALL_SESSIONS}"), ("large", "large")):
                started = time.perf_counter()
                (await client.get(f"/v1/sessions/{session}")).raise_for_status()
                get_ms[size].append((time.perf_counter() - started) * 1000)
    return {
        "turn_small": p50(turn_ms["small"]),
        "turn_large": p50(turn_ms["large"]),
        "overhead_small": p50(overhead_ms["small"]),
        "overhead_large": p50(overhead_ms["large"]),
        "get_small": p50(get_ms["small"]),
        "get_large": p50(get_ms["large"]),
        "cpu_per_turn": cpu_per_turn,
        "steps": {size: {step: p50(ms) for step, ms in steps.items()} for size, steps in steps_ms.items()},
    }


# --- reads against the framework's ceiling -------------------------------------------------------


def wrk(url: str, token: str | None = None) -> float:
    auth = ["-H", f"Authorization: Bearer {token}"] if token else []
    out = subprocess.run(
        ["wrk", "-t1", f"-c{CONCURRENCY}", f"-d{WRK_SECONDS}s", *auth, url],
        capture_output=True,
        text=True,
        check=True,
        timeout=WRK_SECONDS + 30,
    ).stdout
    if "Non-2xx" in out:
        raise RuntimeError(f"wrk saw errors:\n{out}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]


async def reads_vs_bare(base: str, token: str, tmp: Path) -> tuple[list[float], list[float]]:
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}) as client:
        body = (await client.get("/v1/context-window-types")).json()
    (tmp / "types.json").write_text(json.dumps(body))
    port = free_port()
    bare = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "bare_quart.py"), str(port), str(tmp / "types.json")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await wait_ready(f"http://127.0.0.1:{port}", "/v1/context-window-types")
        tda_rps, bare_rps = [], []
        for _ in range(ROUNDS):  # alternating: both see the same machine
            tda_rps.append(await asyncio.to_thread(wrk, f"{base}/v1/context-window-types", token))
            bare_rps.append(await asyncio.to_thread(wrk, f"http://127.0.0.1:{port}/v1/context-window-types"))
        return tda_rps, bare_rps
    finally:
        bare.terminate()
        bare.wait(15)


# --- memory over many turns ----------------------------------------------------------------------


def server_rss_mb() -> float:
    for line in Path(f"/proc/{SERVER_PID}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def many_turns(base: str, token: str, turns: int, tag: str) -> tuple[float, float]:
    """``turns`` turns over MEMORY_SESSIONS sessions by MEMORY_WORKERS clients: (turns/s, server CPU ms a turn).
    Comparing the two phases shows a turn's cost growing with what earlier turns stored (it did: OpenBLAS's threads
    spun after each champion-case search once the cases filled up, ~100 ms of a core a turn after 3,000 turns)."""
    queue = iter(range(turns))
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:

        async def worker() -> None:
            for n in queue:
                r = await client.post(f"/v1/sessions/mem-{n % MEMORY_SESSIONS}/turns", json={"query": f"{tag} {n}"})
                if r.status_code != 201:
                    raise RuntimeError(f"turn failed: {r.status_code} {r.text[:800]}")

        started, cpu = time.perf_counter(), server_cpu()
        await asyncio.gather(*(worker() for _ in range(MEMORY_WORKERS)))
        return turns / (time.perf_counter() - started), (server_cpu() - cpu) / turns * 1000


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tda-bench-") as tmp:
        data = Path(tmp)
        settings = Settings(data_dir=data, modules_dir=data / "modules")
        started = time.perf_counter()
        token = await prepare(settings)
        print(
            f"prepared {SMALL_SESSIONS} sessions of {SMALL} and one of {LARGE:,} messages in "
            f"{time.perf_counter() - started:.0f} s"
        )
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = start_server(data, port)
        global SERVER_PID
        SERVER_PID = server.pid
        try:
            await wait_ready(base)
            print(
                f"server: tda serve (hypercorn, SQLite, mock model, hashing embedder) on {base}; {os.cpu_count()} cores"
            )
            lat = await latencies(base, token)
            ratio_turn, ratio_get = lat["turn_large"] / lat["turn_small"], lat["get_large"] / lat["get_small"]
            print(
                f"POST /v1/sessions/{{id}}/turns p50: {lat['turn_small']:.1f} ms at {SMALL} messages, "
                f"{lat['turn_large']:.1f} ms at {LARGE:,}; ratio {ratio_turn:.2f} "
                f"(target <= 1.5: {verdict(ratio_turn <= 1.5)})"
            )
            worst = max(lat["overhead_small"], lat["overhead_large"])
            print(
                f"turn overhead excluding the model call, p50 (Server-Timing turn - model): "
                f"{lat['overhead_small']:.1f} ms at {SMALL}, {lat['overhead_large']:.1f} ms at {LARGE:,} "
                f"(target <= 10 ms: {verdict(worst <= 10)}); server CPU per turn, all threads, case recording "
                f"included: {lat['cpu_per_turn']:.1f} ms; load average {os.getloadavg()[0]:.1f}"
            )
            for size, n in (("small", SMALL), ("large", LARGE)):
                steps = ", ".join(f"{step} {ms:.1f}" for step, ms in lat["steps"][size].items())
                print(f"  a turn's steps at {n:,} messages, p50 ms (Server-Timing): {steps}")
            print(
                f"GET /v1/sessions/{{id}} p50: {lat['get_small']:.1f} ms at {SMALL} messages, "
                f"{lat['get_large']:.1f} ms at {LARGE:,}; ratio {ratio_get:.2f} "
                f"(target <= 1.5: {verdict(ratio_get <= 1.5)})"
            )
            tda_rps, bare_rps = await reads_vs_bare(base, token, data)
            share = statistics.median(tda_rps) / statistics.median(bare_rps)
            print(
                f"GET /v1/context-window-types: median {statistics.median(tda_rps):,.0f} req/s; bare Quart, same JSON: "
                f"{statistics.median(bare_rps):,.0f} req/s; {share:.0%} of the ceiling (target >= 60%: "
                f"{verdict(share >= 0.6)}); wrk -t1 -c{CONCURRENCY} -d{WRK_SECONDS}s x {ROUNDS} rounds, alternating: "
                f"tda {', '.join(f'{x:,.0f}' for x in tda_rps)}; bare {', '.join(f'{x:,.0f}' for x in bare_rps)}"
            )
            warm_rate, warm_cpu = await many_turns(base, token, WARMUP_TURNS, "warm-up")
            warm_rss = server_rss_mb()
            rate, cpu = await many_turns(base, token, MEMORY_TURNS, "memory")
            rss = server_rss_mb()
            print(
                f"memory: RSS {warm_rss:.0f} MB after {WARMUP_TURNS:,} warm-up turns, {rss:.0f} MB after "
                f"{MEMORY_TURNS:,} more over {MEMORY_SESSIONS} sessions: +{rss - warm_rss:.1f} MB (target < 50 MB: "
                f"{verdict(rss - warm_rss < 50)}); {rate:,.0f} turns/s with {MEMORY_WORKERS} clients, server CPU "
                f"{cpu:.1f} ms a turn (warm-up {warm_rate:,.0f} turns/s, {warm_cpu:.1f} ms)"
            )
            if RUN_SSE:
                await fanout_rounds(port, base, token)
        except Exception:
            log = data / f"server-{port}.log"
            tail = log.read_text(errors="replace").splitlines()[-60:] if log.exists() else []
            print("server log, last lines:\n" + "\n".join(tail), file=sys.stderr)
            raise
        finally:
            server.terminate()
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()

    if RUN_REPLICAS:
        await replicas_fanout()


async def fanout_rounds(port: int, base: str, token: str) -> None:
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
    p50_ms = statistics.median(f["p50_ms"] for f in fans)
    p99_ms = statistics.median(f["p99_ms"] for f in fans)
    print(
        f"SSE fan-out (one server), {SUBSCRIBERS} subscribers x {FANOUT_TURNS} turns x {ROUNDS} rounds: median p50 "
        f"{p50_ms:.1f} ms, median p99 {p99_ms:.1f} ms (target p99 <= 100 ms: {verdict(p99_ms <= 100)})"
    )


# --- SSE fan-out over 2 replicas on PostgreSQL + Redis + Chroma ----------------------------------------


async def replicas_fanout() -> None:
    """SUBSCRIBERS streams split evenly over replicas A and B (one PostgreSQL, one Redis, one Chroma server);
    FANOUT_TURNS turns posted alternately to A and B. Side by side, in alternating rounds on the same servers:
    all streams on A and all turns on A (one replica, no event crosses Redis), the baseline on this machine."""
    from tests.replicas.servers import Backing, MissingServer, admin_token

    try:
        backing = await asyncio.to_thread(Backing.start)
    except MissingServer as exc:  # the figures above stand; this one needs Debian's servers
        print(f"SSE fan-out over 2 replicas: not measured: {exc}")
        return
    replicas = []
    try:
        token = await admin_token(backing.postgres.url())
        replicas = await asyncio.to_thread(backing.replicas, "a", "b")
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=replicas[0].url, headers=headers, timeout=30) as client:
            profile = {"id": "fanout", "type": "llm_only", "system_prompt": "Be brief."}
            (await client.post("/v1/profiles", json=profile)).raise_for_status()
            (await client.post("/v1/sessions", json={"id": "fanout", "profile_id": "fanout"})).raise_for_status()
        print(f"2 replicas (hypercorn) on PostgreSQL, Redis and a Chroma server: {replicas[0].url}, {replicas[1].url}")
        spread, single = [], []
        for r in range(ROUNDS):
            for label, on, fans in (("2 replicas", replicas, spread), ("1 replica ", replicas[:1], single)):
                fan = await _replicas_round(on, token)
                fans.append(fan)
                print(
                    f"  {label} round {r + 1}: received {fan['events']:,}/{fan['expected']:,} events; "
                    f"publish->receipt p50 {fan['p50_ms']:.1f} ms, p99 {fan['p99_ms']:.1f} ms (same replica "
                    f"{fan['p99_local_ms']:.1f}, other replica {fan['p99_cross_ms']:.1f}), max {fan['max_ms']:.1f} ms; "
                    f"CPU per turn, each replica: {fan['cpu_ms']} ms; load average {os.getloadavg()[0]:.1f}"
                )
        p99_ms = statistics.median(f["p99_ms"] for f in spread)
        p99_one = statistics.median(f["p99_ms"] for f in single)
        print(
            f"SSE fan-out over 2 replicas, {SUBSCRIBERS} subscribers x {FANOUT_TURNS} turns x {ROUNDS} rounds: "
            f"median p50 {statistics.median(f['p50_ms'] for f in spread):.1f} ms, median p99 {p99_ms:.1f} ms "
            f"(target p99 <= 100 ms: {verdict(p99_ms <= 100)}); all on one replica, same run: median p99 "
            f"{p99_one:.1f} ms; ratio {p99_ms / p99_one:.2f}"
        )
    finally:
        for replica in replicas:
            replica.stop()
        backing.stop()


async def _replicas_round(replicas: list, token: str) -> dict[str, float]:
    """Subscriber j listens on replica j % len(replicas); turn i is posted to replica i % len(replicas)."""
    n = len(replicas)
    subs = [Subscriber(FANOUT_TURNS) for _ in range(SUBSCRIBERS)]
    path = "/v1/sessions/fanout/events"
    for i in range(0, SUBSCRIBERS, CONNECT_BATCH):
        batch = range(i, min(i + CONNECT_BATCH, SUBSCRIBERS))
        await asyncio.gather(*(subs[j].connect(replicas[j % n].port, path, token) for j in batch))
    gc.collect()
    gc.freeze()
    await asyncio.wait_for(asyncio.gather(*(s.ready for s in subs)), TIMEOUT_S)
    headers = {"Authorization": f"Bearer {token}"}
    clients = [httpx.AsyncClient(base_url=r.url, headers=headers, timeout=30) for r in replicas]
    cpu_before = [process_cpu(r.proc.pid) for r in replicas]
    try:
        for i in range(FANOUT_TURNS):
            (await clients[i % n].post("/v1/sessions/fanout/turns", json={"query": f"question {i}"})).raise_for_status()
            await asyncio.sleep(TURN_GAP_S)
        await asyncio.wait_for(asyncio.gather(*(s.done for s in subs)), TIMEOUT_S)
        # Each replica's CPU per turn: its own turns (half of them, or all) plus fanning out every event.
        used = [process_cpu(r.proc.pid) - before for r, before in zip(replicas, cpu_before, strict=True)]
        cpu_ms = [x / FANOUT_TURNS * 1000 for x in used]
    finally:
        for client in clients:
            await client.aclose()
        for s in subs:
            s.close()
    local = sorted(x * 1000 for j, s in enumerate(subs) for i, x in enumerate(s.latencies) if i % n == j % n)
    cross = sorted(x * 1000 for j, s in enumerate(subs) for i, x in enumerate(s.latencies) if i % n != j % n)
    every = sorted(local + cross)
    p99 = lambda values: statistics.quantiles(values, n=100)[98] if len(values) > 1 else float("nan")  # noqa: E731
    return {
        "events": len(every),
        "expected": SUBSCRIBERS * FANOUT_TURNS,
        "p50_ms": statistics.quantiles(every, n=100)[49],
        "p99_ms": p99(every),
        "p99_local_ms": p99(local),
        "p99_cross_ms": p99(cross),
        "max_ms": every[-1],
        "cpu_ms": ", ".join(f"{x:.1f}" for x in cpu_ms),
    }


def process_cpu(pid: int) -> float:
    """CPU seconds a process has used (Linux /proc): unlike latency, barely moved by other load on the machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    from tda.server_cli import run_event_loop

    # the client side gets uvloop too, as the server does
    run_event_loop(replicas_fanout() if "--replicas" in sys.argv else main())
