"""A real `tda` process for the operations tests: `tda serve` on a free 127.0.0.1 port in a temp data dir."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BYTECODE = ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")


def bare_env(**variables: str) -> dict[str, str]:
    """A near-empty environment for a fresh interpreter: ``PATH``, ``variables``, and where Python keeps compiled
    bytecode, when set (the Makefile's PYTHONPYCACHEPREFIX), which changes nothing an import does: without it the
    interpreter compiled every module it imports again, litellm and the app included (~20 s of CPU)."""
    kept = {name: os.environ[name] for name in BYTECODE if name in os.environ}
    return {"PATH": "/usr/bin:/bin", **kept, **variables}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tda_env(data: Path, port: int, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "TDA_DATA_DIR": str(data),
        "TDA_MODULES_DIR": str(data / "modules"),
        "TDA_MOCK_MODEL": "1",
        "TDA_EMBEDDER": "hashing",
        "TDA_HOST": "127.0.0.1",
        "TDA_PORT": str(port),
        **extra,
    }


def cli(command: list[str], env: dict[str, str], cwd: Path = ROOT, timeout: float = 120) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def token_in(output: str) -> str:
    match = re.search(r"(tda_\S+)\s*$", output.strip())
    assert match, f"no token in: {output}"
    return match.group(1)


def wait_until_up(url: str, proc: subprocess.Popen[bytes], log: Path, seconds: float = 90) -> None:
    """Until the application is up (``loaded``); a server that exits or stays silent fails with its log."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"tda serve exited early:\n{log.read_text()}")
        if loaded(url):
            return
        time.sleep(0.1)
    raise RuntimeError(f"tda serve did not answer on {url} within {seconds} s:\n{log.read_text()}")


def loaded(url: str) -> bool:
    """Whether `tda serve` at ``url`` has loaded its application: /readyz answers and no longer says "starting"
    (it answers /healthz from its first second, while tda loads: tda/launch.py)."""
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=2):
            return True
    except urllib.error.HTTPError as exc:
        return json.loads(exc.read() or b"{}").get("status") != "starting"
    except OSError:
        return False


@dataclass
class Live:
    """`command` (default: this checkout's `python -m tda.cli serve`) with ``env``; ``call`` speaks JSON."""

    env: dict[str, str]
    log: Path
    command: list[str] = field(default_factory=lambda: [sys.executable, "-m", "tda.cli", "serve"])
    cwd: Path = ROOT
    token: str = ""
    proc: subprocess.Popen[bytes] | None = None
    cookies: http.cookiejar.CookieJar = field(default_factory=http.cookiejar.CookieJar)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.env['TDA_PORT']}"

    def start(self, wait_s: float = 90) -> None:
        with self.log.open("a") as out:
            self.proc = subprocess.Popen(self.command, cwd=self.cwd, env=self.env, stdout=out, stderr=subprocess.STDOUT)
        wait_until_up(self.url, self.proc, self.log, wait_s)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def raw(self, method: str, path: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> Any:
        """(status, headers, body bytes), for any status; cookies persist between calls."""
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers or {})
        try:
            with opener.open(req, timeout=30) as res:
                return res.status, res.headers, res.read()
        except urllib.error.HTTPError as err:
            return err.code, err.headers, err.read()

    def call(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        """(status, headers, JSON body) as the admin token."""
        data = json.dumps(body).encode() if body is not None else None
        auth = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        status, res_headers, raw = self.raw(
            method, path, data, {**auth, "Content-Type": "application/json", **(headers or {})}
        )
        try:
            parsed = json.loads(raw or b"null")
        except ValueError:
            parsed = raw.decode(errors="replace")
        return status, res_headers, parsed
