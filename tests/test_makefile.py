"""The Makefile's install stamps: `make run` installs the runtime alone, `make test` adds the test extra, and each
installs again only when pyproject.toml or setup.py changed; pip installs uv once, and uv the rest, from pip's
package sources. Run on a copy of the Makefile whose venv's pip and python only write down what they were asked to
install (the oracle: that log)."""

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
    log = tmp_path / "install.log"
    # pip installs uv (its stub leaves an executable behind); python runs scripts/uv_install.py
    (bin_dir / "pip").write_text(f'#!/bin/sh\necho "$*" >> {log}\ncp "$0" "$(dirname "$0")/uv"\n')
    (bin_dir / "python").write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    return tmp_path


def make(checkout: Path, target: str) -> list[str]:
    """The installs ``make target`` asked for (the log is emptied after each call)."""
    subprocess.run(["make", "-s", target], cwd=checkout, check=True, capture_output=True)
    log = checkout / "install.log"
    installs = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return [line.split()[-1] for line in installs]


def test_run_installs_the_runtime_alone_and_test_adds_the_extra(checkout: Path) -> None:
    assert make(checkout, RUNTIME) == ["uv==0.13.8", "."]  # `make run`: no test extra (no torch, no browsers)
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


def test_uv_installs_from_the_package_sources_pip_is_configured_with(monkeypatch: pytest.MonkeyPatch) -> None:
    from scripts.uv_install import pip_options, uv_arguments, uv_environment

    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # this machine's pip.conf files left out: the variables alone
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example/simple")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "file:///srv/a/simple file:///srv/b/simple")
    monkeypatch.setenv("PIP_FIND_LINKS", "/srv/wheels")
    monkeypatch.setenv("PIP_CONSTRAINT", "/srv/constraints.txt")
    monkeypatch.setenv("PIP_CERT", "/srv/ca.pem")
    options = pip_options()
    args = uv_arguments(options)
    pairs = list(zip(args[::2], args[1::2], strict=True))
    assert pairs == [
        ("--index-strategy", "unsafe-best-match"),  # pip's sources are merged, not tried one after another
        ("--index-url", "https://mirror.example/simple"),
        ("--extra-index-url", "file:///srv/a/simple"),
        ("--extra-index-url", "file:///srv/b/simple"),
        ("--find-links", "/srv/wheels"),
        ("--constraint", "/srv/constraints.txt"),
    ]
    assert uv_environment(options)["SSL_CERT_FILE"] == "/srv/ca.pem"

    monkeypatch.setenv("PIP_NO_INDEX", "1")
    assert "--no-index" in uv_arguments(pip_options()) and "--index-url" not in uv_arguments(pip_options())
