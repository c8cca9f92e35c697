"""`tda serve` from launch: when it first answers /healthz, when /readyz says ready (litellm, the tokenizers and the
embedder loaded), and its memory at launch, once ready and after `tda demo` and 20 turns.

Targets (issue 35, item 6): /healthz within 3 s of launch; RSS under 350 MB after the demo and 20 turns. Runs this
checkout's code with this interpreter (`python -m tda.cli serve`) as `make run` does (SQLite, embedded Chroma, the
demo data, the product's default embedder unless ``--embedder``), in a temporary data folder, with the fake
OpenAI upstream (tests/gateway/upstream.py) as the model provider: the turns alternate between native turns on the
demo session (knowledge retrieved with the embedder) and gateway calls (`/v1/chat/completions`, a growing
conversation recorded in a session, under the demo's knowledge profile), each checked to carry the fake's answer.
``--mock``: the default settings instead, as a bare `make run` serves (the mock model answering gpt-4o, no
upstream), each turn checked to carry the mock's answer.
``python bench/launch_bench.py [--mock] [--embedder NAME] [--launches N] [--turns N] [--breakdown]``: the /healthz and
/readyz figures are medians over the launches; the last launch runs the turns. Memory is read from /proc: VmRSS,
PSS (shared library pages divided among the processes mapping them) and the anonymous part (heaps: what tda's own
objects, litellm's tables, the tokenizers and the model take); ``--breakdown`` lists where the resident pages are
after the turns (anonymous memory and each mapped file).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.gateway.servers import free_port, server_env, start_fake_upstream, stop  # noqa: E402
from tests.gateway.upstream import ECHO_PREFIX, TOOL_ARGUMENT  # noqa: E402

MOCK_ANSWER = "This is a mock answer (TDA_MOCK_MODEL is on, so no provider was called)."  # tda/llm.py's, unimported
UPSTREAM_SETTINGS = ("TDA_MOCK_MODEL", "TDA_MODEL", "TDA_UPSTREAM_BASE_URL", "TDA_UPSTREAM_API_KEY_ENV")
UPSTREAM_SETTINGS += ("OPENAI_API_BASE", "OPENAI_API_KEY", "FAKE_UPSTREAM_KEY")

HEALTHZ_TARGET_S = 3.0
RSS_TARGET_MB = 350
GATEWAY_PROFILE = "demo-rag"  # its window type retrieves the demo's knowledge: the embedder runs on every call
GATEWAY_SESSION = "launch-bench"


def call(url: str, token: str = "", body: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> Any:
    """(status, decoded JSON body or None) of a GET, or of a POST when ``body`` is given."""
    data = json.dumps(body).encode() if body is not None else None
    sent = {"Authorization": f"Bearer {token}", "Content-Type": "application/json", **(headers or {})}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data, sent), timeout=600) as response:
            return int(response.status), json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, None


def environment(data: str, port: int, upstream_base: str | None, embedder: str | None) -> dict[str, str]:
    """`tda serve`'s environment: the fake upstream as the provider (None: the default mock model, no upstream), the
    default embedder unless one is named."""
    env = server_env(Path(data), port, upstream_base or "")
    for name in ("TDA_EMBEDDER", *(UPSTREAM_SETTINGS if upstream_base is None else ())):
        env.pop(name)
    if embedder:
        env["TDA_EMBEDDER"] = embedder
    return env


@dataclass(frozen=True)
class Memory:
    """A process's memory in MB, from /proc/<pid>/smaps_rollup."""

    rss: float
    pss: float
    anonymous: float

    @classmethod
    def of(cls, pid: int) -> Memory:
        fields: dict[str, float] = {}
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            name, value, *_ = line.split()
            fields[name.rstrip(":")] = int(value) / 1024
        return cls(fields["Rss"], fields["Pss"], fields["Anonymous"])

    def __str__(self) -> str:
        return f"RSS {self.rss:.0f} MB (PSS {self.pss:.0f}, anonymous {self.anonymous:.0f})"


def resident_by_mapping(pid: int) -> Counter[str]:
    """Resident kB per mapped file (anonymous memory, the heap and stacks under their own names)."""
    resident: Counter[str] = Counter()
    name = "[anonymous]"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if not head[0].endswith(":"):  # a mapping's header: address range, perms, offset, device, inode[, path]
            name = _short(head[5]) if len(head) > 5 else "[anonymous]"
        elif head[0] == "Rss:":
            resident[name] += int(head[1])
    return resident


def _short(path: str) -> str:
    return path.split("site-packages/")[-1] if "site-packages/" in path else path


def native_turn(base: str, token: str, i: int, mock: bool) -> None:
    status, body = call(f"{base}/v1/sessions/demo/turns", token, {"query": f"How are refunds handled, case {i}?"})
    if status != 201:
        raise RuntimeError(f"native turn {i} answered {status}")
    if (MOCK_ANSWER in json.dumps(body)) != mock:
        raise RuntimeError(f"native turn {i} did not get the {'mock' if mock else 'fake upstream'}'s answer")


