"""A session call's reads and its snapshot's write, on SQLite by connections of the loop's own (``LoopReader``,
``LoopWriter``: tda/inline_sqlite.py): the same rows a pooled connection reads and writes, a read never older than
the newest commit, the reader never a write."""

from __future__ import annotations

import contextlib
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import inspect, select

from tda import scope
from tda.errors import Conflict, NotFound
from tda.models import AttachmentRow, MessageRow, ProfileRow, SessionRow, TurnRow
from tda.store import Store
from tda.store.sessions import Priced

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


async def _new_session(store: Store, way: str) -> tuple[str, dict[str, Any]]:
    """A new session, and the fields of a snapshot of it."""
    session_id = f"{way}-{uuid.uuid4().hex}"
    await store.sessions.create({"id": session_id, "profile_id": "p", "user_id": "u"}, "test")
    return session_id, {"session_id": session_id, "type_id": "t", "type_version": 1, "model": "m", "inputs": {}}


@contextlib.contextmanager
def _written_by(store: Store, way: str) -> Iterator[Callable[[], int]]:
    """Writes by the loop's own connection (``way`` "loop") or the pool's ("pool"); yields how many transactions the
    loop's connection has made since."""
    writer = store.db.single_writes
    writes = writer.writes
    if way == "pool":
        store.db.single_writes = None
    try:
        yield lambda: writer.writes - writes
    finally:
        store.db.single_writes = writer


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


@pytest.mark.parametrize("read", ["get", "load"])
async def test_another_project_s_session_is_not_read_by_the_reader(store: Store, read: str) -> None:
    """Neither a session's row (``get``) nor a turn's read of it (``load``) crosses projects: the reader's
    statements bypass the ORM's project filter and write it out themselves."""
    await store.sessions.create({"id": "mine", "profile_id": "p", "user_id": "u"}, "test")
    reading = getattr(store.sessions, read)
    scope.act_as(scope.Acting("elsewhere", shared=False))
    try:
        for session_id in ("mine", "nobody"):
            with pytest.raises(NotFound):
                await reading(session_id)
    finally:
        scope.act_as(scope.EVERYWHERE)
    assert await reading("mine")


async def _loaded_by_the_orm(store: Store, session_id: str) -> tuple[Any, ...]:
    """The session's, its profile's and its attachments' rows as an ORM session reads them."""
    async with store.db.read() as s:
        row = await s.get(SessionRow, session_id)
        assert row is not None
        profile = await s.get(ProfileRow, row.profile_id)
        assert profile is not None
        attached = (await s.scalars(select(AttachmentRow).where(AttachmentRow.session_id == session_id))).all()
        return _columns(row), _columns(profile), sorted((_columns(a) for a in attached), key=lambda a: a["created_at"])


def _columns(row: Any) -> dict[str, Any]:
    return {c.key: getattr(row, c.key) for c in row.__table__.columns}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    limit=st.none() | st.integers(min_value=1, max_value=2**31 - 1),
    title=st.text(max_size=40),
    turns=st.integers(0, 3),
    before=st.none() | st.integers(1, 4),
    attached=st.lists(st.text(min_size=1, max_size=20), max_size=2),
)
async def test_a_turn_s_load_is_read_by_the_reader_as_the_orm_reads_it(
    store: Store, limit: int | None, title: str, turns: int, before: int | None, attached: list[str]
) -> None:
    """A turn's ``load``: its session, profile and newest turns by the loop's own reader (two reads; its attachments
    and a replay's count one more each), every column as an ORM session reads it, the ORM objects detached as that
    session leaves them."""
    session_id = f"s-{uuid.uuid4().hex}"
    await store.sessions.create({"id": session_id, "profile_id": "p", "user_id": "u"}, "test")
    await _set(store, session_id, context_limit=limit, title=title)
    for text in attached:
        await store.sessions.add_attachment(session_id, {"name": text[:5], "text": text}, "test")
    for n in range(1, turns + 1):
        await store.sessions.record_turn(session_id, {"turn": n, "query": f"q{n}"}, [{"role": "user", "content": "q"}])
    reads = store.db.reader.reads
    data = await store.sessions.load(session_id, before_turn=before)
    assert store.db.reader.reads == reads + 2 + bool(attached) + (before is not None)  # not by an ORM session
    loaded = (_columns(data.session), _columns(data.profile), [_columns(a) for a in data.attachments])
    assert loaded == await _loaded_by_the_orm(store, session_id)
    assert all(inspect(row).detached for row in (data.session, data.profile, *data.attachments))
    shown = [n for n in range(1, turns + 1) if before is None or n < before]
    assert [t.turn for t in data.turns] == shown
    assert (data.last_message_turn, data.message_count) == (max(shown, default=0), len(shown))


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


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _stored(path: Path, snapshot_id: int) -> tuple[Any, ...]:
    """A snapshot's row as SQLite holds it (its text, not what SQLAlchemy makes of it), the id and time aside."""
    with sqlite3.connect(path) as c:
        return c.execute(
            "SELECT session_id, project_id, turn, type_id, type_version, model, data, inputs, length(created_at),"
            " typeof(created_at) FROM snapshots WHERE id = ?",
            (snapshot_id,),
        ).fetchone()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.dictionaries(st.text(max_size=10), JSON, max_size=5), inputs=st.dictionaries(st.text(), JSON))
