"""SQLite runs on the event loop's thread (tda/inline_sqlite.py): a database another process has locked is waited
for without stalling the loop, and a lock held past the busy timeout fails the write whole, losing nothing."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from tda import inline_sqlite
from tda.db import upgrade_async
from tda.demo import seed_demo
from tda.errors import NotFound
from tda.store import Store


async def _store(tmp_path: Path) -> tuple[Store, Path]:
    path = tmp_path / "tda.db"
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade_async(url)
    store = Store.connect(url)
    await seed_demo(store)
    return store, path


class Ticker:
    """Counts how often the loop got to run it: a stalled loop counts nothing."""

    def __init__(self) -> None:
        self.ticks = 0
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.01)
            self.ticks += 1


async def test_a_write_waits_for_another_process_lock_while_the_loop_runs(tmp_path: Path) -> None:
    store, path = await _store(tmp_path)
    other = sqlite3.connect(path, isolation_level=None)  # another process's connection, as far as SQLite knows
    other.execute("BEGIN IMMEDIATE")  # holds the write lock
    ticker = Ticker()
    try:
        write = asyncio.create_task(store.sessions.create({"id": "s", "profile_id": "demo-tools"}, "test"))
        await asyncio.sleep(0.3)
        assert not write.done(), "the write went through while another connection held the lock"
        assert ticker.ticks >= 15, f"the loop ran {ticker.ticks} times in 0.3 s while the write waited"
        other.execute("COMMIT")
        await asyncio.wait_for(write, 5)
        assert (await store.sessions.get("s")).profile_id == "demo-tools"
    finally:
        ticker.task.cancel()
        other.close()
        await store.close()


async def test_a_lock_held_past_the_busy_timeout_fails_the_write_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inline_sqlite, "BUSY_TIMEOUT_S", 0.2)
    store, path = await _store(tmp_path)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(OperationalError, match="database is locked"):
            await store.sessions.create({"id": "s", "profile_id": "demo-tools"}, "test")
    finally:
        other.execute("ROLLBACK")
        other.close()
    try:
        with pytest.raises(NotFound):
            await store.sessions.get("s")  # nothing half-written
        await store.sessions.create({"id": "s", "profile_id": "demo-tools"}, "test")  # and the store works on
        assert (await store.sessions.get("s")).id == "s"
    finally:
        await store.close()
