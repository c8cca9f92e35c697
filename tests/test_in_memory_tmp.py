"""scripts/in-memory-tmp.sh, which `make test` runs pytest through: the command's temporary files go to a fresh
folder on a memory file system when there is one with room (no fsync waits), the folder is gone when the command
ends, and the command's exit status is the script's. Elsewhere TMPDIR is left as it was."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "in-memory-tmp.sh"
SHM = Path("/dev/shm")
# What the command sees: its TMPDIR, that folder's mode, and where tempfile (so pytest's tmp_path) makes a folder.
PROBE = (
    'echo "$TMPDIR"; stat -c %a "$TMPDIR"; '
    'python3 -c "import os, tempfile; d = tempfile.mkdtemp(); os.rmdir(d); print(os.path.dirname(d))"; exit "$1"'
)


def run(status: int = 0, **env: str) -> tuple[int, list[str]]:
    """The script's exit status, and what the command saw (its TMPDIR, its mode, where tempfile made a folder)."""
    done = subprocess.run(
        [str(SCRIPT), "sh", "-c", PROBE, "probe", str(status)],
        env={**os.environ, "TMPDIR": "/var/tmp", **env},
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout.split()


def fs_type(path: Path) -> str:
    done = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True, check=False)
    return done.stdout.strip()


needs_shm = pytest.mark.skipif(fs_type(SHM) not in ("tmpfs", "ramfs"), reason="needs /dev/shm in memory")


@needs_shm
def test_the_command_s_temporary_files_are_in_memory_and_gone_after_it() -> None:
    status, (tmpdir, mode, made_in) = run(TDA_TEST_TMP_MIN_MB="1")
    assert status == 0 and made_in == tmpdir  # tempfile follows TMPDIR
    assert Path(tmpdir).parent == SHM and Path(tmpdir).name.startswith("tda-tests.")
    assert mode == "755"  # the tests' PostgreSQL servers run as the postgres user, which must reach their folders
    assert not Path(tmpdir).exists()  # removed, with whatever the command left in it


@needs_shm
def test_the_command_s_exit_status_is_the_script_s_and_its_folder_is_removed_after_a_failure() -> None:
    status, (tmpdir, _, _) = run(3, TDA_TEST_TMP_MIN_MB="1")
    assert status == 3 and Path(tmpdir).parent == SHM and not Path(tmpdir).exists()


def test_without_room_in_memory_tmpdir_is_left_as_it_is() -> None:
    status, (tmpdir, _, made_in) = run(TDA_TEST_TMP_MIN_MB=str(10**9))
    assert (status, tmpdir, made_in) == (0, "/var/tmp", "/var/tmp")


def test_with_no_memory_file_system_or_the_setting_empty_tmpdir_is_left_as_it_is(tmp_path: Path) -> None:
    for env, status in (({"TDA_TEST_TMP_ROOT": str(tmp_path / "missing")}, 4), ({"TDA_TEST_TMP_ROOT": ""}, 0)):
        code, (tmpdir, _, made_in) = run(status, **env)
        assert (code, tmpdir, made_in) == (status, "/var/tmp", "/var/tmp")
    code, (tmpdir, _, _) = run(TDA_TEST_TMP_ROOT=str(ROOT), TDA_TEST_TMP_MIN_MB="1")  # a folder on disk
    assert (code, tmpdir) == (0, "/var/tmp") or fs_type(ROOT) in ("tmpfs", "ramfs")


def test_make_test_and_test_fast_run_pytest_through_it() -> None:
    rules = (ROOT / "Makefile").read_text()
    assert "\tscripts/in-memory-tmp.sh $(BIN)/python -m pytest -n 3 " in rules
    assert "\tscripts/in-memory-tmp.sh $(BIN)/python -m pytest -q tests/test_*.py" in rules