async def test_a_snapshot_written_on_the_loop_s_connection_is_stored_as_the_pool_writes_it(
    store: Store, tmp_path: Path, data: dict[str, Any], inputs: dict[str, Any]
) -> None:
    """Byte for byte: its JSON as SQLAlchemy's JSON type writes it (NaN included), its time as its DateTime does."""
    try:
        await store.sessions.get("s")
    except NotFound:
        await store.sessions.create({"id": "s", "profile_id": "p", "user_id": "u"}, "test")
    fields = {"session_id": "s", "turn": 3, "type_id": "t", "type_version": 2, "model": "m", "data": data}
    writer, writes = store.db.single_writes, store.db.single_writes.writes
    own, _ = await store.sessions.record_snapshot({**fields, "inputs": inputs})
    assert writer.writes == writes + 1
    store.db.single_writes = None  # the pool's way
    try:
        pooled, _ = await store.sessions.record_snapshot({**fields, "inputs": inputs})
    finally:
        store.db.single_writes = writer
    assert _stored(tmp_path / "tda.db", own) == _stored(tmp_path / "tda.db", pooled)


async def test_a_snapshot_of_a_session_that_is_gone_is_a_conflict(store: Store) -> None:
    """Its session deleted while the model answered: the snapshot's write fails as the pool's did (a Conflict,
    nothing written), and the loop's connection writes the next one."""
    await store.sessions.create({"id": "s", "profile_id": "p", "user_id": "u"}, "test")
    fields = {"turn": 1, "type_id": "t", "type_version": 1, "model": "m", "data": {}, "inputs": {}}
    with pytest.raises(Conflict):
        await store.sessions.record_snapshot({**fields, "session_id": "gone"})
    snapshot_id, project = await store.sessions.record_snapshot({**fields, "session_id": "s"})
    assert (await store.sessions.snapshot(snapshot_id)).session_id == "s" and project == scope.DEFAULT_PROJECT


async def test_an_in_memory_database_is_read_by_the_pool() -> None:
    """Another connection to ``:memory:`` is another database: such a store has no reader, and reads as before."""
    store = Store.connect("sqlite+aiosqlite://")
    try:
        assert store.db.reader is None
        with pytest.raises(Exception, match="no such table"):
            await store.sessions.get("s")
    finally:
        await store.close()


