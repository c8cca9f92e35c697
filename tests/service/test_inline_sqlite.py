"""SQLite runs on the event loop's thread (tda/inline_sqlite.py): a database another process has locked is waited
for without stalling the loop, and a lock held past the busy timeout fails the write whole, losing nothing."""

from __future__ import annotations

import asyncio
import contextlib
import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from tda import inline_sqlite
from tda.db import upgrade_async
from tda.demo import seed_demo
from tda.errors import Conflict, NotFound
from tda.store import Store
from tda.store.sessions import Priced


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
        # ~30 ticks on a quiet machine, 14 seen at load 10; a loop blocked by the waiting write counts 0 or 1
        assert ticker.ticks >= 5, f"the loop ran {ticker.ticks} times in 0.3 s while the write waited"
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
        # sqlite3's error: a session is created by the loop's own writer (both answer 503, tda/api/errors.py)
        with pytest.raises((OperationalError, sqlite3.OperationalError), match="database is locked"):
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


async def test_a_request_cancelled_while_its_write_waits_writes_nothing_and_gives_its_connection_back(
    tmp_path: Path,
) -> None:
    """tda closes a SQLite connection itself, not in SQLAlchemy's shielded task (tda/db.py): a write cancelled midway
    (a client gone, shutdown) is rolled back whole and its connection is back in the pool for the next request."""
    store, path = await _store(tmp_path)
    await store.sessions.create({"id": "s", "profile_id": "demo-tools"}, "test")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        for _ in range(3):  # more than one: a connection not given back would be missed by the next
            write = asyncio.create_task(store.sessions.record_turn("s", {"turn": 1, "query": "q"}, []))
            await asyncio.sleep(0.05)
            assert not write.done()
            write.cancel()
            with pytest.raises(asyncio.CancelledError):
                await write
            assert store.db.engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    finally:
        other.execute("ROLLBACK")
        other.close()
    try:
        assert await store.sessions.newest_turn("s") is None  # nothing half-written
        await store.sessions.record_turn("s", {"turn": 1, "query": "q"}, [])  # and the store works on
        assert (await store.sessions.newest_turn("s")).query == "q"  # type: ignore[union-attr]
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


async def test_a_turn_s_model_call_is_stored_with_its_record_as_the_whole_snapshot_written_again_would_be(tmp_path):
    """The model call (and step times) a turn adds to its snapshot are written in the turn's own transaction, by
    SQLite editing the stored JSON: the data read back is what writing the whole snapshot again stored, keys in
    the same order; a turn recorded meanwhile (a conflict) still leaves its snapshot priced."""
    store, _ = await _store(tmp_path)
    data = {"total_used": 1234, "modules": [{"module_id": "knowledge_context", "used": 99.5}], "note": 'café ✓ "q"'}
    call = {"model": "gpt-4o", "prompt_tokens": 1200, "cost_usd": 0.0031, "cached": None}
    timings = {"load": 1.23456, "assemble": 12.5, "snapshot": 0.0, "model": 3.0}
    try:
        await store.sessions.create({"id": "s", "profile_id": "demo-tools"}, "test")
        row = {"session_id": "s", "turn": 1, "type_id": "t", "type_version": 1, "model": "gpt-4o", "inputs": {}}
        whole, _ = await store.sessions.record_snapshot({**row, "data": data})
        edited, _ = await store.sessions.record_snapshot({**row, "data": data})
        with patch_sqlite(store, False):  # the old way: the whole data encoded and written again
            await store.sessions.record_model_call(whole, data, call, timings)
        messages = [{"role": "user", "content": "q", "tool_calls": []}, {"role": "assistant", "content": "a"}]
        priced = Priced(edited, data, call, timings)
        await store.sessions.record_turn("s", {"turn": 1, "query": "q", "answer": "a"}, messages, priced=priced)
        expected = (await store.sessions.snapshot(whole)).data
        assert expected == {**data, "model_call": call, "timings_ms": {"load": 1.235, "assemble": 12.5, "model": 3.0}}
        stored = (await store.sessions.snapshot(edited)).data
        assert stored == expected and list(stored) == list(expected)
        assert [(m.role, m.content, m.tool_calls) for m in await store.sessions.turn_messages("s", 1)] == [
            ("user", "q", []),
            ("assistant", "a", []),
        ]

        again, _ = await store.sessions.record_snapshot({**row, "data": data})
        with pytest.raises(Conflict):
            await store.sessions.record_turn("s", {"turn": 1, "query": "q"}, [], priced=Priced(again, data, call))
        assert (await store.sessions.snapshot(again)).data == {**data, "model_call": call}

        odd = {**data, "z_score": math.inf}  # Python writes "Infinity", which SQLite's JSON functions may not read
        unread, _ = await store.sessions.record_snapshot({**row, "turn": 2, "data": odd})
        await store.sessions.record_turn("s", {"turn": 2, "query": "q"}, messages, priced=Priced(unread, odd, call))
        assert (await store.sessions.snapshot(unread)).data == {**odd, "model_call": call}
        assert [m.content for m in await store.sessions.turn_messages("s", 2)] == ["q", "a"]
    finally:
        await store.close()


@contextlib.contextmanager
def patch_sqlite(store: Store, sqlite: bool) -> Iterator[None]:
    was, store.db.is_sqlite = store.db.is_sqlite, sqlite
    try:
        yield
    finally:
        store.db.is_sqlite = was
