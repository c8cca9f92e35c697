"""Big-request benchmark: how long one valid 100,000-message chat request holds up everyone else.

A real server (`tda serve`: hypercorn, SQLite, the mock model, TDA_EMBEDDER=hashing) runs in a child process on
127.0.0.1. One client posts a chat completion of MESSAGES messages (about 5 MB of JSON; stateless, then recorded in a
session with ``X-TDA-Session``) while another asks ``GET /healthz`` every PROBE_EVERY_S. The figures are /healthz's
p99 and slowest answer during the big request (target: p99 under 100 ms), next to the big request's own time,
/healthz's median with nothing in flight, and its slowest answer in the AFTER_S after. BENCH_STALLS=1 also prints what
held the event loop (bench/loop_stalls.py). Run with `python bench/big_request_bench.py`; BENCH_MESSAGES=n changes the
size.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.service_bench import start_server  # noqa: E402
from tests.service.support import free_port  # noqa: E402

MESSAGES = int(os.environ.get("BENCH_MESSAGES", "100000"))
PROBE_EVERY_S = 0.02
AFTER_S = 2.0
"""/healthz is asked this long after the big request too (``healthz_after_max_ms``): what the request leaves behind
(its objects freed, the collection that resumes) is its cost as well."""
TARGET_MS = 100.0


def conversation(n: int) -> list[dict[str, str]]:
    """``n`` short messages, user and assistant in turn, ending with the user's."""
    roles = ("user", "assistant")
    return [{"role": roles[(n - 1 - i) % 2], "content": f"message {i}: what happened next?"} for i in range(n)]


def admin_token(data_dir: Path) -> str:
    env = {**os.environ, "TDA_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "tda.cli", "tokens", "create", "--role", "admin"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return next(word for word in out.split() if word.startswith("tda_"))


async def probe(client: httpx.AsyncClient, stop: asyncio.Event) -> list[tuple[float, float]]:
    """(when it was asked, its latency in ms) of /healthz until ``stop``, one request at a time."""
    times = []
    while not stop.is_set():
        started = time.perf_counter()
        r = await client.get("/healthz")
        assert r.status_code == 200
        times.append((started, (time.perf_counter() - started) * 1000))
        await asyncio.sleep(PROBE_EVERY_S)
    return times


def percentile(values: list[float], p: float) -> float:
    """The ``p``th percentile, nearest rank (with under 100 probes, p99 is the slowest)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, -(-len(ordered) * p // 100) - 1))]


async def measure(base: str, token: str, body: bytes, headers: dict[str, str]) -> dict[str, float]:
    async with (
        httpx.AsyncClient(base_url=base, timeout=600) as big,
        httpx.AsyncClient(base_url=base, timeout=600) as small,
    ):
        stop = asyncio.Event()
        quiet = asyncio.create_task(probe(small, stop))
        await asyncio.sleep(1.0)
        stop.set()
        idle = [ms for _, ms in await quiet]
        stop = asyncio.Event()
        probes = asyncio.create_task(probe(small, stop))
        started = time.perf_counter()
        phase_began = time.monotonic()
        sent = {"Authorization": f"Bearer {token}", "Content-Type": "application/json", **headers}
        r = await big.post("/v1/chat/completions", content=body, headers=sent)
        took = time.perf_counter() - started
        await asyncio.sleep(AFTER_S)
        stop.set()
        probed = await probes
    assert r.status_code == 200, r.text[:500]
    busy = [ms for at, ms in probed if at < started + took]
    after = [ms for at, ms in probed if at >= started + took]
    return {
        "request_s": round(took, 2),
        "healthz_idle_p50_ms": round(statistics.median(idle), 1),
        "healthz_busy_max_ms": round(max(busy), 1),
        "healthz_busy_p99_ms": round(percentile(busy, 99), 1),
        "healthz_busy_p50_ms": round(statistics.median(busy), 1),
        "probes": len(busy),
        "healthz_after_max_ms": round(max(after), 1),
        "began": phase_began,
    }


def print_stalls(log: Path, phases: list[tuple[float, str]]) -> None:
    """The server's loop-stall and gc-full lines (bench/loop_stalls.py), each named by the request it fell in."""
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith(("loop-stall", "gc-full")):
            at = float(line.split(" at ", 1)[1].split(":", 1)[0])
            name = next((n for began, n in reversed(phases) if at >= began), "before")
            print(f"{name}: {line}")


async def client_post(base: str, token: str, body: dict[str, object]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=base, timeout=600) as client:
        return await client.post("/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {token}"})


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        data_dir = Path(folder)
        subprocess.run(
            [sys.executable, "-m", "tda.cli", "db", "upgrade"],
            env={**os.environ, "TDA_DATA_DIR": folder, "PYTHONPATH": str(ROOT)},
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        token = admin_token(data_dir)
        phases: list[tuple[float, str]] = []
        port = free_port()
        server = start_server(data_dir, port)
        base = f"http://127.0.0.1:{port}"
        try:
            async with httpx.AsyncClient() as client:  # ready: tda serve answers /healthz while it loads
                for _ in range(1200):
                    try:
                        if (await client.get(f"{base}/readyz")).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    await asyncio.sleep(0.1)
            # A small chat first: what the first call of a process costs (litellm builds its validators on its first
            # completion) is not the big request's.
            warm = await client_post(base, token, {"model": "tda", "messages": conversation(3)})
            assert warm.status_code == 200, warm.text[:500]
            body = json.dumps({"model": "tda", "messages": conversation(MESSAGES)}).encode()
            print(f"{MESSAGES:,} messages, {len(body) / 1e6:.1f} MB of JSON")
            for name, headers in (("stateless", {}), ("session", {"X-TDA-Session": "big"})):
                figures = await measure(base, token, body, headers)
                phases.append((figures.pop("began"), name))
                verdict = "ok" if figures["healthz_busy_p99_ms"] < TARGET_MS else "OVER TARGET"
                print(f"{name}: {json.dumps(figures)} (target: /healthz p99 under {TARGET_MS:g} ms) {verdict}")
        finally:
            server.terminate()
            server.wait(30)
        if os.environ.get("BENCH_STALLS"):
            print_stalls(data_dir / f"server-{port}.log", phases)
        if os.environ.get("BENCH_LOG"):  # the server's whole log kept (faulthandler's dumps: BENCH_STALL_DUMP_MS)
            shutil.copy(data_dir / f"server-{port}.log", os.environ["BENCH_LOG"])


if __name__ == "__main__":
    asyncio.run(main())
