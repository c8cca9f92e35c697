"""SQLite for SQLAlchemy's aiosqlite dialect, run on the event loop's own thread.

aiosqlite runs every call (cursor, execute, fetch, close, commit) on a thread of its own and hands the result
back: about ten hops per statement, each waking a thread and the loop. tda's statements are index reads and
short writes that SQLite answers in microseconds, so the hops cost more than the work: inline, a turn's
session load took 3.4 ms instead of 6.2 and its record 4.1 instead of 7.1 (the store called directly, on
bench/service_bench.py's data).

The one wait that could block the loop is another process holding the write lock (a CLI command, a backup).
SQLite is told not to wait (``busy_timeout=0``); a locked database is retried after ``asyncio.sleep`` for up
to ``BUSY_TIMEOUT_S``, so every stream keeps being served meanwhile."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from sqlalchemy.dialects.sqlite.aiosqlite import SQLiteDialect_aiosqlite
from sqlalchemy.engine import Dialect, make_url

BUSY_TIMEOUT_S = 10.0
"""How long a statement waits for another process's write lock before it fails (as busy_timeout did)."""

BIG_COMMIT_ROWS = 2_000
"""Rows a transaction changed past which its commit goes to a worker thread (a turn's own writes change a few)."""

OFF_LOOP_ROWS = 100
"""An executemany of more rows than this runs in a worker thread (a long history's batches of message rows)."""

T = TypeVar("T")


async def _unlocked(call: Callable[..., T], *args: Any, off_loop: bool = False) -> T:
    """``call(*args)``, retried while another connection holds the lock, sleeping between tries. It lets the loop
    run what is ready first, as a hop to a thread did: a turn's statements are where the streams it has just
    woken with its snapshot get their turn (without, SSE p99 over 1,000 subscribers rose from 97 to 143 ms).
    ``off_loop``: in a worker thread (sqlite3 lets go of the GIL while SQLite works)."""
    await asyncio.sleep(0)
    deadline, delay = time.monotonic() + BUSY_TIMEOUT_S, 0.001
    while True:
        try:
            return await asyncio.to_thread(call, *args) if off_loop else call(*args)
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)


class Cursor:
    """aiosqlite's cursor interface over a sqlite3 cursor."""

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    async def __aenter__(self) -> Cursor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._cursor.close()

    async def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Cursor:
        await _unlocked(self._cursor.execute, sql, parameters)
        return self

    async def executemany(self, sql: str, parameters: Iterable[Sequence[Any]]) -> Cursor:
        rows = list(parameters)  # a list: a retry re-reads it whole
        await _unlocked(self._cursor.executemany, sql, rows, off_loop=len(rows) > OFF_LOOP_ROWS)
        return self

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        return self._cursor.fetchmany(size or self._cursor.arraysize)

    async def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    async def close(self) -> None:
        self._cursor.close()

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    @property
    def arraysize(self) -> int:
        return self._cursor.arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._cursor.arraysize = value


class _RunNow:
    """Stands in for aiosqlite's queue to its thread (SQLAlchemy sets the isolation level through it)."""

    @staticmethod
    def put_nowait(item: tuple[asyncio.Future[Any], Callable[[], Any]]) -> None:
        future, function = item
        try:
            future.set_result(function())
        except Exception as exc:
            future.set_exception(exc)


