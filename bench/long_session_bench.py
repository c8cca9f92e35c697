"""Long sessions, turn by turn (`make bench`, issue 32): does a turn's cost follow its window, or the session?

Two processes on 127.0.0.1: the fake OpenAI upstream (tests/gateway/upstream.py) and `tda serve` (mock model off,
SQLite, the default embedder unless BENCH_LONG_EMBEDDER names another) whose provider is the fake. One client:
* gateway: an agent session through /v1/chat/completions with ``X-TDA-Session``, GATEWAY_TURNS turns of
  user -> tool call -> tool result -> answer (tests/agent_session.py's questions and tool results; the replies
  are the fake's, sent back as a client would), each turn two calls, to a profile with a 16K limit. Per call: the
  wall time, the server's CPU time (/proc), and the window's utilisation from the ``usage.tda`` extension
  (tokens sent / the available budget), counted once the history exceeds the window; from what the fake received
  (its ``--record-to`` file), whether the turn's two steps sent the same history part (the messages before the
  turn's question: the provider's prompt cache holds within the turn) and the newest complete turn whole (its
  question, call, result and answer, in order). Then the same calls without a session (stateless): 10 turns of a
  new conversation and 10 going on from the session's end; and streamed stateless calls (a first question; the
  whole session's); and, first, another long agent chat of GATEWAY_TURNS turns sent RESENT_CALLS times without a
  session to a server that has not seen it (resent: a framework's default). The same requests (the same bodies,
  to the same fake) go through the LiteLLM proxy (bench/litellm_proxy.py, as in gateway_bench.py) in its own
  process: per mode, tda's and the proxy's whole-process CPU per call (/proc/<pid>/stat: threads that ended and
  child processes included), side by side.
* native: NATIVE_TURNS turns recorded one by one through POST /v1/sessions/{id}/turns; per turn the server's own
  time (its ``Server-Timing`` steps but the model call) and its CPU time (/proc: steadier than wall time on a loaded
  machine), and the server's RSS at the start, at turn 100 (its caches warm) and at the end.
Reported: medians of the first and last 10 turns and their ratio (the growth), utilisation, CPU per call, and the
summary calls of the session (`history_summary` in the snapshots' `auxiliary_calls`): those made inside a call, which
it waited for, and those made ahead, after the previous call's response (``ahead``).
Knobs: BENCH_LONG_TURNS (gateway, default 100), BENCH_LONG_NATIVE_TURNS (default 1,000), BENCH_LONG_EMBEDDER,
BENCH_LONG_PARTS (default "gateway,stateless,native"; "native" runs the native turns alone; "resent": the resent
mode alone, each call's in-request CPU read apart, against the proxy; "stateless": a new
conversation of GATEWAY_TURNS turns without a session, resent whole each call, its growth; "side": a session grown to
GATEWAY_TURNS - 10 turns, then its last 10 turns side by side with a young session's first 10, call pair by call
pair, so both ends run at the same load: CPU and wall ms a call), BENCH_LONG_ROWS (rows per tool result, default 20),
BENCH_LONG_UPSTREAM_MS (the fake's latency: each completion, a summary's too, answered that many ms after it came;
default 0), BENCH_LONG_PAUSE_MS (the client's pause after each call; default 0), BENCH_LONG_TRACE (a file: each call's
trace, one JSON line, bench/call_trace.py; the server runs with a probe, bench/serve_probe.py, that spins a fixed
pure-Python loop before and after each call, and the session's growth is also given at the machine's usual speed:
this host runs that loop 1.4-1.7x slower in episodes of seconds, and a ten-turn median that met one reads the host,
not tda: docs/history/benchmarks-log.md, "Session 48 (growth8)").
"""

from __future__ import annotations

import asyncio
import json
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

from bench.call_trace import CallTrace, at_usual_speed  # noqa: E402
from bench.litellm_proxy import PROXY_KEY, start_proxy, tree_cpu_seconds  # noqa: E402
from tests.agent_session import SYSTEM, TOOLS, orders, question, turn_messages  # noqa: E402
from tests.gateway.servers import (  # noqa: E402
    MODEL,
    admin_token,
    free_port,
    server_env,
    start,
    start_fake_upstream,
    stop,
    wait_until_serving,
)

