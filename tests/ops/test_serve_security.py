"""`tda serve` refuses to listen beyond loopback with a weak secret: one line saying what to change, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.ops.live import ROOT, free_port, tda_env


def test_serve_refuses_a_weak_secret_on_a_public_address(tmp_path: Path) -> None:
    env = tda_env(tmp_path, free_port(), TDA_SECRET_KEY="dev-only-change-me")
    done = subprocess.run(
        [sys.executable, "-m", "tda.cli", "serve", "--host", "0.0.0.0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "TDA_SECRET_KEY" in lines[0] and "0.0.0.0" in lines[0]
    assert not (tmp_path / "secret_key").exists()  # a configured secret is used as given, nothing generated
