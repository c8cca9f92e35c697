"""Time to a streamed reply's first byte (session 50, streamcut): what the client waits for before the stream starts,
on /v1/chat/completions, /v1/responses and /v1/messages, stateless and with a session, for a short chat (4 messages)
and a long one (2,001 messages, ~60K tokens, to a 16K profile: its window cuts most of it).

One fake upstream (tests/gateway/upstream.py, no delay) and one `tda serve` per checkout named in BENCH_STREAM_ROOTS
(``name=path,...``; default: this checkout), each run from its own tree (PYTHONPATH, cwd) by this interpreter, SQLite,
the hashing embedder. Calls go one at a time on a keep-alive connection, the checkouts interleaved call by call,
each first by turns; per call: the response's headers (httpx returns them with the stream open), its first body
bytes, its end. Every reply is checked to be the fake's answer. Medians per cell, ms. Knobs: BENCH_STREAM_CALLS (per
cell and checkout, default 30), BENCH_STREAM_LONG (the long chat's turns, default 1000).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.gateway.servers import (  # noqa: E402
    admin_token,
    free_port,
    server_env,
    start,
    start_fake_upstream,
    stop,
    wait_until_serving,
)
from tests.gateway.upstream import ECHO_PREFIX  # noqa: E402

CALLS = int(os.environ.get("BENCH_STREAM_CALLS", "30"))
LONG_TURNS = int(os.environ.get("BENCH_STREAM_LONG", "1000"))
WIRES = ("chat", "responses", "messages")
PROFILE = {"id": "p16k", "type": "tool_enabled", "system_prompt": "", "context_limit": 16_000}
SYSTEM = "You are a concise assistant for a software company's support desk."


def chat(turns: int) -> list[dict[str, str]]:
    """A system message, ``turns`` question-and-answer pairs, and the question asked now."""
    out = [{"role": "system", "content": SYSTEM}]
    for n in range(turns):
        out += [
            {"role": "user", "content": f"Question {n}: which plan includes feature {n} and what does it cost?"},
            {"role": "assistant", "content": f"Feature {n} is in the Business plan, at {n % 90 + 10} dollars a month."},
        ]
    return [*out, {"role": "user", "content": "And what does single sign-on cost per month?"}]


def request(wire: str, messages: list[dict[str, str]], session: bool) -> tuple[str, dict[str, Any]]:
    system, rest = messages[0]["content"], messages[1:]
    if wire == "chat":
        return "/v1/chat/completions", {"model": "tda", "messages": messages, "stream": True}
    if wire == "responses":
        return "/v1/responses", {
            "model": "tda",
            "instructions": system,
            "input": rest,
            "stream": True,
            "store": session,
        }
    return "/v1/messages", {"model": "tda", "max_tokens": 256, "system": system, "messages": rest, "stream": True}


async def timed_call(
    http: httpx.AsyncClient, base: str, token: str, wire: str, cell: tuple[Any, ...]
) -> tuple[float, ...]:
    """Milliseconds to the headers, to the first body bytes, to the end."""
    messages, session = cell
    path, body = request(wire, messages, bool(session))
    headers = {"Authorization": f"Bearer {token}", "x-api-key": token, "X-TDA-Profile": "p16k"}
    headers |= {"X-TDA-Session": session} if session else {}
    started = time.perf_counter()
    async with http.stream("POST", base + path, json=body, headers=headers) as r:
        at_headers = time.perf_counter()
        chunks = r.aiter_raw()
        first = await anext(chunks)
        at_first = time.perf_counter()
        rest = b"".join([first, *[c async for c in chunks]])
    ended = time.perf_counter()
    if r.status_code != 200 or ECHO_PREFIX.encode() not in rest.replace(b'\\"', b'"'):
        raise RuntimeError(f"{base}{path}: {r.status_code} {rest[:300]!r}")
    return tuple((t - started) * 1000 for t in (at_headers, at_first, ended))


def start_servers(folder: Path, roots: dict[str, Path], upstream: str) -> tuple[list[Any], dict[str, tuple[str, str]]]:
    processes, targets = [], {}
    for name, root in roots.items():
        data = folder / name
        data.mkdir()
        token, port = admin_token(data), free_port()
        env = server_env(data, port, upstream) | {"PYTHONPATH": str(root)}
        process = start([sys.executable, "-m", "tda.cli", "serve"], env, data / "server.log")
        processes.append(process)
        wait_until_serving(process, f"http://127.0.0.1:{port}/readyz", data / "server.log")
        targets[name] = (f"http://127.0.0.1:{port}", token)
    return processes, targets


async def measure(targets: dict[str, tuple[str, str]]) -> dict[tuple[str, ...], list[tuple[float, ...]]]:
    figures: dict[tuple[str, ...], list[tuple[float, ...]]] = {}
    sizes = {"short": chat(1), "long": chat(LONG_TURNS)}
    async with httpx.AsyncClient(timeout=120) as http:
        for base, token in targets.values():
            r = await http.post(base + "/v1/profiles", json=PROFILE, headers={"Authorization": f"Bearer {token}"})
            assert r.status_code == 201, r.text
        for size, messages in sizes.items():
            for wire in WIRES:
                for mode in ("stateless", "session"):
                    cell = (messages, f"s-{size}-{wire}" if mode == "session" else None)
                    for base, token in targets.values():  # warm-up (and a session's first call)
                        for _ in range(3):
                            await timed_call(http, base, token, wire, cell)
                    for n in range(CALLS):
                        for name, (base, token) in sorted(targets.items(), reverse=n % 2 == 1):  # each first by turns
                            times = await timed_call(http, base, token, wire, cell)
                            figures.setdefault((size, wire, mode, name), []).append(times)
                    print(size, wire, mode, flush=True)
    return figures


def main() -> None:
    given = os.environ.get("BENCH_STREAM_ROOTS", f"this={ROOT}")
    roots = {name: Path(path) for name, path in (item.split("=", 1) for item in given.split(","))}
    with tempfile.TemporaryDirectory() as folder:
        upstream_process, upstream = start_fake_upstream(Path(folder))
        processes = [upstream_process]
        try:
            started, targets = start_servers(Path(folder), roots, upstream)
            processes += started
            figures = asyncio.run(measure(targets))
        finally:
            for process in reversed(processes):
                stop(process)
    print(f"\n{CALLS} streamed calls per cell and checkout, interleaved; medians, ms (headers / first bytes / end)")
    for key, times in figures.items():
        med = [statistics.median(t[i] for t in times) for i in range(3)]
        print(f"{' '.join(f'{k:10}' for k in key)} {med[0]:8.2f} {med[1]:8.2f} {med[2]:8.2f}")


if __name__ == "__main__":
    main()