GATEWAY_TURNS = int(os.environ.get("BENCH_LONG_TURNS", "100"))
NATIVE_TURNS = int(os.environ.get("BENCH_LONG_NATIVE_TURNS", "1000"))
EMBEDDER = os.environ.get("BENCH_LONG_EMBEDDER")
PARTS = set(os.environ.get("BENCH_LONG_PARTS", "gateway,stateless,native").split(","))
LIMIT = 16_000
AVAILABLE = LIMIT - LIMIT * 12 // 100  # Balanced keeps 12% for the reply
PROXY_ROUNDS = 3
RESENT_CALLS = 10
"""How many times the resent mode sends its long conversation (whose turns are numbered from RESENT_FIRST)."""
RESENT_FIRST = 5_000
SIDE_FIRST = 9_000
"""The side mode's young session's turns are numbered from here: none of its texts is another mode's (vectors are
kept by text, and the resent mode's chat holds turns RESENT_FIRST...)."""
FRESH_FIRST = 7_000
"""The stateless mode's new conversation's turns are numbered from here: a new conversation is new text (turns 1...
are the session's, whose vectors the server keeps by text: a new conversation of them cost 10 ms a call, ~40 new)."""
STATELESS_FIRST = 12_000
"""The stateless part's conversation (a new one, resent whole each call) is numbered from here."""
SETTLE_S = 3.0
"""After the last turn, how long its indexing may take before the process's CPU is read."""
UPSTREAM_MS = float(os.environ.get("BENCH_LONG_UPSTREAM_MS", "0"))
"""The fake upstream's latency per completion (a provider's round trip): what a summary made inside a call adds."""
TRACE = os.environ.get("BENCH_LONG_TRACE")
"""A file: each gateway call's trace, one JSON line (bench/call_trace.py), the server run with bench/serve_probe.py."""
PAUSE_S = float(os.environ.get("BENCH_LONG_PAUSE_MS", "0")) / 1000
"""A pause after each gateway call (a client's own time between calls): what the server does after a response then
runs before the next call, not inside it."""
ROWS = int(os.environ.get("BENCH_LONG_ROWS", "20"))
"""Rows per tool result (20: ~1,000 tokens; 55, issue 32's: ~2,750): the fake quotes a result in its answer, so a
turn adds about twice that."""


def cpu_seconds(pid: int) -> float:
    """The process's CPU time to the nanosecond: its threads' time on a CPU (/proc/<pid>/task/*/schedstat). The
    clock-tick counts of /proc/<pid>/stat move in 10 ms steps, as large as the differences measured here."""
    try:
        return sum(int(f.read_text().split()[0]) for f in Path(f"/proc/{pid}/task").glob("*/schedstat")) / 1e9
    except (OSError, ValueError, IndexError):  # a thread that ended while read, or no schedstat: ticks
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


class Tda:
    def __init__(self, base: str, token: str, pid: int) -> None:
        self.base, self.pid = base, pid
        self.headers = {"Authorization": f"Bearer {token}"}
        self.client = httpx.AsyncClient(base_url=base, timeout=120, headers=self.headers)
        self.trace: CallTrace | None = None

    async def chat(self, messages: list[dict[str, Any]], session: str | None) -> tuple[dict[str, Any], float, float]:
        """One call: the completion (with its snapshot's id), its wall seconds and the server's CPU seconds."""
        headers = {"X-TDA-Profile": "agent", **({"X-TDA-Session": session} if session else {})}
        traced = self.trace.before() if self.trace else None
        cpu, started = cpu_seconds(self.pid), time.perf_counter()
        r = await self.client.post(
            "/v1/chat/completions", json={"model": "tda", "messages": messages, "tools": TOOLS}, headers=headers
        )
        wall, spent = time.perf_counter() - started, cpu_seconds(self.pid) - cpu
        if self.trace and traced:
            self.trace.after(traced, r.status_code)
        await asyncio.sleep(PAUSE_S)
        if r.status_code != 200:
            raise RuntimeError(f"tda answered {r.status_code}: {r.text[:500]}")
        completion = r.json()
        completion["snapshot_id"] = r.headers.get("X-TDA-Snapshot")  # read after the session (``with_snapshot``)
        return completion, wall, spent

    async def with_snapshot(self, completion: dict[str, Any]) -> dict[str, Any]:
        """``completion`` with its window's ``utilisation``, summaries and step timings, from its snapshot when it
        was recorded. Read once the session's CPU is: the bench's reads are no part of a call's cost (reading a
        snapshot puts its conversation back together, ~10 ms of the server's CPU)."""
        if completion.get("snapshot_id") is None:  # a stateless call keeps no snapshot: its usage extension
            cut = (completion.get("usage") or {}).get("tda") or {}
            return completion | {"utilisation": cut.get("tokens_sent", 0) / AVAILABLE}
        snapshot = (await self.client.get(f"/v1/snapshots/{completion['snapshot_id']}")).json()
        snapshot = snapshot.get("snapshot", snapshot)
        calls = snapshot.get("auxiliary_calls", [])
        return completion | {
            "utilisation": snapshot["total_used"] / snapshot["available_budget"],
            "summaries": sum(c["purpose"] == "history_summary" and not c.get("ahead") for c in calls),
            "summaries_ahead": sum(c["purpose"] == "history_summary" and bool(c.get("ahead")) for c in calls),
            "steps_ms": snapshot.get("timings_ms", {}),
        }

    async def streamed_cpu_ms(self, messages: list[dict[str, Any]], calls: int = 10) -> float:
        """``calls`` streamed calls without a session, each read to its end: the whole process's CPU ms per call."""
        cpu = tree_cpu_seconds(self.pid)
        for _ in range(calls):
            await streamed(self.client, "/v1/chat/completions", messages, "tda", {"X-TDA-Profile": "agent"})
        return (tree_cpu_seconds(self.pid) - cpu) / calls * 1000