def _table(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as c:
        return c.execute(sql, args).fetchall()


def _recorded(path: Path, session_id: str) -> tuple[Any, ...]:
    """A session's turns and messages as SQLite holds them (their text), ids, times and the session's name aside."""
    skip = {"id", "session_id", "created_at", "snapshot_id"}
    turn_columns = [c.key for c in TurnRow.__table__.columns if c.key not in skip]
    message_columns = [c.key for c in MessageRow.__table__.columns if c.key not in skip]
    turns = _table(path, f"SELECT {', '.join(turn_columns)} FROM turns WHERE session_id = ? ORDER BY id", session_id)
    messages = _table(
        path, f"SELECT {', '.join(message_columns)} FROM messages WHERE session_id = ? ORDER BY id", session_id
    )
    count = _table(path, "SELECT message_count FROM sessions WHERE id = ?", session_id)
    model_calls = _table(
        path, "SELECT data ->> '$.model_call', data ->> '$.timings_ms' FROM snapshots WHERE session_id = ?", session_id
    )
    return turns, messages, count, model_calls


MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": st.text(max_size=30)},
    optional={
        "tool_calls": st.lists(st.fixed_dictionaries({"id": st.text(max_size=5), "type": st.just("function")})),
        "tool_call_id": st.text(max_size=8),
        "name": st.text(min_size=1, max_size=8),
        "tokens": st.integers(0, 10_000),
    },
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    asked=st.lists(MESSAGE, min_size=1, max_size=4),
    stepped=st.lists(MESSAGE, max_size=3),
    results=st.lists(st.dictionaries(st.text(max_size=5), JSON, max_size=3), max_size=3),
    timings=st.dictionaries(st.sampled_from(["assemble", "model", "load"]), st.floats(0.001, 1e4), max_size=3),
)
async def test_a_call_recorded_on_the_loop_s_connection_is_stored_as_the_pool_stores_it(
    store: Store,
    tmp_path: Path,
    asked: list[dict[str, Any]],
    stepped: list[dict[str, Any]],
    results: list[dict[str, Any]],
    timings: dict[str, float],
) -> None:
    """A new turn and a step of it (``record_turn``, ``extend_turn``: their rows, the session's count, the priced
    snapshot), byte for byte as the pool's transactions write them, by the loop's own connection."""
    recorded = []
    for way in ("loop", "pool"):
        session_id, snapshot = await _new_session(store, way)
        with _written_by(store, way) as writes:
            first, _ = await store.sessions.record_snapshot({**snapshot, "turn": 1, "data": {"a": [1, 2]}})
            call = {"model": "m", "cost": 0.25, "tokens_in": 12}
            turn = {"turn": 1, "query": "q?", "request_key": "r", "results": results, "answer": "", "tokens_in": 5}
            await store.sessions.record_turn(
                session_id, turn, asked, returning=False, priced=Priced(first, {}, call, timings)
            )
            second, _ = await store.sessions.record_snapshot({**snapshot, "turn": 1, "data": {"b": "ü"}})
            changes = {"answer": "done", "results": results[:1], "plan": "p", "tokens_in": 7}
            step = await store.sessions.extend_turn(
                session_id, 1, changes, stepped, priced=Priced(second, {}, {**call, "cost": 0.5})
            )
        assert writes() == (4 if way == "loop" else 0)
        recorded.append((_recorded(tmp_path / "tda.db", session_id), step._replace(id=0, session_id="", created_at=0)))
    assert recorded[0] == recorded[1]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(asked=st.lists(MESSAGE, min_size=1, max_size=4), results=st.lists(JSON, max_size=3))
async def test_a_native_turn_s_record_is_written_by_the_loop_s_connection_and_gives_back_the_pool_s_rows(
    store: Store, tmp_path: Path, asked: list[dict[str, Any]], results: list[Any]
) -> None:
    """A native turn (``record_turn`` returning its message rows, which the history cache keeps) is one transaction
    of the loop's own connection: the rows it gives back and those stored are the pool's, the ids aside."""
    recorded = []
    for way in ("loop", "pool"):
        session_id, snapshot = await _new_session(store, way)
        with _written_by(store, way) as writes:
            snapshot_id, _ = await store.sessions.record_snapshot({**snapshot, "turn": 1, "data": {"a": [1, 2]}})
            turn = {"turn": 1, "query": "q?", "results": results, "answer": "a", "tokens_in": 5}
            priced = Priced(snapshot_id, {}, {"model": "m", "cost": 0.25})
            row, rows = await store.sessions.record_turn(session_id, turn, asked, priced=priced)
        assert writes() == (2 if way == "loop" else 0)  # the snapshot, then the turn
        stored = await store.sessions.turn_messages(session_id, 1)
        assert [r.id for r in rows] == [m.id for m in stored]  # in the order given, as stored
        given_back = [tuple(r)[1:] for r in rows]
        recorded.append((_recorded(tmp_path / "tda.db", session_id), row._replace(id=0, session_id="", created_at=0)))
        recorded.append(given_back)
    assert recorded[0] == recorded[2]
    assert recorded[1] == recorded[3]


