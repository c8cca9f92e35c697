"""The Makefile's install stamps: `make run` installs the runtime alone, `make test` adds the test extra, and each
installs again only when pyproject.toml or setup.py changed. Run on a copy of the Makefile whose venv's pip only
writes down what it was asked to install (the oracle: that log)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNTIME, TEST = ".venv/.installed-runtime", ".venv/.installed"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    for name in ("pyproject.toml", "setup.py"):
        (tmp_path / name).write_text("")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "pip").write_text(f'#!/bin/sh\necho "$*" >> {tmp_path / "pip.log"}\n')
    (bin_dir / "python").write_text("#!/bin/sh\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    return tmp_path


def make(checkout: Path, target: str) -> list[str]:
    """The installs ``make target`` asked pip for (the log is emptied after each call)."""
    subprocess.run(["make", "-s", target], cwd=checkout, check=True, capture_output=True)
    log = checkout / "pip.log"
    installs = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return [line.split()[-1] for line in installs]


def test_run_installs_the_runtime_alone_and_test_adds_the_extra(checkout: Path) -> None:
    assert make(checkout, RUNTIME) == ["."]  # `make run`: no test extra (no torch, no browsers)
    assert make(checkout, RUNTIME) == []
    assert make(checkout, TEST) == [".[test]"]  # `make test`, lint, bench
    assert make(checkout, TEST) == [] and make(checkout, RUNTIME) == []  # the test install holds the runtime


def test_a_changed_pyproject_installs_again(checkout: Path) -> None:
    make(checkout, TEST)
    later = os.stat(checkout / TEST).st_mtime + 5
    os.utime(checkout / "pyproject.toml", (later, later))
    assert make(checkout, RUNTIME) == ["."]
    assert make(checkout, TEST) == [".[test]"]


def test_the_run_and_test_targets_use_their_stamps() -> None:
    rules = (ROOT / "Makefile").read_text()
    assert "\nrun: $(RUNTIME)\n" in rules and "\ntest: $(STAMP)\n" in rules
