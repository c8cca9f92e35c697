"""The database: an async engine, a session factory, one write lock for SQLite, and alembic upgrades."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from .errors import Conflict

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # Foreign keys enforce cascades; WAL lets readers (SSE resume, GETs) run beside the writer.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _ensure_sqlite_folder(url: str) -> None:
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)


def create_engine(url: str) -> AsyncEngine:
    is_sqlite = make_url(url).get_backend_name() == "sqlite"
    if is_sqlite:
        _ensure_sqlite_folder(url)
    engine = create_async_engine(url)
    if is_sqlite:
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


class Database:
    """Engine + sessions. ``write()`` is one transaction; on SQLite, writers queue on a lock instead of
    failing with "database is locked" when two transactions upgrade their read locks at once."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = create_engine(url)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        self._write_lock = asyncio.Lock() if self.engine.dialect.name == "sqlite" else None

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        async with self.sessions() as session:
            yield session

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        """One transaction: committed when the block ends, rolled back entirely if it raises.

        A constraint violation here means another writer got there first (the checks before it passed):
        on PostgreSQL, without the SQLite lock, two creates of one id race. Answered as a conflict."""
        lock = self._write_lock or contextlib.nullcontext()
        try:
            async with lock, self.sessions() as session, session.begin():
                yield session
        except IntegrityError as exc:
            raise Conflict(f"a concurrent change conflicted with this one; reload and retry ({exc.orig})") from None

    async def close(self) -> None:
        await self.engine.dispose()


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
