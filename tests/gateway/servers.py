"""Processes for the gateway tests and bench/gateway_bench.py: a `tda serve` whose model provider is an
OpenAI-compatible URL (the fake upstream), started on a free port and stopped again.

tda reaches the URL through litellm's ``OPENAI_API_BASE`` / ``OPENAI_API_KEY`` (what works today) and through the
service's upstream settings (``TDA_UPSTREAM_BASE_URL`` / ``TDA_UPSTREAM_API_KEY_ENV``) where they exist; both are
set in the server's environment only, never in the caller's.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tda.config import Settings
from tda.db import upgrade
from tda.store import Store

ROOT = Path(__file__).resolve().parents[2]
MODEL = "gpt-4.1"
UPSTREAM_KEY = "sk-fake-upstream-key"
START_TIMEOUT_S = 90


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(data_dir: Path, port: int, upstream_base_url: str) -> dict[str, str]:
    """The environment of a `tda serve` that calls ``upstream_base_url`` as its model provider."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TDA_"))}
    return env | {
        "TDA_DATA_DIR": str(data_dir),
        "TDA_MODULES_DIR": str(data_dir / "modules"),
        "TDA_PORT": str(port),
        "TDA_MOCK_MODEL": "0",
        "TDA_EMBEDDER": "hashing",
        "TDA_MODEL": MODEL,
        "PYTHONPATH": str(ROOT),
        # today: litellm's own variables
        "OPENAI_API_BASE": upstream_base_url,
        "OPENAI_API_KEY": UPSTREAM_KEY,
        # the service's upstream settings (issue 22), read where they exist
        "TDA_UPSTREAM_BASE_URL": upstream_base_url,
        "TDA_UPSTREAM_API_KEY_ENV": "FAKE_UPSTREAM_KEY",
        "FAKE_UPSTREAM_KEY": UPSTREAM_KEY,
    }


def admin_token(data_dir: Path) -> str:
    """Migrate the server's database and make an admin token in it, before the server starts."""
    url = f"sqlite+aiosqlite:///{data_dir / 'tda.db'}"
    upgrade(url)

    async def create() -> str:
        store = Store.connect(url)
        try:
            token, _ = await store.tokens.create("gateway-tests", "admin")
            return token
        finally:
            await store.close()

    return asyncio.run(create())


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:  # a pipe nobody reads would fill up and stall the server
        return subprocess.Popen(command, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


def start_tda(data_dir: Path, port: int, upstream_base_url: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "tda.cli", "serve"]
    return start(command, server_env(data_dir, port, upstream_base_url), data_dir / "server.log")


def wait_until_serving(
    process: subprocess.Popen[bytes], url: str, log: Path, timeout_s: float = START_TIMEOUT_S
) -> None:
    """Until ``url`` answers 200; the log's tail in the error when the process dies or the time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args} exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{process.args} did not answer within {timeout_s:g} s:\n{log.read_text()[-3000:]}")


def start_fake_upstream(
    folder: Path, record_to: Path | None = None, delay_ms: float = 0.0
) -> tuple[subprocess.Popen[bytes], str]:
    """The fake upstream (tests/gateway/upstream.py) on a free port, answering: its process and base URL.
    ``record_to``: a file it appends each request to (a JSON line each); ``delay_ms``: each completion's latency."""
    port, log = free_port(), folder / "upstream.log"
    command = [sys.executable, str(ROOT / "tests" / "gateway" / "upstream.py"), "--port", str(port)]
    command += ["--record-to", str(record_to)] if record_to is not None else []
    command += ["--delay-ms", str(delay_ms)] if delay_ms else []
    process = start(command, {**os.environ, "PYTHONPATH": str(ROOT)}, log)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_serving(process, f"{base}/models", log)
    except BaseException:
        stop(process)
        raise
    return process, base


@contextlib.contextmanager
def in_process_settings(folder: Path, **env: str) -> Iterator[tuple[Settings, str]]:
    """The settings of an app run in this process (a bench's) whose model provider is a fake upstream started here
    and stopped after, its database under ``folder`` with an admin token (returned): ``env`` its variables beside
    ``server_env``'s; no module times out because the machine is busy."""
    upstream, base = start_fake_upstream(folder)
    try:
        data = folder / "tda"
        data.mkdir()
        token = admin_token(data)
        settings = Settings.from_env(server_env(data, 0, base) | env)
        yield dataclasses.replace(settings, module_timeout_s=60.0), token
    finally:
        stop(upstream)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
