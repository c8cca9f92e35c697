"""The database: an async engine, a session factory, one write lock for SQLite, cross-replica locks on
PostgreSQL, and alembic upgrades."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar, cast

from sqlalchemy import CursorResult, Result, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from . import inline_sqlite
from .errors import Conflict, DiskFull, is_disk_full

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # Foreign keys enforce cascades; WAL lets readers (SSE resume, GETs) run beside the writer. A locked
    # database is waited for by inline_sqlite, without blocking the loop, so SQLite itself must not wait.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=0")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _ensure_sqlite_folder(url: str) -> None:
    """The database's folder (0700) and file (0600) when new: they hold every session, and token hashes. SQLite
    gives its -wal and -shm files the database file's mode."""
    database = make_url(url).database
    if database and database != ":memory:" and not database.startswith("file:"):
        path = Path(database)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))


POSTGRES_POOL = {"pool_size": 10, "max_overflow": 10, "pool_pre_ping": True}
"""Per replica: short transactions (reads, writes). Turn locks have their own pool (``LOCK_POOL``)."""
LOCK_POOL = {"pool_size": 2, "max_overflow": 30, "pool_pre_ping": True}
"""Per replica: one connection per turn in flight on a distinct session, held for the whole turn. A separate
pool, so lock holders never wait for connections that other lock holders hold. With both pools, a replica
uses at most 52 connections: PostgreSQL's max_connections must be at least 52 x replicas (+ a few)."""
DISK_FULL_HOLD_S = 60.0
"""How long a write that failed for want of space keeps /readyz at 503 when no write succeeds meanwhile."""
_Closable = TypeVar("_Closable", AsyncSession, AsyncConnection)
T = TypeVar("T")
LOCK_NAMESPACE = 0x7464  # 'td': the first key of two-key advisory locks, so tda's locks collide with nobody else's


def create_engine(url: str, **pool: Any) -> AsyncEngine:
    backend = make_url(url).get_backend_name()
    is_sqlite = backend == "sqlite"
    if is_sqlite:  # run on the loop's thread: see inline_sqlite
        _ensure_sqlite_folder(url)
        pool = {**pool, "async_creator": inline_sqlite.creator(url)}
    engine = create_async_engine(url, **(pool or (POSTGRES_POOL if backend == "postgresql" else {})))
    if is_sqlite:
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


def _file_of(url: str) -> str | None:
    """The SQLite database's file, for connections of the loop's own (None: in memory, one database per
    connection, where another connection would not see the pool's)."""
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return database