async def test_a_priced_figure_sqlite_s_json_cannot_edit_is_recorded_the_pool_s_way(store: Store) -> None:
    """An infinite figure in the model call: written whole through the pool, as before (``_price``)."""
    await store.sessions.create({"id": "s", "profile_id": "p", "user_id": "u"}, "test")
    fields = {"session_id": "s", "turn": 1, "type_id": "t", "type_version": 1, "model": "m", "data": {}, "inputs": {}}
    snapshot_id, _ = await store.sessions.record_snapshot(fields)
    writes = store.db.single_writes.writes
    priced = Priced(snapshot_id, {"x": 1}, {"cost": float("inf")})
    await store.sessions.record_turn(
        "s", {"turn": 1, "query": "q"}, [{"role": "user", "content": "q"}], returning=False, priced=priced
    )
    assert store.db.single_writes.writes == writes
    assert (await store.sessions.snapshot(snapshot_id)).data == {"x": 1, "model_call": {"cost": float("inf")}}


async def test_a_turn_recorded_meanwhile_is_a_conflict_on_the_loop_s_connection_too(store: Store) -> None:
    await store.sessions.create({"id": "s", "profile_id": "p", "user_id": "u"}, "test")
    message = [{"role": "user", "content": "q"}]
    await store.sessions.record_turn("s", {"turn": 1, "query": "q"}, message, returning=False)
    with pytest.raises(Conflict, match="recorded meanwhile"):
        await store.sessions.record_turn("s", {"turn": 1, "query": "q"}, message, returning=False)
    assert len(await store.sessions.turn_messages("s", 1)) == 1
    with pytest.raises(NotFound, match="no turn 2"):
        await store.sessions.extend_turn("s", 2, {"answer": "a"}, message)


async def test_a_snapshot_stored_with_nan_is_priced_the_pool_s_way(store: Store) -> None:
    """SQLite's JSON (before its JSON5 reading) cannot read a stored NaN: the loop's transaction is rolled back and
    the pool's way prices it (it writes the data whole then), once."""
    await store.sessions.create({"id": "s", "profile_id": "p", "user_id": "u"}, "test")
    data = {"utilisation": float("nan")}
    fields = {"session_id": "s", "turn": 1, "type_id": "t", "type_version": 1, "model": "m", "data": data}
    snapshot_id, _ = await store.sessions.record_snapshot({**fields, "inputs": {}})
    message = [{"role": "user", "content": "q"}]
    priced = Priced(snapshot_id, data, {"cost": 0.5})
    await store.sessions.record_turn("s", {"turn": 1, "query": "q"}, message, returning=False, priced=priced)
    stored = (await store.sessions.snapshot(snapshot_id)).data
    assert stored["model_call"] == {"cost": 0.5}
    assert [m.content for m in await store.sessions.turn_messages("s", 1)] == ["q"]  # once


async def test_a_step_of_a_turn_that_is_not_there_prices_nothing(store: Store) -> None:
    """As the pool's transaction: the step's NotFound rolls back its snapshot's price with it."""
    await store.sessions.create({"id": "s", "profile_id": "p", "user_id": "u"}, "test")
    fields = {"session_id": "s", "turn": 2, "type_id": "t", "type_version": 1, "model": "m", "data": {"a": 1}}
    snapshot_id, _ = await store.sessions.record_snapshot({**fields, "inputs": {}})
    with pytest.raises(NotFound, match="no turn 2"):
        await store.sessions.extend_turn("s", 2, {"answer": "a"}, [], priced=Priced(snapshot_id, {}, {"cost": 1}))
    assert (await store.sessions.snapshot(snapshot_id)).data == {"a": 1}
    with pytest.raises(NotFound, match="no session"):
        await store.sessions.extend_turn("gone", 2, {"answer": "a"}, [])
