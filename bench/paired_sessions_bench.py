"""Two checkouts' gateway sessions side by side (issue 32 item 5): is one cheaper at turns 91-100, on a loaded machine?

The long-session bench runs one checkout at a time, its first and last 10 turns minutes apart: on a shared 2-core
machine its growth ratio moves by +-0.15 between runs of the same code, more than a change of ~1 ms a call shows.
Here two `tda serve`s (BENCH_PAIR_BASE's and BENCH_PAIR_BRANCH's worktrees, the hashing embedder, each with its own
fake upstream) get the same agent session (bench/long_session_bench.py's turns, a 16K profile), turn by turn
alternately (who goes first alternates too), so both codes meet the same load at every turn. Per turn and server:
the in-request CPU ms a call (the server's threads) and the process's CPU ms a call over the turn and a pause after
it. Reported: each server's first / last 10 turns (medians; the process's means) and growth, and the two paired by
turn (base less branch), turns 1-10 and 11-last, median and mean. Knobs: BENCH_PAIR_TURNS (100), BENCH_PAIR_PAUSE_S
(0.3), BENCH_PAIR_BASE (/work/main), BENCH_PAIR_BRANCH (this checkout).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.litellm_proxy import tree_cpu_seconds  # noqa: E402
from bench.long_session_bench import LIMIT, ROWS, Tda, reply_message  # noqa: E402
from tests.agent_session import SYSTEM, orders, question  # noqa: E402
from tests.gateway.servers import (  # noqa: E402
    admin_token,
    free_port,
    server_env,
    start_fake_upstream,
    stop,
    wait_until_serving,
)

TURNS = int(os.environ.get("BENCH_PAIR_TURNS", "100"))
PAUSE_S = float(os.environ.get("BENCH_PAIR_PAUSE_S", "0.3"))
TREES = {
    "base": Path(os.environ.get("BENCH_PAIR_BASE", "/work/main")),
    "branch": Path(os.environ.get("BENCH_PAIR_BRANCH", str(ROOT))),
}


def start_server(folder: Path, tree: Path) -> tuple[list[subprocess.Popen[bytes]], Tda]:
    """A fake upstream and a `tda serve` of ``tree``'s code calling it."""
    upstream, base_url = start_fake_upstream(folder, folder / "upstream.jsonl", 0)
    data = folder / "tda"
    data.mkdir()
    token, port = admin_token(data), free_port()
    env = server_env(data, port, base_url) | {"TDA_EMBEDDER": "hashing", "PYTHONPATH": str(tree)}
    with (data / "server.log").open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "tda.cli", "serve"], env=env, cwd=tree, stdout=log, stderr=subprocess.STDOUT
        )
    wait_until_serving(server, f"http://127.0.0.1:{port}/healthz", data / "server.log")
    return [upstream, server], Tda(f"http://127.0.0.1:{port}", token, server.pid)


async def agent_turn(tda: Tda, chat: list[dict[str, Any]], turn: int) -> float:
    """One turn (question -> tool call -> result -> answer, two calls): its in-request CPU ms a call."""
    chat.append({"role": "user", "content": question(turn)})
    first, _, cpu1 = await tda.chat(chat, "paired")
    called = reply_message(first)
    chat.append(called)
    chat.append({"role": "tool", "tool_call_id": called["tool_calls"][0]["id"], "content": orders(turn, ROWS)})
    second, _, cpu2 = await tda.chat(chat, "paired")
    chat.append(reply_message(second))
    return (cpu1 + cpu2) / 2 * 1000


async def alternate(servers: dict[str, Tda]) -> dict[str, list[tuple[float, float]]]:
    """Per server, per turn: (in-request CPU ms a call, the process's CPU ms a call over the turn and the pause)."""
    for tda in servers.values():
        profile = {"id": "agent", "type": "tool_enabled", "model": "gpt-4.1", "context_limit": LIMIT}
        (await tda.client.post("/v1/profiles", json=profile)).raise_for_status()
    chats: dict[str, list[dict[str, Any]]] = {name: [SYSTEM] for name in servers}
    rows: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
    for turn in range(1, TURNS + 1):
        for name in list(servers) if turn % 2 else list(servers)[::-1]:
            tda = servers[name]
            process = tree_cpu_seconds(tda.pid)
            cpu = await agent_turn(tda, chats[name], turn)
            await asyncio.sleep(PAUSE_S)  # the turn's indexing, after its response
            rows[name].append((cpu, (tree_cpu_seconds(tda.pid) - process) / 2 * 1000))
    return rows


def figures(rows: dict[str, list[tuple[float, float]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, turns in rows.items():
        request, process = [r[0] for r in turns], [r[1] for r in turns]
        first, last = statistics.median(request[:10]), statistics.median(request[-10:])
        whole_first, whole_last = statistics.fmean(process[:10]), statistics.fmean(process[-10:])
        out[name] = {
            "in_request_ms": [round(first, 2), round(last, 2)],
            "in_request_growth": round(last / first, 3),
            "process_ms": [round(whole_first, 2), round(whole_last, 2)],
            "process_growth": round(whole_last / whole_first, 3),
        }
    paired = [b[0] - n[0] for b, n in zip(rows["base"], rows["branch"], strict=True)]
    out["base_less_branch_ms"] = {
        "turns_1_10_median": round(statistics.median(paired[:10]), 2),
        "turns_11_last_median": round(statistics.median(paired[10:]), 2),
        "turns_11_last_mean": round(statistics.fmean(paired[10:]), 2),
    }
    return out


def main() -> None:
    processes: list[subprocess.Popen[bytes]] = []
    try:
        servers = {}
        for name, tree in TREES.items():
            started, servers[name] = start_server(Path(tempfile.mkdtemp(prefix=f"paired-{name}-")), tree)
            processes += started
        load = os.getloadavg()[0]
        rows = asyncio.run(alternate(servers))
        print(json.dumps({"load": [round(load, 1), round(os.getloadavg()[0], 1)], **figures(rows)}))
    finally:
        for process in reversed(processes):
            stop(process)


if __name__ == "__main__":
    main()