async def streamed(
    client: httpx.AsyncClient, url: str, messages: list[dict[str, Any]], model: str, headers: dict[str, str]
) -> None:
    """One streamed call, read to its end (which must be ``[DONE]``)."""
    body = {"model": model, "messages": messages, "tools": TOOLS, "stream": True}
    async with client.stream("POST", url, json=body, headers=headers) as r:
        if r.status_code != 200:
            raise RuntimeError(f"{url} answered {r.status_code}: {(await r.aread())[:500]!r}")
        chunks = [chunk async for chunk in r.aiter_bytes()]
    if b"[DONE]" not in b"".join(chunks):
        raise RuntimeError(f"{url}'s stream did not end with [DONE]")


class Proxy:
    """The LiteLLM proxy, sent the requests tda was sent: its whole process's CPU ms per call."""

    def __init__(self, url: str, pid: int) -> None:
        self.url, self.pid = url, pid
        self.client = httpx.AsyncClient(timeout=120, headers={"Authorization": f"Bearer {PROXY_KEY}"})

    async def call(self, messages: list[dict[str, Any]], stream: bool) -> None:
        if stream:
            return await streamed(self.client, self.url, messages, MODEL, {})
        r = await self.client.post(self.url, json={"model": MODEL, "messages": messages, "tools": TOOLS})
        if r.status_code != 200:
            raise RuntimeError(f"the proxy answered {r.status_code}: {r.text[:500]}")

    async def cpu_ms(self, bodies: list[list[dict[str, Any]]], stream: bool = False) -> float:
        """CPU ms per call of ``bodies`` sent one after the other (after one warm-up call): the median of
        PROXY_ROUNDS rounds (the process's CPU moves in 10 ms steps: a round is read over all its calls)."""
        await self.call(bodies[0], stream)
        rounds = []
        for _ in range(PROXY_ROUNDS):
            cpu = tree_cpu_seconds(self.pid)
            for messages in bodies:
                await self.call(messages, stream)
            rounds.append((tree_cpu_seconds(self.pid) - cpu) / len(bodies) * 1000)
        return median(rounds)


