"""`tda serve` from launch: when it first answers /healthz, when /readyz says ready (litellm, the tokenizers and the
embedder loaded), and its resident memory after `tda demo` and 20 turns on the demo session.

Targets (issue 35, item 6): /healthz within 3 s of launch; RSS under 350 MB after the demo and 20 turns. Runs this
checkout's code with this interpreter (`python -m tda.cli serve`), in a temporary data folder:
``python bench/launch_bench.py [--embedder NAME] [--launches N] [--turns N]``. The default embedder is the
product's default (TDA_EMBEDDER unset); the figures are medians over the launches.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEALTHZ_TARGET_S = 3.0
RSS_TARGET_MB = 350


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def status(url: str, token: str = "", body: dict[str, object] | None = None) -> int:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data, headers), timeout=600) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def environment(data: str, port: int, embedder: str | None) -> dict[str, str]:
    env = {**os.environ, "TDA_DATA_DIR": data, "TDA_MODULES_DIR": f"{data}/modules", "TDA_PORT": str(port)}
    env.update(TDA_MOCK_MODEL="1", PYTHONPATH=str(ROOT))
    env.pop("TDA_EMBEDDER", None)
    if embedder:
        env["TDA_EMBEDDER"] = embedder
    return env


def launch(env: dict[str, str], port: int, token: str, turns: int) -> tuple[float, float, float | None]:
    """Seconds from launch to the first /healthz 200 and to /readyz 200; the RSS (MB) after ``turns`` turns."""
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
        healthz = until(lambda: status(f"{base}/healthz") == 200, server) - started
        ready = until(lambda: status(f"{base}/readyz") == 200, server) - started
        rss = None
        if turns:
            for i in range(turns):
                code = status(f"{base}/v1/sessions/demo/turns", token, {"query": f"How are refunds handled, case {i}?"})
                if code != 201:
                    raise RuntimeError(f"turn {i} answered {code}")
            lines = Path(f"/proc/{server.pid}/status").read_text().splitlines()
            rss = next(int(line.split()[1]) for line in lines if line.startswith("VmRSS")) / 1024
        return healthz, ready, rss
    finally:
        server.terminate()
        server.wait(timeout=60)


def until(done: object, server: subprocess.Popen[bytes], seconds: float = 600) -> float:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"tda serve exited with {server.returncode}")
        try:
            if done():  # type: ignore[operator]
                return time.monotonic()
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.02)
    raise RuntimeError("tda serve did not answer in time")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", help="TDA_EMBEDDER for the run (default: the product's default)")
    parser.add_argument("--launches", type=int, default=3)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tda-launch-") as data:
        port = free_port()
        env = environment(data, port, args.embedder)
        demo = subprocess.run(
            [sys.executable, "-m", "tda.cli", "demo"], env=env, cwd=ROOT, capture_output=True, text=True, check=True
        )
        token = demo.stdout.strip().splitlines()[-1].split()[-1]
        runs = [launch(env, port, token, args.turns if i == args.launches - 1 else 0) for i in range(args.launches)]
    healthz = statistics.median(r[0] for r in runs)
    ready = statistics.median(r[1] for r in runs)
    rss = runs[-1][2]
    load = os.getloadavg()[0]
    print(f"embedder {args.embedder or 'default'}; {args.launches} launches; load average {load:.1f}")
    print(f"first /healthz 200: median {healthz:.2f} s ({', '.join(f'{r[0]:.2f}' for r in runs)})")
    print(f"/readyz 200: median {ready:.2f} s ({', '.join(f'{r[1]:.2f}' for r in runs)})")
    if rss is not None:
        print(f"RSS after tda demo and {args.turns} turns: {rss:.0f} MB")
    healthz_ok = healthz <= HEALTHZ_TARGET_S
    rss_ok = rss is None or rss < RSS_TARGET_MB
    print(
        f"targets: /healthz <= {HEALTHZ_TARGET_S:g} s {'PASS' if healthz_ok else 'MISS'}; "
        f"RSS < {RSS_TARGET_MB} MB {'PASS' if rss_ok else 'MISS'}"
    )
    return 0 if healthz_ok and rss_ok else 1


if __name__ == "__main__":
    sys.exit(main())
