"""The reads every session call makes, on SQLite by the loop's own connection (``LoopReader``,
tda/inline_sqlite.py): the same rows a pooled connection reads, never older than the newest commit, never a write."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import bindparam, select

from tda import scope
from tda.errors import NotFound
from tda.inline_sqlite import Compiled
from tda.models import SessionRow, TurnRow
from tda.store import Store
from tda.store.sessions import CALL_STATE

COLUMNS = [c.key for c in SessionRow.__table__.columns]


@pytest.fixture
async def store(template_db: Path, tmp_path: Path) -> AsyncIterator[Store]:
    (tmp_path / "tda.db").write_bytes(template_db.read_bytes())
    opened = Store.connect(f"sqlite+aiosqlite:///{tmp_path / 'tda.db'}")
    await opened.profiles.create("p", {"name": "P", "type": "tool_enabled"}, "test")
    try:
        yield opened
    finally:
        await opened.close()


async def _pooled(store: Store, session_id: str) -> dict[str, Any]:
    """The session's row as the pool's connection reads it (the ORM's own read)."""
    async with store.db.read() as s:
        row = await s.get(SessionRow, session_id)
        assert row is not None
        return {c: getattr(row, c) for c in COLUMNS}


async def _set(store: Store, session_id: str, **values: Any) -> None:
    async with store.db.write() as s:
        row = await s.get(SessionRow, session_id)
        assert row is not None
        for key, value in values.items():
            setattr(row, key, value)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    created=st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9999, 1, 1)),
    later=st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=3650)),
    limit=st.none() | st.integers(min_value=1, max_value=2**31 - 1),
    title=st.text(max_size=40),
    phase=st.none() | st.text(min_size=1, max_size=10),
)
async def test_a_session_read_by_the_reader_is_the_row_the_pool_reads(
    store: Store, created: datetime, later: timedelta, limit: int | None, title: str, phase: str | None
) -> None:
    """Every column alike, dates (stored as text) made datetimes as SQLAlchemy makes them, to the microsecond."""
    try:
        await store.sessions.get("s")
    except NotFound:
        await store.sessions.create({"id": "s", "profile_id": "p", "user_id": "u"}, "test")
    updated = created + later if created + later < datetime(9999, 12, 31) else created
    await _set(store, "s", created_at=created, updated_at=updated, context_limit=limit, title=title, phase=phase)
    reads = store.db.reader.reads
    read = await store.sessions.get("s")
    assert store.db.reader.reads == reads + 1  # by the reader, not the pool
    assert {c: getattr(read, c) for c in COLUMNS} == await _pooled(store, "s")


async def test_another_project_s_session_is_not_found_by_the_reader(store: Store) -> None:
    await store.sessions.create({"id": "mine", "profile_id": "p", "user_id": "u"}, "test")
    scope.act_as(scope.Acting("elsewhere", shared=False))
    try:
        with pytest.raises(NotFound):
            await store.sessions.get("mine")
        with pytest.raises(NotFound):
            await store.sessions.get("nobody")
    finally:
        scope.act_as(scope.EVERYWHERE)
    assert (await store.sessions.get("mine")).id == "mine"


async def test_the_reader_sees_each_commit_made_before_its_read(store: Store, tmp_path: Path) -> None:
    """No read transaction is held between reads: a turn the pool recorded, or another process wrote, is in the
    next read's place (a call that read an older newest turn would take its number again: a 409)."""
    await store.sessions.create({"id": "s", "profile_id": "p", "user_id": "u"}, "test")
    assert (await store.sessions.call_state("s", None)).newest is None
    async with store.db.write() as s:
        s.add(TurnRow(session_id="s", turn=1, query="q", conversation_key="k1", request_key="r1"))
    state = await store.sessions.call_state("s", "r1")
    assert (state.asking, state.newest) == ((1, "k1"), (1, "k1"))
    other = sqlite3.connect(tmp_path / "tda.db")  # another process's write, as a replica's or the CLI's
    with other:
        other.execute("UPDATE turns SET conversation_key = 'k2' WHERE session_id = 's'")
    other.close()
    assert (await store.sessions.call_state("s", "r1")).newest == (1, "k2")


async def test_the_reader_cannot_write(store: Store) -> None:
    await store.sessions.create({"id": "s", "profile_id": "p", "user_id": "u"}, "test")
    await store.sessions.get("s")
    reader = store.db.reader
    assert reader is not None and reader._connection is not None  # opened by its first read
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader._connection.execute("UPDATE sessions SET title = 'x'")
    assert (await store.sessions.get("s")).title == ""


def test_a_statement_whose_parameters_need_converting_is_refused(store: Store) -> None:
    """A datetime parameter is text to SQLite only through SQLAlchemy's conversion, which the reader skips."""
    since = select(SessionRow.id).where(SessionRow.created_at > bindparam("since", type_=SessionRow.created_at.type))
    with pytest.raises(TypeError, match="since"):
        Compiled(since, ("since",), store.db.engine.dialect)
    Compiled(CALL_STATE, ("session_id", "request_key"), store.db.engine.dialect)


async def test_an_in_memory_database_is_read_by_the_pool() -> None:
    """Another connection to ``:memory:`` is another database: such a store has no reader, and reads as before."""
    store = Store.connect("sqlite+aiosqlite://")
    try:
        assert store.db.reader is None
        with pytest.raises(Exception, match="no such table"):
            await store.sessions.get("s")
    finally:
        await store.close()
