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


async def test_a_long_turn_is_written_and_committed_off_the_loop_and_stored_as_a_short_one_is(tmp_path, monkeypatch):
    """A chat client's first call with a session brings its whole history: its rows are written without being read
    back, their batches and the commit in a worker thread (the loop serves everyone meanwhile), and stored exactly
    as rows read back are; a short turn's commit stays on the loop (a hop costs more than it)."""
    store, _ = await _store(tmp_path)
    to_thread, offloaded = asyncio.to_thread, []

    async def spy(call, /, *args, **kwargs):
        offloaded.append(getattr(call, "__name__", ""))
        return await to_thread(call, *args, **kwargs)

    monkeypatch.setattr(inline_sqlite.asyncio, "to_thread", spy)
    n = inline_sqlite.BIG_COMMIT_ROWS + 1
    messages = [{"role": ("user", "assistant")[i % 2], "content": f"line {i}", "tokens": 4} for i in range(n)]
    try:
        await store.sessions.create({"id": "s", "profile_id": "demo-tools"}, "test")
        _, read_back = await store.sessions.record_turn("s", {"turn": 1, "query": "q", "answer": "a"}, messages)
        assert offloaded.count("commit") == 1 and "executemany" not in offloaded  # RETURNING: rows one statement each
        offloaded.clear()
        _, none = await store.sessions.record_turn(
            "s", {"turn": 2, "query": "q", "answer": "a"}, messages, returning=False
        )
        assert none == [] and offloaded.count("commit") == 1 and offloaded.count("executemany") > 1
        stored = await store.sessions.turn_messages("s", 2)
        assert len(stored) == n and (await store.sessions.load("s")).message_count == 2 * n
        fields = ("role", "content", "tool_calls", "tool_call_id", "name", "valid", "phase", "token_counts", "parts")
        assert [[getattr(m, f) for f in fields] for m in stored] == [[getattr(r, f) for f in fields] for r in read_back]
        offloaded.clear()
        await store.sessions.record_turn("s", {"turn": 3, "query": "q", "answer": "a"}, messages[:2], returning=False)
        assert offloaded == []
    finally:
        await store.close()
