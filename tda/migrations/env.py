"""Alembic environment: runs migrations on the async engine for the URL the caller passed in."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection

from tda.db import LOCK_NAMESPACE, create_engine
from tda.models import Base

target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            # Replicas starting together migrate one after another: the next sees the version the first wrote.
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:namespace, hashtext('migrations'))"), {"namespace": LOCK_NAMESPACE}
            )
        context.run_migrations()


async def _run_online(url: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
    finally:
        await engine.dispose()


def main() -> None:
    url = context.config.attributes.get("url") or context.config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database URL: pass one in the Alembic config's attributes or sqlalchemy.url")
    if context.is_offline_mode():
        context.configure(url=url, target_metadata=target_metadata, literal_binds=True)
        with context.begin_transaction():
            context.run_migrations()
    else:
        asyncio.run(_run_online(url))


main()
