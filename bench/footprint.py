"""A light install: what `pip install .` (no test extra) puts on disk in a fresh venv, and `tda serve`'s resident
memory after `tda demo` and 20 turns, run from that venv (so a missing runtime dependency fails here).

Targets (issue 24): the venv <= 1,000 MB with no torch in it; RSS <= 400 MB. Run from the repository root:
``python bench/footprint.py [--venv DIR] [--turns N]``; ``--venv`` reuses (or keeps) a venv at DIR instead of
building one in a temporary folder. Building one downloads every dependency: a few minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTALL_TARGET_MB = 1000
RSS_TARGET_MB = 400
TORCH_CHAIN = ("torch", "transformers", "sentence-transformers", "scipy", "scikit-learn")


def build_venv(venv: Path) -> None:
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-qq", "--disable-pip-version-check"]
    # a copy of the working tree (committed or not, ignored files left out): pip must not build in the checkout
    files = (
        subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    with tempfile.TemporaryDirectory() as source:
        for name in filter(None, files):
            if (ROOT / name).is_file():
                (Path(source) / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, Path(source) / name)
        subprocess.run([*pip, source], check=True)


def size_mb(folder: Path) -> float:
    """Disk used by the files under ``folder`` in MiB, as `du -sm` counts it (blocks allocated)."""
    return sum(p.lstat().st_blocks * 512 for p in folder.rglob("*")) / 2**20


def distributions(venv: Path) -> dict[str, str]:
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {d["name"].lower(): d["version"] for d in json.loads(listed.stdout)}


def largest_packages(venv: Path, count: int = 8) -> list[tuple[str, float]]:
    site = next((venv / "lib").glob("python3*/site-packages"))
    sizes = [(p.name, size_mb(p)) for p in site.iterdir() if p.is_dir() and not p.name.endswith(".dist-info")]
    return sorted(sizes, key=lambda s: -s[1])[:count]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def request(url: str, token: str, body: dict[str, object] | None = None) -> int:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(url, data, headers), timeout=120) as response:
        return int(response.status)


def serve_rss_mb(venv: Path, turns: int) -> tuple[float, float, bool]:
    """`tda demo`, then `tda serve` and ``turns`` turns on the demo session (each retrieves the demo's knowledge
    with the default embedder): the server's RSS (MB), its mean turn (ms), whether torch is mapped in it."""
    tda = str(venv / "bin" / "tda")
    with tempfile.TemporaryDirectory() as data:
        port = free_port()
        env = {**os.environ, "TDA_DATA_DIR": data, "TDA_MODULES_DIR": f"{data}/modules", "TDA_PORT": str(port)}
        env["TDA_MOCK_MODEL"] = "1"
        env.pop("TDA_EMBEDDER", None)
        env.pop("PYTHONPATH", None)
        # cwd outside the checkout: the venv's installed tda runs, not the repository's
        demo = subprocess.run([tda, "demo"], env=env, cwd=data, capture_output=True, text=True, check=True)
        token = demo.stdout.strip().splitlines()[-1].split()[-1]
        server = subprocess.Popen(
            [tda, "serve"], env=env, cwd=data, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_healthy(base, token, server)
            started = time.perf_counter()
            for i in range(turns):
                request(f"{base}/v1/sessions/demo/turns", token, {"query": f"How are refunds handled, case {i}?"})
            turn_ms = (time.perf_counter() - started) / turns * 1000
            status = Path(f"/proc/{server.pid}/status").read_text()
            rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
            torch = "/torch/" in Path(f"/proc/{server.pid}/maps").read_text()
        finally:
            server.terminate()
            server.wait(timeout=30)
    return rss / 1024, turn_ms, torch


def wait_healthy(base: str, token: str, server: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        if server.poll() is not None:
            raise RuntimeError(f"tda serve exited with {server.returncode}")
        try:
            if request(f"{base}/healthz", token) == 200:
                return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
    raise RuntimeError("tda serve did not answer /healthz in 120 s")


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def report(venv: Path, turns: int) -> bool:
    installed = distributions(venv)
    torch_chain = [name for name in TORCH_CHAIN if name in installed]
    venv_mb = size_mb(venv)
    print(f"fresh venv with `pip install .` (no test extra): {venv_mb:,.0f} MB on disk, {len(installed)} distributions")
    print("largest: " + ", ".join(f"{name} {mb:.0f}" for name, mb in largest_packages(venv)))
    print(f"torch chain installed: {', '.join(torch_chain) or 'none'}")
    rss, turn_ms, torch_mapped = serve_rss_mb(venv, turns)
    torch_state = "torch loaded" if torch_mapped else "no torch"
    print(f"tda serve after tda demo and {turns} turns: RSS {rss:.0f} MB ({torch_state}); {turn_ms:.0f} ms a turn")
    install_ok = venv_mb <= INSTALL_TARGET_MB and not torch_chain
    rss_ok = rss <= RSS_TARGET_MB
    print(
        f"targets: install <= {INSTALL_TARGET_MB:,} MB without torch {verdict(install_ok)}; "
        f"RSS <= {RSS_TARGET_MB} MB {verdict(rss_ok)}"
    )
    return install_ok and rss_ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, help="build (or reuse) the venv here and keep it")
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    if args.venv:
        build_venv(args.venv)
        return 0 if report(args.venv, args.turns) else 1
    with tempfile.TemporaryDirectory(prefix="tda-footprint-") as tmp:
        build_venv(Path(tmp))
        return 0 if report(Path(tmp), args.turns) else 1


if __name__ == "__main__":
    sys.exit(main())
