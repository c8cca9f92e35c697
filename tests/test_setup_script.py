"""scripts/test-deps.sh (run by `make test`): quiet when everything is there, one clear line when it cannot help."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "test-deps.sh"


def _tool(folder: Path, name: str, body: str = "exit 0") -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def _run(tmp_path: Path, tools: dict[str, str], postgres: bool) -> subprocess.CompletedProcess[str]:
    """The script on a machine whose PATH holds only ``tools``, as a user who is not root."""
    path_dir = tmp_path / "bin"
    path_dir.mkdir(exist_ok=True)
    _tool(path_dir, "id", "echo 1000")
    for name, body in tools.items():
        _tool(path_dir, name, body)
    pg = tmp_path / "pg" / "15" / "bin"
    pg.mkdir(parents=True, exist_ok=True)
    if postgres:
        _tool(pg, "postgres")
    env = {
        "PATH": str(path_dir),
        "HOME": str(tmp_path),
        "BIN": str(path_dir),
        "PG_BINARIES": str(tmp_path / "pg" / "*" / "bin" / "postgres"),
    }
    return subprocess.run(["/bin/bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30)


def test_everything_present_is_a_quiet_no_op(tmp_path: Path) -> None:
    done = _run(tmp_path, {"chromium": "exit 0", "redis-server": "exit 0"}, postgres=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_missing_servers_without_root_fail_with_one_line_naming_the_command(tmp_path: Path) -> None:
    done = _run(tmp_path, {"playwright": "exit 1"}, postgres=False)  # no network: playwright cannot help
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "apt-get install -y chromium postgresql redis-server" in lines[0]


def test_playwright_fetches_the_browser_when_it_can(tmp_path: Path) -> None:
    log = tmp_path / "playwright.log"
    done = _run(tmp_path, {"playwright": f'echo "$@" >> {log}', "redis-server": "exit 0"}, postgres=True)
    assert done.returncode == 0, done.stderr
    assert log.read_text().split() == ["install", "chromium"]


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/apt-get").exists(), reason="needs root and apt")
def test_this_machine_has_everything(tmp_path: Path) -> None:
    """CI runs as root: after `make test` ran the script, a second run finds nothing to do."""
    done = subprocess.run(["/bin/bash", str(SCRIPT)], capture_output=True, text=True, timeout=600)
    assert (done.returncode, done.stdout) == (0, "")
