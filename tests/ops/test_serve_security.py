"""`tda serve` refuses a weak secret, on loopback too: one line saying what to change, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.ops.live import ROOT, free_port, tda_env


def test_serve_refuses_a_weak_secret_even_on_loopback(tmp_path: Path) -> None:
    env = tda_env(tmp_path, free_port(), TDA_SECRET_KEY="secret")
    done = subprocess.run(
        [sys.executable, "-m", "tda.cli", "serve", "--host", "127.0.0.1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "TDA_SECRET_KEY" in lines[0] and "32 bytes" in lines[0]
    assert not (tmp_path / "secret_key").exists()  # a configured secret is used as given, nothing generated


def test_serve_says_why_the_database_could_not_be_migrated_without_its_password(tmp_path: Path) -> None:
    """Migrations run in a child process before serving: when they fail, one line says so, the password
    in the URL is not printed, and the exit status is 1 (not a traceback from the child)."""
    url = "postgresql+asyncpg://tda:hunter2-password@127.0.0.1:1/tda"
    env = tda_env(tmp_path, free_port(), TDA_DATABASE_URL=url)
    done = subprocess.run(
        [sys.executable, "-m", "tda.cli", "serve", "--host", "127.0.0.1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("tda serve: could not start: ") and "hunter2" not in done.stderr
