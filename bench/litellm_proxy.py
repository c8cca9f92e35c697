"""The LiteLLM proxy the benches measure tda against (gateway_bench.py, long_session_bench.py).

``litellm[proxy]==PROXY_VERSION`` lives in the benches' own venv (bench/.peers/venv, made on first run from the
package index; never a tda dependency) and routes ``gpt-4.1`` to the fake upstream (tests/gateway/upstream.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.gateway.servers import MODEL, UPSTREAM_KEY, free_port, start, wait_until_serving  # noqa: E402

PROXY_VERSION = "1.108.7"
PEERS = ROOT / "bench" / ".peers"
PROXY_VENV = PEERS / "venv"
PROXY_START_S = 300
"""How long the proxy may take to answer: it imports for a minute and more on a loaded 2-core machine."""
PROXY_KEY = "sk-bench-proxy-7c1e9a4f2b6d48e0a3c5f9b1d7e2a6c8"  # the proxy refuses to start without a master key


def ensure_proxy_venv() -> Path:
    """bench/.peers/venv with the LiteLLM proxy, made the first time (pip, from the package index)."""
    litellm = PROXY_VENV / "bin" / "litellm"
    marker = PROXY_VENV / f".litellm-{PROXY_VERSION}"
    if litellm.exists() and marker.exists():
        return litellm
    print(f"installing litellm[proxy]=={PROXY_VERSION} into {PROXY_VENV.relative_to(ROOT)} (once)", flush=True)
    PEERS.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(PROXY_VENV)], check=True)
    pip = [str(PROXY_VENV / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, f"litellm[proxy]=={PROXY_VERSION}"], check=True)
    marker.touch()
    return litellm


def proxy_config(folder: Path, upstream_base_url: str) -> Path:
    path = folder / "litellm.yaml"
    path.write_text(
        "model_list:\n"
        f"  - model_name: {MODEL}\n"
        "    litellm_params:\n"
        f"      model: openai/{MODEL}\n"
        f"      api_base: {upstream_base_url}\n"
        f"      api_key: {UPSTREAM_KEY}\n"
        "litellm_settings:\n"
        "  telemetry: false\n"
        "general_settings:\n"
        f"  master_key: {PROXY_KEY}\n"
    )
    return path


def proxy_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LITELLM_", "TDA_"))}
    return env | {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": ""}


def start_proxy(folder: Path, upstream_base_url: str) -> tuple[subprocess.Popen[bytes], str]:
    """The proxy (one worker) routing to the fake upstream, answering: its process and its chat-completions URL.
    Stopped on the way out if it never answers."""
    litellm, port, log = ensure_proxy_venv(), free_port(), folder / "proxy.log"
    command = [str(litellm), "--config", str(proxy_config(folder, upstream_base_url))]
    command += ["--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]
    process = start(command, proxy_env(), log)
    try:
        wait_until_serving(process, f"http://127.0.0.1:{port}/health/liveliness", log, PROXY_START_S)
    except BaseException:
        process.kill()
        process.wait(5)
        raise
    return process, f"http://127.0.0.1:{port}/v1/chat/completions"


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of a process and everything under it (Linux /proc, 10 ms steps): its threads,
    ended ones included, its live child processes (a server's workers) and the ended children it waited for."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:  # a child that ended while read: its parent's cutime holds it once waited for
        return 0.0
    own = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return own / os.sysconf("SC_CLK_TCK") + sum(tree_cpu_seconds(child) for child in children(pid))


def children(pid: int) -> set[int]:
    pids: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            pids.update(int(c) for c in (task / "children").read_text().split())
        except OSError:  # a thread that ended while read
            continue
    return pids