def gateway_turn(base: str, token: str, i: int, mock: bool, conversation: list[dict[str, Any]]) -> None:
    conversation.append({"role": "user", "content": f"What does the returns policy say about case {i}?"})
    headers = {"X-TDA-Profile": GATEWAY_PROFILE, "X-TDA-Session": GATEWAY_SESSION}
    body = {"model": "gpt-4.1", "messages": conversation}
    status, reply = call(f"{base}/v1/chat/completions", token, body, headers)
    if status != 200:
        raise RuntimeError(f"gateway call {i} answered {status}")
    message = reply["choices"][0]["message"]
    content = message.get("content") or ""
    upstreams = content.startswith(ECHO_PREFIX) or TOOL_ARGUMENT in json.dumps(message)
    if not (content == MOCK_ANSWER if mock else upstreams):
        raise RuntimeError(
            f"gateway call {i} did not get the {'mock' if mock else 'fake upstream'}'s answer: {message}"
        )
    conversation.append({"role": "assistant", "content": message.get("content") or "(a tool call)"})


@dataclass
class Launch:
    healthz_s: float
    ready_s: float
    memory: dict[str, Memory]
    mappings: Counter[str]


def launch(env: dict[str, str], port: int, token: str, turns: int, mock: bool) -> Launch:
    """One `tda serve`: seconds to the first /healthz 200 and to /readyz 200, its memory at each stage."""
    base = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    server = subprocess.Popen(
        [sys.executable, "-m", "tda.cli", "serve"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        healthz = until(lambda: call(f"{base}/healthz")[0] == 200, server) - started
        memory = {"at the first /healthz": Memory.of(server.pid)}
        ready = until(lambda: call(f"{base}/readyz")[0] == 200, server) - started
        memory["ready"] = Memory.of(server.pid)
        mappings: Counter[str] = Counter()
        if turns:
            conversation: list[dict[str, Any]] = []
            for i in range(turns):
                turn = native_turn if i % 2 == 0 else partial(gateway_turn, conversation=conversation)
                turn(base, token, i, mock)
            memory[f"after {turns} turns"] = Memory.of(server.pid)
            mappings = resident_by_mapping(server.pid)
        return Launch(healthz, ready, memory, mappings)
    finally:
        server.terminate()
        server.wait(timeout=60)


def until(done: Callable[[], bool], server: subprocess.Popen[bytes], seconds: float = 600) -> float:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"tda serve exited with {server.returncode}")
        try:
            if done():
                return time.monotonic()
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.02)
    raise RuntimeError("tda serve did not answer in time")


def run(args: argparse.Namespace) -> list[Launch]:
    with tempfile.TemporaryDirectory(prefix="tda-launch-") as data:
        upstream, upstream_base = (None, None) if args.mock else start_fake_upstream(Path(data))
        try:
            port = free_port()
            env = environment(data, port, upstream_base, args.embedder)
            demo = subprocess.run(
                [sys.executable, "-m", "tda.cli", "demo"], env=env, cwd=ROOT, capture_output=True, text=True, check=True
            )
            token = demo.stdout.strip().splitlines()[-1].split()[-1]
            last = args.launches - 1
            return [launch(env, port, token, args.turns if i == last else 0, args.mock) for i in range(args.launches)]
        finally:
            if upstream is not None:
                stop(upstream)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mock", action="store_true", help="the default mock model, as a bare `make run`")
    parser.add_argument("--embedder", help="TDA_EMBEDDER for the run (default: the product's default)")
    parser.add_argument("--launches", type=int, default=3)
    parser.add_argument("--turns", type=int, default=20, help="native and gateway turns, alternating")
    parser.add_argument("--breakdown", action="store_true", help="where the resident pages are after the turns")
    args = parser.parse_args()
    runs = run(args)
    healthz = statistics.median(r.healthz_s for r in runs)
    ready = statistics.median(r.ready_s for r in runs)
    model = "the mock model (default settings)" if args.mock else "the fake OpenAI upstream"
    load = os.getloadavg()[0]
    print(f"{model}; embedder {args.embedder or 'default'}; {args.launches} launches; load average {load:.1f}")
    print(f"first /healthz 200: median {healthz:.2f} s ({', '.join(f'{r.healthz_s:.2f}' for r in runs)})")
    print(f"/readyz 200: median {ready:.2f} s ({', '.join(f'{r.ready_s:.2f}' for r in runs)})")
    for stage, memory in runs[-1].memory.items():
        print(f"{stage}: {memory}")
    if args.breakdown:
        print("resident after the turns, largest first (MB):")
        for name, kb in runs[-1].mappings.most_common(20):
            print(f"  {kb / 1024:7.1f}  {name}")
    final = list(runs[-1].memory.values())[-1].rss if args.turns else None
    healthz_ok = healthz <= HEALTHZ_TARGET_S
    rss_ok = final is None or final < RSS_TARGET_MB
    print(
        f"targets: /healthz <= {HEALTHZ_TARGET_S:g} s {'PASS' if healthz_ok else 'MISS'}; "
        f"RSS < {RSS_TARGET_MB} MB after the demo and {args.turns} turns {'PASS' if rss_ok else 'MISS'}"
    )
    return 0 if healthz_ok and rss_ok else 1


if __name__ == "__main__":
    sys.exit(main())
