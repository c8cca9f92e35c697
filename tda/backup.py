"""`tda db backup PATH`: a consistent copy of the SQLite database while the service keeps running.

SQLite's online backup API copies page by page and restarts when a writer changes a page it already copied,
so the copy is one consistent state; the copy is written beside PATH and renamed into place once checked.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url


class BackupError(Exception):
    """A backup that cannot be made; the message says what to change."""


@dataclass(frozen=True)
class BackupReport:
    source: Path
    target: Path
    pages: int
    bytes: int


def sqlite_path(url: str) -> Path:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        raise BackupError(
            f"the database is {parsed.get_backend_name()}, not SQLite; back it up with its own tools (e.g. pg_dump)"
        )
    if not parsed.database or parsed.database == ":memory:":
        raise BackupError("the database is in memory; there is nothing on disk to back up")
    return Path(parsed.database)


def backup_sqlite(url: str, target: Path) -> BackupReport:
    source = sqlite_path(url)
    if not source.is_file():
        raise BackupError(f"no database at {source}; run `tda db upgrade` or start the service first")
    if target.exists():
        raise BackupError(f"{target} exists; choose another path or remove it first")
    if not target.parent.is_dir():
        raise BackupError(f"{target.parent} is not a folder; create it first")
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)
    try:
        with contextlib.closing(sqlite3.connect(source)) as src, contextlib.closing(sqlite3.connect(partial)) as dst:
            src.backup(dst, pages=1024)  # in steps, so the service's writers are not held off for long
            (verdict,) = dst.execute("PRAGMA integrity_check").fetchone()
            (pages,) = dst.execute("PRAGMA page_count").fetchone()
        if verdict != "ok":
            raise BackupError(f"the copy failed its integrity check ({verdict}); nothing was written to {target}")
        partial.rename(target)
    finally:
        partial.unlink(missing_ok=True)
    return BackupReport(source, target, pages, target.stat().st_size)