def history_part(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages a window sent before the turn's question (its last user message)."""
    messages = body["messages"]
    asked = max(i for i, m in enumerate(messages) if m["role"] == "user")
    return messages[:asked]


def shown(message: dict[str, Any]) -> tuple[Any, ...]:
    """What a message says, however its empty content or its calls' extra fields were written."""
    calls = tuple(c["id"] for c in message.get("tool_calls") or ())
    return message["role"], message.get("content") or "", message.get("tool_call_id"), calls


def holds_turn(body: dict[str, Any], turn: list[dict[str, Any]]) -> bool:
    """Whether ``turn``'s messages are in the window whole, in order, one after the other."""
    sent, wanted = [shown(m) for m in body["messages"]], [shown(m) for m in turn]
    return any(sent[i : i + len(wanted)] == wanted for i in range(len(sent) - len(wanted) + 1))


def answered(record: Path) -> list[dict[str, Any]]:
    """The bodies of the calls that answered the client, in order (a summary or a rewrite carries no tools)."""
    lines = record.read_text().splitlines() if record.exists() else []
    bodies = [json.loads(line) for line in lines]
    return [b["body"] for b in bodies if b["path"] == "/chat/completions" and b["body"].get("tools")]


def reply_message(completion: dict[str, Any]) -> dict[str, Any]:
    message = completion["choices"][0]["message"]
    return {k: v for k, v in message.items() if k in ("role", "content", "tool_calls") and v is not None}


async def gateway(
    tda: Tda, session: str | None, turns: int, chat: list[dict[str, Any]], numbered: int | None = None
) -> list[dict[str, Any]]:
    """``turns`` agent turns (two calls each) going on from ``chat``; per turn its wall and CPU ms, the window's
    utilisation (its first call's, and the lower of its two calls') and the newest complete turn before it.
    ``numbered``: the first turn's number (its texts), else the next after ``chat``'s."""
    out: list[dict[str, Any]] = []
    start = numbered if numbered is not None else len(chat) // 4 + 1
    for turn in range(start, start + turns):
        if tda.trace:
            tda.trace.label = {"session": session, "turn": turn, "step": 1}
        process_cpu = tree_cpu_seconds(tda.pid)
        newest = chat[-4:] if len(chat) >= 5 else []
        chat.append({"role": "user", "content": question(turn)})
        sent = [len(chat)]
        first, wall1, cpu1 = await tda.chat(chat, session)
        spins = [tda.trace.spin_ms] if tda.trace else []
        called = reply_message(first)
        if not called.get("tool_calls"):
            raise RuntimeError(f"the fake did not call the tool: {called}")
        chat.append(called)
        chat.append({"role": "tool", "tool_call_id": called["tool_calls"][0]["id"], "content": orders(turn, ROWS)})
        sent.append(len(chat))
        if tda.trace:
            tda.trace.label["step"] = 2
        second, wall2, cpu2 = await tda.chat(chat, session)
        spins += [tda.trace.spin_ms] if tda.trace else []
        chat.append(reply_message(second))
        out.append(
            {
                "wall_ms": (wall1 + wall2) / 2 * 1000,
                "cpu_ms": (cpu1 + cpu2) / 2 * 1000,
                "calls": (first, second),
                "newest": newest,
                "over": sum(len(json.dumps(m)) for m in chat) / 4 > AVAILABLE * 1.5,  # history well over the window
                "process_cpu_s": process_cpu,
                "sent": sent,
                "spin_ms": statistics.fmean(known) if (known := [s for s in spins if s is not None]) else None,
            }
        )
    await asyncio.sleep(SETTLE_S)  # the last turn's indexing, after its response
    for row, after in zip(out, [*(row["process_cpu_s"] for row in out[1:]), tree_cpu_seconds(tda.pid)], strict=True):
        row["process_cpu_ms"] = (after - row["process_cpu_s"]) / 2 * 1000  # a call's share of its turn
    for row in out:
        first, second = row.pop("calls")
        row |= snapshot_figures(await tda.with_snapshot(first), await tda.with_snapshot(second))
    return out


def snapshot_figures(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """A turn's figures from its two calls' snapshots: utilisation (the first's, and the lower), summaries, steps."""
    return {
        "utilisation": first.get("utilisation", 0.0),
        "utilisation_low": min(first.get("utilisation", 0.0), second.get("utilisation", 0.0)),
        "summaries": first.get("summaries", 0) + second.get("summaries", 0),
        "summaries_ahead": first.get("summaries_ahead", 0) + second.get("summaries_ahead", 0),
        "assemble_ms_by_call": [  # each call's assembly, and whether it showed a new summary (made inside or ahead)
            (c.get("steps_ms", {}).get("assemble", 0.0), bool(c.get("summaries", 0) + c.get("summaries_ahead", 0)))
            for c in (first, second)
        ],
        "steps_ms": {
            step: (first.get("steps_ms", {}).get(step, 0.0) + second.get("steps_ms", {}).get(step, 0.0)) / 2
            for step in {*first.get("steps_ms", {}), *second.get("steps_ms", {})}
        },
    }


async def native(tda: Tda, turns: int) -> dict[str, Any]:
    """``turns`` native turns recorded one by one: per turn the server's own ms and its CPU ms; RSS (MiB) before the
    first turn, after the 100th and after the last."""
    r = await tda.client.post("/v1/sessions", json={"id": "native-long", "profile_id": "agent"})
    r.raise_for_status()
    rss = [rss_mib(tda.pid)]
    timings, cpus = [], []
    for turn in range(1, turns + 1):
        cpu = cpu_seconds(tda.pid)
        r = await tda.client.post("/v1/sessions/native-long/turns", json={"query": question(turn)})
        cpus.append((cpu_seconds(tda.pid) - cpu) * 1000)
        if r.status_code != 201:
            raise RuntimeError(f"turn {turn}: {r.status_code} {r.text[:300]}")
        steps = dict(part.strip().split(";dur=") for part in r.headers["Server-Timing"].split(","))
        timings.append(sum(float(ms) for step, ms in steps.items() if step != "model"))  # tda's own time
        if turn == 100:
            rss.append(rss_mib(tda.pid))
    rss.append(rss_mib(tda.pid))
    first, last = median(timings[90:100]), median(timings[-10:])
    cpu_first, cpu_last = median(cpus[90:100]), median(cpus[-10:])
    return {
        "native_turns": turns,
        "native_ms_turns_91_100": first,
        "native_ms_last10": last,
        "native_growth": last / first if first else 0.0,
        "native_cpu_ms_turns_91_100": cpu_first,
        "native_cpu_ms_last10": cpu_last,
        "native_cpu_growth": cpu_last / cpu_first if cpu_first else 0.0,
        "native_rss_mib": [round(m) for m in rss],
    }


def mean_first_last(rows: list[float]) -> tuple[float, float, float]:
    """As ``first_last`` with means: a process's CPU read in 10 ms steps is exact over a sum, not per call."""
    first, last = statistics.fmean(rows[:10]), statistics.fmean(rows[-10:])
    return first, last, last / first if first else 0.0


def first_last(rows: list[float]) -> tuple[float, float, float]:
    first, last = median(rows[:10]), median(rows[-10:])
    return first, last, last / first if first else 0.0


def steps(rows: list[dict[str, Any]], bodies: list[dict[str, Any]]) -> dict[str, float]:
    """Over the turns whose history exceeds the window: the share whose two steps sent the same history part, the
    share whose second step's history part is the first's beginning (the cache holds up to it), and the share whose
    steps both held the newest complete turn whole."""
    if len(bodies) != 2 * len(rows):
        raise RuntimeError(f"the fake answered {len(bodies)} calls with tools for {len(rows)} turns")
    over = [(row, bodies[2 * i], bodies[2 * i + 1]) for i, row in enumerate(rows) if row["over"]]
    same = [history_part(first) == history_part(second) for _, first, second in over]
    prefix = [history_part(first)[: len(history_part(second))] == history_part(second) for _, first, second in over]
    whole = [holds_turn(first, row["newest"]) and holds_turn(second, row["newest"]) for row, first, second in over]
    return {
        "steps_identical": sum(same) / len(over) if over else 0.0,
        "steps_prefix": sum(prefix) / len(over) if over else 0.0,
        "newest_turn_whole": sum(whole) / len(over) if over else 0.0,
    }


def run(folder: Path) -> dict[str, Any]:
    processes = []
    try:
        upstream, upstream_base = start_fake_upstream(folder, folder / "upstream.jsonl", UPSTREAM_MS)
        processes.append(upstream)
        data = folder / "tda"
        data.mkdir()
        token = admin_token(data)
        port = free_port()
        env = server_env(data, port, upstream_base)
        if EMBEDDER:
            env["TDA_EMBEDDER"] = EMBEDDER
        else:
            env.pop("TDA_EMBEDDER", None)  # tda's default
        command = [sys.executable, "-m", "tda.cli", "serve"]
        if TRACE:
            env["BENCH_PROBE_OUT"] = str(folder / "probe.jsonl")
            command = [sys.executable, str(ROOT / "bench" / "serve_probe.py"), "serve"]
        server = start(command, env, data / "server.log")
        processes.append(server)
        proxy = None
        if PARTS & {"gateway", "resent"}:
            proxy_process, proxy_url = start_proxy(folder, upstream_base)
            processes.append(proxy_process)
            proxy = Proxy(proxy_url, proxy_process.pid)
        wait_until_serving(server, f"http://127.0.0.1:{port}/healthz", data / "server.log")
        tda = Tda(f"http://127.0.0.1:{port}", token, server.pid)
        if TRACE:
            tda.trace = CallTrace(server.pid, folder / "probe.jsonl", Path(TRACE))
        return asyncio.run(measure(tda, proxy, folder))
    finally:
        for process in reversed(processes):
            stop(process)


async def measure(tda: Tda, proxy: Proxy | None, folder: Path) -> dict[str, Any]:
    r = await tda.client.post(
        "/v1/profiles", json={"id": "agent", "type": "tool_enabled", "model": "gpt-4.1", "context_limit": LIMIT}
    )
    r.raise_for_status()
    figures = await gateway_figures(tda, proxy, folder / "upstream.jsonl") if "gateway" in PARTS and proxy else {}
    if "resent" in PARTS and "gateway" not in PARTS and proxy is not None:
        figures |= await resent_figures(tda, proxy)
    if "stateless" in PARTS:
        figures |= await stateless_growth(tda, GATEWAY_TURNS, folder / "upstream.jsonl")
    if "native" in PARTS:
        figures |= await native(tda, NATIVE_TURNS)
    if "side" in PARTS:
        figures |= await side_by_side(tda, GATEWAY_TURNS)
    await tda.client.aclose()
    return figures


async def stateless_growth(tda: Tda, turns: int, recorded: Path) -> dict[str, Any]:
    """A new agent conversation of ``turns`` turns without a session, the client resending it whole each call (a
    framework's default): wall and CPU ms a call, first 10 / last 10 turns, and the window's figures."""
    before = len(answered(recorded))
    rows = await gateway(tda, None, turns, [SYSTEM], STATELESS_FIRST)
    over = [row["utilisation"] for row in rows if row["over"]]
    wall, cpu = first_last([row["wall_ms"] for row in rows]), first_last([row["cpu_ms"] for row in rows])
    return {
        "stateless_turns": turns,
        "stateless_wall_ms": wall,
        "stateless_cpu_ms": cpu,
        "stateless_process_cpu_ms": mean_first_last([row["process_cpu_ms"] for row in rows]),
        "stateless_utilisation_min": min(over, default=0.0),
        "stateless_utilisation_median": median(over),
        "stateless_steps": steps(rows, answered(recorded)[before:]),
    }


def print_stateless(figures: dict[str, Any]) -> None:
    (wall1, wall2, wall_x), (cpu1, cpu2, cpu_x) = figures["stateless_wall_ms"], figures["stateless_cpu_ms"]
    process = figures["stateless_process_cpu_ms"]
    stable = figures["stateless_steps"]
    print(
        f"  stateless, a new {figures['stateless_turns']}-turn conversation resent whole each call: wall ms per call "
        f"first 10 / last 10 turns {wall1:.1f} / {wall2:.1f} (x{wall_x:.2f}); server CPU {cpu1:.1f} / {cpu2:.1f} "
        f"(x{cpu_x:.2f}), the process's {process[0]:.1f} / {process[1]:.1f} (x{process[2]:.2f}); utilisation once "
        f"history exceeds the window min {figures['stateless_utilisation_min']:.0%}, median "
        f"{figures['stateless_utilisation_median']:.0%}; the same history part {stable['steps_identical']:.0%}, the "
        f"newest turn whole {stable['newest_turn_whole']:.0%}"
    )


async def side_by_side(tda: Tda, turns: int) -> dict[str, Any]:
    """A session's last 10 of ``turns`` turns and a young session's first 10, alternating turn by turn (the old one
    grown to ``turns - 10`` first, unmeasured): CPU and wall ms a call, each turn's two calls averaged, the medians
    and their ratios. The young session's texts are turns SIDE_FIRST + 1... (none of them another session's: vectors
    are kept by text), both sessions' to the same server, so the first 10 and the last 10 turns meet the same load."""
    old, young = [SYSTEM], [SYSTEM]
    await gateway(tda, "side-old", turns - 10, old)
    old_rows, young_rows = [], []
    for n in range(1, 11):
        young_rows += await gateway(tda, "side-young", 1, young, SIDE_FIRST + n)
        old_rows += await gateway(tda, "side-old", 1, old)
    figures: dict[str, float] = {}
    for what in ("cpu", "wall"):
        first, last = (median([row[f"{what}_ms"] for row in rows]) for rows in (young_rows, old_rows))
        figures |= {f"side_{what}_ms_first10": first, f"side_{what}_ms_last10": last}
        figures[f"side_{what}_growth"] = last / first
    return figures


def usual_speed_figures(rows: list[dict[str, Any]]) -> tuple[float, float, float, float, float]:
    """Traced: the first and last 10 turns' CPU ms a call at the run's usual machine speed and their ratio
    (bench/call_trace.py), then the probe's spin ms over the same turns; a turn the probe answered for at none of its
    calls counts in neither."""
    spun = [row for row in rows if row["spin_ms"] is not None]
    scaled = at_usual_speed([row["cpu_ms"] for row in spun], [row["spin_ms"] for row in spun])
    usual = dict(zip(map(id, spun), scaled, strict=True))
    ends = [[row for row in end if id(row) in usual] for end in (rows[:10], rows[-10:])]
    first, last = (median([usual[id(row)] for row in end]) for end in ends)
    spins = [median([row["spin_ms"] for row in end]) for end in ends]
    return first, last, last / first if first else 0.0, spins[0], spins[1]


def bodies(chat: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The messages of each call ``rows`` made (two a turn), ``chat`` being what the calls went on."""
    return [chat[:sent] for row in rows for sent in row["sent"]]


async def resent(
    tda: Tda, messages: list[dict[str, Any]], calls: int = RESENT_CALLS
) -> tuple[float, float, list[float]]:
    """One long conversation sent ``calls`` times without a session, on a server that has not seen it (a framework's
    default: the whole chat each call): the whole process's CPU ms a call over the first half of the calls and over
    the second (a conversation sent again must not cost its first call's embedding again), and each call's own
    in-request CPU ms."""
    halves, each = [], []
    for _ in range(2):
        cpu = tree_cpu_seconds(tda.pid)
        for _ in range(calls // 2):
            each.append((await tda.chat(messages, None))[2] * 1000)
        await asyncio.sleep(SETTLE_S)  # what the last call left running
        halves.append((tree_cpu_seconds(tda.pid) - cpu) / (calls // 2) * 1000)
    return halves[0], halves[1], each


def resent_chat() -> list[dict[str, Any]]:
    """The resent mode's chat: turns numbered past the session's, so none of its texts (whose vectors the server
    keeps by text) is the session's."""
    numbers = range(RESENT_FIRST, RESENT_FIRST + GATEWAY_TURNS)
    long_chat = [SYSTEM, *(m for t in numbers for m in turn_messages(t))]
    long_chat.append({"role": "user", "content": question(RESENT_FIRST + GATEWAY_TURNS)})
    return long_chat


async def resent_figures(tda: Tda, proxy: Proxy) -> dict[str, Any]:
    """The resent mode alone (``BENCH_LONG_PARTS=resent``): each half's whole-process CPU a call, the proxy's, and
    tda's first call's in-request CPU."""
    long_chat = resent_chat()
    *halves, each = await resent(tda, long_chat)
    proxy_ms = await proxy.cpu_ms([long_chat] * (RESENT_CALLS // 2))
    await proxy.client.aclose()
    return {
        "resent_first_call_cpu_ms": round(each[0], 1),
        "resent_call_cpu_ms": [round(ms, 1) for ms in each],
        "resent_cpu_ms_tda_proxy": [*map(round, halves), round(proxy_ms)],
    }


async def gateway_figures(tda: Tda, proxy: Proxy, recorded: Path) -> dict[str, Any]:
    long_chat = resent_chat()
    resent_ms = (await resent(tda, long_chat))[:2]
    chat: list[dict[str, Any]] = [SYSTEM]
    session_rows = await gateway(tda, "long-bench", GATEWAY_TURNS, chat)
    stability = steps(session_rows, answered(recorded)[RESENT_CALLS:])  # after the resent mode's calls
    stateless_chat, fresh_chat = list(chat), [SYSTEM]
    stateless_rows = await gateway(tda, None, 10, stateless_chat)
    fresh_rows = await gateway(tda, None, 10, fresh_chat, FRESH_FIRST)
    first_question, asked = chat[:2], [*chat, {"role": "user", "content": question(GATEWAY_TURNS + 1)}]
    streamed_first, streamed_end = await tda.streamed_cpu_ms(first_question), await tda.streamed_cpu_ms(asked)
    tda_ms = {
        "session": mean_first_last([row["process_cpu_ms"] for row in session_rows])[:2],
        "stateless": tuple(
            statistics.fmean(row["process_cpu_ms"] for row in rows) for rows in (fresh_rows, stateless_rows)
        ),
        "streamed": (streamed_first, streamed_end),
        "resent": resent_ms,
    }
    resent_proxy = await proxy.cpu_ms([long_chat] * (RESENT_CALLS // 2))
    proxy_ms = {
        "session": (
            await proxy.cpu_ms(bodies(chat, session_rows[:10])),
            await proxy.cpu_ms(bodies(chat, session_rows[-10:])),
        ),
        "stateless": (
            await proxy.cpu_ms(bodies(fresh_chat, fresh_rows)),
            await proxy.cpu_ms(bodies(stateless_chat, stateless_rows)),
        ),
        "streamed": (
            await proxy.cpu_ms([first_question] * 10, stream=True),
            await proxy.cpu_ms([asked] * 10, stream=True),
        ),
        "resent": (resent_proxy, resent_proxy),
    }
    await proxy.client.aclose()
    over = [row["utilisation"] for row in session_rows if row["over"]]
    wall = first_last([row["wall_ms"] for row in session_rows])
    cpu = first_last([row["cpu_ms"] for row in session_rows])
    usual = usual_speed_figures(session_rows) if tda.trace else None
    process_cpu = mean_first_last([row["process_cpu_ms"] for row in session_rows])
    wall_mean = mean_first_last([row["wall_ms"] for row in session_rows])  # a summary waited for shows in the mean
    assembled = [call for row in session_rows if row["over"] for call in row["assemble_ms_by_call"]]
    steps_seen = sorted({step for row in session_rows for step in row["steps_ms"]})
    step_ms = {step: first_last([row["steps_ms"].get(step, 0.0) for row in session_rows]) for step in steps_seen}
    return {
        "gateway_turns": GATEWAY_TURNS,
        "utilisation_min": min(over, default=0.0),
        "utilisation_median": median(over),
        "utilisation_min_any_step": min((row["utilisation_low"] for row in session_rows if row["over"]), default=0.0),
        **stability,
        "summary_calls": sum(row["summaries"] for row in session_rows),
        "summary_calls_ahead": sum(row["summaries_ahead"] for row in session_rows),
        "upstream_ms": UPSTREAM_MS,
        "session_wall_ms_first10": wall[0],
        "session_wall_ms_last10": wall[1],
        "session_wall_growth": wall[2],
        "session_wall_ms_mean_first10": wall_mean[0],
        "session_wall_ms_mean_last10": wall_mean[1],
        "session_wall_mean_growth": wall_mean[2],
        "assemble_ms_showing_summary": statistics.fmean([ms for ms, new in assembled if new] or [0.0]),
        "assemble_ms_others": statistics.fmean([ms for ms, new in assembled if not new] or [0.0]),
        "session_cpu_ms_first10": cpu[0],
        "session_cpu_ms_last10": cpu[1],
        "session_cpu_growth": cpu[2],
        "session_cpu_ms_at_usual_speed": list(usual[:3]) if usual else None,
        "session_spin_ms_first10_last10": usual[3:] if usual else None,
        "session_process_cpu_ms_first10": process_cpu[0],
        "session_process_cpu_ms_last10": process_cpu[1],
        "session_process_cpu_growth": process_cpu[2],
        "session_step_ms_first10_last10": {step: [round(a, 1), round(b, 1)] for step, (a, b, _) in step_ms.items()},
        "stateless_cpu_ms_at_end": median([row["cpu_ms"] for row in stateless_rows]),
        "stateless_cpu_ms_new": median([row["cpu_ms"] for row in fresh_rows]),
        "cpu_ms_tda_proxy": {
            mode: {
                "first": [round(tda_ms[mode][0], 1), round(proxy_ms[mode][0], 1)],
                "last": [round(tda_ms[mode][1], 1), round(proxy_ms[mode][1], 1)],
            }
            for mode in tda_ms
        },
    }


def print_gateway(figures: dict[str, Any]) -> None:
    print(
        f"  gateway, {figures['gateway_turns']} turns with a session: window utilisation once history exceeds it "
        f"min {figures['utilisation_min']:.0%}, median {figures['utilisation_median']:.0%}; summary calls made inside "
        f"a call {figures['summary_calls']} in {2 * figures['gateway_turns']} calls, made ahead "
        f"{figures['summary_calls_ahead']} (the fake answering after {figures['upstream_ms']:g} ms)"
    )
    print(
        f"  the turn's two steps: lowest utilisation of either {figures['utilisation_min_any_step']:.0%}; the same "
        f"history part {figures['steps_identical']:.0%} of turns (step 2's a beginning of step 1's "
        f"{figures['steps_prefix']:.0%}); the newest complete turn whole {figures['newest_turn_whole']:.0%}"
    )
    print(
        f"  wall ms per call, first 10 / last 10 turns: {figures['session_wall_ms_first10']:.1f} / "
        f"{figures['session_wall_ms_last10']:.1f} (x{figures['session_wall_growth']:.2f}), mean "
        f"{figures['session_wall_ms_mean_first10']:.1f} / {figures['session_wall_ms_mean_last10']:.1f} "
        f"(x{figures['session_wall_mean_growth']:.2f}); server CPU ms per call "
        f"{figures['session_cpu_ms_first10']:.1f} / {figures['session_cpu_ms_last10']:.1f} "
        f"(x{figures['session_cpu_growth']:.2f})"
    )
    if figures["session_cpu_ms_at_usual_speed"]:
        first, last, growth = figures["session_cpu_ms_at_usual_speed"]
        spins = figures["session_spin_ms_first10_last10"]
        print(
            f"  traced: server CPU ms per call at the machine's usual speed (scaled by the probe's spins around each "
            f"call against the run's median) {first:.1f} / {last:.1f} (x{growth:.2f}); the spin itself, ms, first / "
            f"last 10 turns {spins[0]:.2f} / {spins[1]:.2f} (x{spins[1] / spins[0]:.2f}); the whole-process "
            "figures below include the probe's spins"
        )
    print(
        f"  the server process's CPU ms per call, everything it did in the turn (indexing after the response, "
        f"short-lived threads): {figures['session_process_cpu_ms_first10']:.1f} / "
        f"{figures['session_process_cpu_ms_last10']:.1f} (x{figures['session_process_cpu_growth']:.2f})"
    )
    print(
        f"  assembly ms of a call past the window, mean: one that shows a new summary (made inside it or ahead) "
        f"{figures['assemble_ms_showing_summary']:.1f}, the others {figures['assemble_ms_others']:.1f}"
    )
    steps = figures["session_step_ms_first10_last10"]
    print(
        "  its steps (the snapshot's timings), wall ms per call, first / last 10 turns: "
        + ", ".join(f"{step} {a:.1f} / {b:.1f}" for step, (a, b) in steps.items())
    )
    n = figures["gateway_turns"]
    print("  CPU ms per call, the whole process's (threads that ended, children): tda / the LiteLLM proxy (ratio)")
    where = {
        "session": ("turns 1-10", f"turns {n - 9}-{n}"),
        "stateless": ("a new conversation's 10 turns", f"10 turns after {n}"),
        "streamed": ("a first question", f"after {n} turns"),
        "resent": (f"a {n}-turn chat sent {RESENT_CALLS // 2} times", f"the next {RESENT_CALLS // 2} times"),
    }
    for mode, pair in figures["cpu_ms_tda_proxy"].items():
        cells = [
            f"{label} {tda:.1f} / {proxy:.1f} (x{tda / proxy if proxy else 0:.2f})"
            for label, (tda, proxy) in zip(where[mode], (pair["first"], pair["last"]), strict=True)
        ]
        print(f"    {mode:<10} " + "; ".join(cells))


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tda-long-bench-") as tmp:
        figures = run(Path(tmp))
    embedder = EMBEDDER or "tda's default (TDA_EMBEDDER unset)"
    print(f"long sessions (issue 32): a turn's cost against the session's length; embedder: {embedder}")
    if "gateway" in PARTS:
        print_gateway(figures)
    if "resent" in PARTS and "resent_first_call_cpu_ms" in figures:
        tda_first, tda_next, proxy_ms = figures["resent_cpu_ms_tda_proxy"]
        print(
            f"  resent: the first call's in-request CPU {figures['resent_first_call_cpu_ms']:.1f} ms; whole-process "
            f"CPU ms a call, tda's calls 1-5 / 6-10, the proxy's: {tda_first} / {tda_next} / {proxy_ms}; each call's "
            "in-request CPU ms " + ", ".join(f"{ms:.0f}" for ms in figures["resent_call_cpu_ms"])
        )
    if "stateless" in PARTS:
        print_stateless(figures)
    if "side" in PARTS:
        print(
            f"  side by side: a young session's turns 1-10 / an old one's {GATEWAY_TURNS - 9}-{GATEWAY_TURNS}, "
            f"alternating, server CPU ms per call {figures['side_cpu_ms_first10']:.1f} / "
            f"{figures['side_cpu_ms_last10']:.1f} (x{figures['side_cpu_growth']:.2f}), wall ms per call "
            f"{figures['side_wall_ms_first10']:.1f} / {figures['side_wall_ms_last10']:.1f} "
            f"(x{figures['side_wall_growth']:.2f})"
        )
    if "native" in PARTS:
        rss = " -> ".join(map(str, figures["native_rss_mib"]))
        print(
            f"  native, {figures['native_turns']} turns one by one: server ms turns 91-100 "
            f"{figures['native_ms_turns_91_100']:.1f}, last 10 {figures['native_ms_last10']:.1f} "
            f"(x{figures['native_growth']:.2f}); server CPU ms {figures['native_cpu_ms_turns_91_100']:.1f} / "
            f"{figures['native_cpu_ms_last10']:.1f} (x{figures['native_cpu_growth']:.2f}); RSS {rss} MiB (start, "
            "turn 100, end)"
        )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
