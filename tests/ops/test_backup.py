"""`tda db backup PATH`: a checked copy of the SQLite database; clear refusals where it cannot make one."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.ops.live import ROOT, cli, free_port, tda_env


def _tda(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tda.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_backup_copies_every_row_and_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    env = tda_env(tmp_path / "data", free_port())
    cli([sys.executable, "-m", "tda.cli", "tokens", "create", "--role", "admin", "--name", "kept"], env)
    copy = tmp_path / "copy.db"
    done = _tda(env, "db", "backup", str(copy))
    assert done.returncode == 0 and "integrity ok" in done.stdout, done.stderr
    with sqlite3.connect(tmp_path / "data" / "tda.db") as source, sqlite3.connect(copy) as backup:
        tables = [t for (t,) in source.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        assert "api_tokens" in tables
        for table in tables:
            query = f"SELECT * FROM {table} ORDER BY 1"
            assert backup.execute(query).fetchall() == source.execute(query).fetchall(), table
        assert backup.execute("PRAGMA integrity_check").fetchone() == ("ok",)

    again = _tda(env, "db", "backup", str(copy))  # never overwrites
    assert again.returncode == 2 and "exists" in again.stderr
    postgres = _tda(
        {**env, "TDA_DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1/x"}, "db", "backup", str(tmp_path / "p")
    )
    assert postgres.returncode == 2 and "pg_dump" in postgres.stderr
    nowhere = _tda(env, "db", "backup", str(tmp_path / "missing" / "copy.db"))
    assert nowhere.returncode == 2 and "not a folder" in nowhere.stderr
    assert not list(tmp_path.glob(".*partial"))