class Database:
    """Engine + sessions. ``write()`` is one transaction; on SQLite, writers queue on a lock instead of
    failing with "database is locked" when two transactions upgrade their read locks at once."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = create_engine(url)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        self.is_postgres = self.engine.dialect.name == "postgresql"
        self.is_sqlite = self.engine.dialect.name == "sqlite"
        self._write_lock = asyncio.Lock() if self.is_sqlite else None
        self._lock_engine = create_engine(url, **LOCK_POOL) if self.is_postgres else None
        """Connections are opened on first use: an engine costs nothing until a turn takes a lock."""
        database = _file_of(url) if self.is_sqlite else None
        self.reader = inline_sqlite.LoopReader(database, self.engine.dialect) if database else None
        """SQLite: the reads every session call makes, on a connection of their own (tda/inline_sqlite.py)."""
        self.single_writes = inline_sqlite.LoopWriter(database, self.engine.dialect) if database else None
        """SQLite: every session call's own writes (its snapshot, its record), on a connection of theirs."""
        self.disk_full_at: float | None = None
        """When a write last failed for want of disk space (monotonic), until a write succeeds: /readyz says so."""

    def note_disk_full(self) -> None:
        self.disk_full_at = time.monotonic()

    def disk_full_for(self) -> float | None:
        """Seconds since a write failed for want of space, while no write has succeeded since and the failure is
        under ``DISK_FULL_HOLD_S`` old (with no traffic, a replica must come back to try again); else None."""
        if self.disk_full_at is None:
            return None
        age = time.monotonic() - self.disk_full_at
        return age if age < DISK_FULL_HOLD_S else None

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        async with self._closing(self.sessions()) as session:
            yield session

    @contextlib.asynccontextmanager
    async def read_rows(self) -> AsyncIterator[AsyncConnection]:
        """``read`` for Core statements only: a connection without an ORM session."""
        async with self._closing(self.engine.connect()) as connection:
            yield connection

    async def first_row(self, statement: Any, params: dict[str, Any]) -> tuple[Any, ...] | None:
        """The first row of a Core read a session call makes: on SQLite by the loop's own reader (``LoopReader``),
        else on a bare connection."""
        if self.reader is not None:
            return await self.reader.first(statement, params)
        async with self.read_rows() as c:
            found = (await c.execute(statement, params)).first()
        return tuple(found) if found is not None else None

    async def all_rows(self, statement: Any, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Every row of such a read, as ``first_row`` reads the first."""
        if self.reader is not None:
            return await self.reader.all(statement, params)
        async with self.read_rows() as c:
            return [tuple(row) for row in await c.execute(statement, params)]

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        """One transaction: committed when the block ends, rolled back entirely if it raises.

        A constraint violation here means another writer got there first (the checks before it passed):
        on PostgreSQL, without the SQLite lock, two creates of one id race. Answered as a conflict."""
        async with self._writing(), self._closing(self.sessions()) as session, session.begin():
            yield session

    @contextlib.asynccontextmanager
    async def write_rows(self) -> AsyncIterator[AsyncConnection]:
        """``write`` for Core statements only: a connection without an ORM session, whose setup and commit
        cost about 1 ms a transaction (what a turn's own writes take, inserts included)."""
        async with self._writing(), self._closing(self.engine.connect()) as connection, connection.begin():
            yield connection

    # SQLAlchemy's context managers close a session or a connection in a task of their own, shielded from the
    # caller's cancellation, so that a close that waits for its driver is never abandoned halfway. An inline SQLite
    # close never waits (tda/inline_sqlite.py: its rollback and the pool's return run through), so no cancellation
    # can land in it: it is closed here directly, without the task and the loop pass it costs (~30 us each, five to
    # seven times a session's chat call). PostgreSQL's close waits for the server: SQLAlchemy's way.

    @contextlib.asynccontextmanager
    async def _closing(self, resource: _Closable) -> AsyncIterator[_Closable]:
        if not self.is_sqlite:
            async with resource as opened:
                yield opened
            return
        opened = await resource.__aenter__()  # a connection starts here (a session has nothing to start)
        try:
            yield opened
        finally:
            await opened.close()

    @contextlib.asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        lock = self._write_lock or contextlib.nullcontext()
        try:
            async with lock:
                yield
        except IntegrityError as exc:
            raise Conflict(f"a concurrent change conflicted with this one; reload and retry ({exc.orig})") from None
        except Exception as exc:
            if not is_disk_full(exc):
                raise
            self.note_disk_full()
            raise DiskFull() from exc  # rolled back: nothing of it was written
        self.disk_full_at = None

    @contextlib.asynccontextmanager
    async def exclusive(self, key: str) -> AsyncIterator[None]:
        """Hold a lock named ``key`` across every process on this database, for as long as the block runs.

        PostgreSQL: a transaction-scoped advisory lock on a connection of its own, so it is released when
        the block ends or the process dies (the server drops its connection). SQLite serves one process, so
        callers' in-process locks suffice and this is a no-op."""
        if self._lock_engine is None:
            yield
            return
        async with self._lock_engine.connect() as connection, connection.begin():
            await advisory_xact_lock(connection, key)
            yield

    async def write_here(self, work: Callable[[inline_sqlite.Statements], T]) -> T:
        """``work``'s statements in one transaction by ``single_writes`` (SQLite), under the write lock as
        ``write``: a constraint they break is a Conflict, a full disk DiskFull."""
        assert self.single_writes is not None
        async with self._writing():
            try:
                return await self.single_writes.transaction(work)
            except sqlite3.IntegrityError as exc:
                raise Conflict(f"a concurrent change conflicted with this one; reload and retry ({exc})") from None

    async def close(self) -> None:
        for own in (self.reader, self.single_writes):
            if own is not None:
                own.close()
        await self.engine.dispose()
        if self._lock_engine is not None:
            await self._lock_engine.dispose()


async def advisory_xact_lock(connection: Any, key: str) -> None:
    """Wait for the PostgreSQL advisory lock ``key`` (hashed to 32 bits; a collision only serialises more);
    it is held until the transaction ends. On an AsyncSession or AsyncConnection alike."""
    await connection.execute(
        text("SELECT pg_advisory_xact_lock(:namespace, hashtext(:key))"), {"namespace": LOCK_NAMESPACE, "key": key}
    )


def alembic_config(url: str) -> Any:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["url"] = url  # not via set_main_option: configparser would mangle '%' in passwords
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Apply migrations (blocking; from async code call it through ``asyncio.to_thread``)."""
    from alembic import command

    if make_url(url).get_backend_name() == "sqlite":
        _ensure_sqlite_folder(url)
    command.upgrade(alembic_config(url), revision)


async def upgrade_async(url: str) -> None:
    await asyncio.to_thread(upgrade, url)


def rowcount(result: Result[Any]) -> int:
    """Rows an UPDATE or DELETE matched: ``AsyncSession.execute`` is typed as returning a ``Result``, but for those
    statements it is a ``CursorResult``, which counts them."""
    return cast(CursorResult[Any], result).rowcount