class Connection:
    """aiosqlite's connection interface (what SQLAlchemy's adapter uses) over a sqlite3 connection."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._conn = connection
        self._connection: sqlite3.Connection | None = connection
        self._tx = _RunNow()
        self._committed = connection.total_changes
        """``total_changes`` when the last transaction ended: how many rows the open one changed is the difference."""

    @property
    def isolation_level(self) -> str | None:
        return self._conn.isolation_level

    def cursor(self) -> Cursor:
        return Cursor(self._conn.cursor())

    async def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Cursor:
        return await self.cursor().execute(sql, parameters)

    async def commit(self) -> None:
        """A transaction that changed many rows is committed in a worker thread: writing a 100,000-message turn's
        pages to the WAL took ~35 ms on the loop (150-200 ms on a loaded machine), every other request waiting."""
        big = self._conn.total_changes - self._committed > BIG_COMMIT_ROWS
        await _unlocked(self._conn.commit, off_loop=big)
        self._committed = self._conn.total_changes

    async def rollback(self) -> None:
        self._conn.rollback()
        self._committed = self._conn.total_changes

    async def create_function(self, *args: Any, **kwargs: Any) -> None:
        self._conn.create_function(*args, **kwargs)

    async def close(self) -> None:
        self.stop()

    def stop(self) -> None:
        if self._connection is not None:
            self._connection = None
            self._conn.close()


def creator(url: str) -> Callable[[], Any]:
    """An ``async_creator`` for ``create_async_engine``: connections to ``url`` as the dialect would open them."""
    args, kwargs = SQLiteDialect_aiosqlite().create_connect_args(make_url(url))

    async def connect() -> Connection:
        (database,) = args  # the dialect passes the file name alone, the rest as keywords
        return Connection(sqlite3.connect(database, **{**kwargs, "timeout": 0, "check_same_thread": False}))

    return connect


class _OwnConnection:
    """One sqlite3 connection of the event loop's own (opened at first use, in autocommit: ``PRAGMAS`` set), and the
    statements it runs, each compiled once for its parameters' names (held with the statement: its id is no other's)."""

    PRAGMAS: tuple[str, ...] = ()

    def __init__(self, database: str, dialect: Dialect) -> None:
        self.database, self.dialect = database, dialect
        self._connection: sqlite3.Connection | None = None
        self._compiled: dict[tuple[int, frozenset[str]], tuple[Any, Compiled]] = {}

    def _open(self) -> sqlite3.Connection:
        if self._connection is None:
            connection = sqlite3.connect(self.database, isolation_level=None, timeout=0, check_same_thread=False)
            for pragma in self.PRAGMAS:
                connection.execute(f"PRAGMA {pragma}")
            self._connection = connection
        return self._connection

    def compiled(self, statement: Any, names: Iterable[str]) -> Compiled:
        """``statement`` compiled for parameters named ``names``, once."""
        key = (id(statement), frozenset(names))
        found = self._compiled.get(key)
        if found is None:
            found = self._compiled[key] = (statement, Compiled(statement, tuple(key[1]), self.dialect))
        return found[1]

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class LoopReader(_OwnConnection):
    """The few reads every session call makes (its session's row, where the call goes), run on one sqlite3
    connection of the loop's own, by statements compiled once. Through a pooled connection each cost ~0.2 ms of
    checkout, execution context and close around ~10 us of SQLite's work (a session's chat call made two: ~0.5 ms
    of its ~15). The connection reads in autocommit, each statement its own read transaction (the newest commit,
    as a pooled connection's first read sees it), and may not write (``query_only``). A statement and its rows go
    through without a wait between them, so calls on the loop never interleave on it."""

    PRAGMAS = ("query_only=ON",)

    def __init__(self, database: str, dialect: Dialect) -> None:
        super().__init__(database, dialect)
        self.reads = 0
        """How many statements it ran (tests: which reads went this way)."""

    async def first(self, statement: Any, params: dict[str, Any]) -> tuple[Any, ...] | None:
        """The first row of ``statement`` (a SELECT built once, its parameters named by ``params``' keys), its
        columns as SQLAlchemy's row holds them; None when there is none."""
        self.reads += 1
        compiled = self.compiled(statement, params)
        row = await _unlocked(self._first, compiled, params)
        return compiled.row(row) if row is not None else None

    def _first(self, compiled: Compiled, params: dict[str, Any]) -> Any:
        return self._open().execute(compiled.sql, compiled.arguments(params)).fetchone()

    async def all(self, statement: Any, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Every row of ``statement``, as ``first`` reads the first."""
        self.reads += 1
        compiled = self.compiled(statement, params)
        rows = await _unlocked(self._all, compiled, params)
        return [compiled.row(row) for row in rows]

    def _all(self, compiled: Compiled, params: dict[str, Any]) -> list[Any]:
        return self._open().execute(compiled.sql, compiled.arguments(params)).fetchall()


class LoopWriter(_OwnConnection):
    """A session call's own small transactions (its snapshot while the model answers, then its record) on one sqlite3
    connection of the loop's own, by statements compiled once: BEGIN IMMEDIATE, the statements, COMMIT, run
    through without a wait (so nothing of the loop interleaves), the whole retried while another process holds the
    lock. The caller holds the database's write lock (``Database.write_here``), as the pool's writers do."""

    PRAGMAS = ("foreign_keys=ON", "journal_mode=WAL", "synchronous=NORMAL")  # as the pool's (tda/db.py)

    def __init__(self, database: str, dialect: Dialect) -> None:
        super().__init__(database, dialect)
        self.writes = 0
        """How many transactions it committed or tried (tests: which writes went this way)."""

    async def transaction(self, work: Callable[[Statements], T]) -> T:
        """``work`` run in one transaction: committed when it returns, rolled back entirely if it raises."""
        self.writes += 1
        return await _unlocked(self._transaction, work)

    def _transaction(self, work: Callable[[Statements], T]) -> T:
        connection = self._open()
        connection.execute("BEGIN IMMEDIATE")
        try:
            done = work(Statements(connection, self))
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        return done


class Statements:
    """What a ``LoopWriter`` transaction runs its statements by (each built once, as module constants are)."""

    def __init__(self, connection: sqlite3.Connection, writer: LoopWriter) -> None:
        self._connection, self._writer = connection, writer

    def first(self, statement: Any, params: dict[str, Any]) -> tuple[Any, ...] | None:
        """The statement's first row (RETURNING, or a SELECT's), converted as SQLAlchemy's row holds it."""
        compiled = self._writer.compiled(statement, params)
        row = self._connection.execute(compiled.sql, compiled.arguments(params)).fetchone()
        return compiled.row(row) if row is not None else None

    def many(self, statement: Any, rows: Sequence[dict[str, Any]]) -> None:
        """The statement once per row (rows that name the same columns)."""
        if rows:
            compiled = self._writer.compiled(statement, rows[0])
            self._connection.executemany(compiled.sql, [compiled.arguments(row) for row in rows])


class Compiled:
    """A statement compiled once for SQLite, as SQLAlchemy runs it: its SQL, its parameters in order (the literals
    it holds filled in, an INSERT's columns not named by ``names`` given their Python defaults, each value converted
    by its type: a dict made JSON, a datetime text) and its columns' result conversions (a date's text made a
    datetime)."""

    def __init__(self, statement: Any, names: Sequence[str], dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect, column_keys=list(names))
        bound = compiled.construct_params(dict.fromkeys(names, ""))
        self.sql = compiled.string
        self._order = tuple(compiled.positiontup or ())
        self._defaults = {c.key: c.default for c in getattr(compiled, "insert_prefetch", ()) if c.key not in names}
        if getattr(compiled, "update_prefetch", None):
            raise TypeError("an UPDATE whose columns have Python-side update defaults: not one for a LoopWriter")
        self._fixed = {key: value for key, value in bound.items() if key not in names and key not in self._defaults}
        binds = compiled.binds.values()
        converting = {bind.key: bind.type.dialect_impl(dialect).bind_processor(dialect) for bind in binds}
        self._converters = tuple(converting.get(key) for key in self._order)
        columns: Any = getattr(statement, "selected_columns", None)  # a SELECT's; else an INSERT's RETURNING's
        if columns is None:
            columns = getattr(statement, "exported_columns", ())
        processors = [c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns]
        self._processors = tuple(processors) if any(processors) else None

    def arguments(self, params: dict[str, Any]) -> list[Any]:
        values = (self._value(key, params) for key in self._order)
        return [v if convert is None else convert(v) for convert, v in zip(self._converters, values, strict=True)]

    def _value(self, key: str, params: dict[str, Any]) -> Any:
        if key in params:
            return params[key]
        default = self._defaults.get(key)
        if default is None:
            return self._fixed[key]
        return default.arg(None) if default.is_callable else default.arg  # SQLAlchemy's wrapper takes a context

    def row(self, values: Sequence[Any]) -> tuple[Any, ...]:
        if self._processors is None:
            return tuple(values)
        return tuple(p(v) if p is not None else v for p, v in zip(self._processors, values, strict=True))
