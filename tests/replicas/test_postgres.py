"""PostgreSQL as the store: migrations up and down, replicas migrating at once, and the cross-process
guarantees (compare-and-swap on type versions, advisory locks) against a real server."""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys

import asyncpg
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text

from tda.db import LOCK_NAMESPACE, Database, alembic_config, create_engine, upgrade
from tda.demo import seed_demo
from tda.errors import PreconditionFailed
from tda.models import Base
from tda.store import Store
from tests.replicas.servers import ROOT, Backing
from tests.service.test_history_vectors import check_the_vector_table

_names = itertools.count()


def fresh_database(backing: Backing) -> str:
    return backing.postgres.create_database(f"t{next(_names)}")


async def _tables_and_differences(url: str) -> tuple[set[str], list[object]]:
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            tables = await connection.run_sync(lambda c: set(inspect(c).get_table_names()))
            differences = await connection.run_sync(
                lambda c: compare_metadata(MigrationContext.configure(c), Base.metadata)
            )
    finally:
        await engine.dispose()
    return tables, differences


async def test_migrations_upgrade_downgrade_and_upgrade_again_on_postgresql(backing: Backing) -> None:
    url = fresh_database(backing)
    await asyncio.to_thread(upgrade, url)
    tables, differences = await _tables_and_differences(url)
    assert tables == set(Base.metadata.tables) | {"alembic_version"}
    assert differences == []  # the migrations build exactly the models on PostgreSQL too

    await asyncio.to_thread(command.downgrade, alembic_config(url), "base")
    tables, _ = await _tables_and_differences(url)
    assert tables == {"alembic_version"}

    await asyncio.to_thread(upgrade, url)
    store = Store.connect(url)
    try:
        assert await store.types.seed_defaults() > 0  # the schema works after the round trip
    finally:
        await store.close()


def test_replicas_starting_together_migrate_one_after_another(backing: Backing) -> None:
    url = fresh_database(backing)
    env = {**os.environ, "TDA_DATABASE_URL": url}
    command = [sys.executable, "-m", "tda.cli", "db", "upgrade"]
    procs = [subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errors


async def test_type_saves_from_two_processes_with_one_etag_let_exactly_one_win(backing: Backing) -> None:
    url = fresh_database(backing)
    await asyncio.to_thread(upgrade, url)
    replicas = [Store.connect(url) for _ in range(2)]  # two engines, two pools: as two processes
    try:
        await replicas[0].types.seed_defaults()
        current = await replicas[1].types.default()
        attempts = [
            replicas[i % 2].types.update(current.type.model_copy(update={"name": f"save {i}"}), current.version, "t")
            for i in range(8)
        ]
        results = await asyncio.gather(*attempts, return_exceptions=True)
        winners = [r for r in results if not isinstance(r, BaseException)]
        assert len(winners) == 1, results
        assert all(isinstance(r, PreconditionFailed) for r in results if r not in winners)
        after = await replicas[0].types.get(current.id)
        assert (after.version, after.type.name) == (current.version + 1, winners[0].type.name)
    finally:
        for store in replicas:
            await store.close()


async def test_an_advisory_lock_is_held_across_processes_and_released_when_its_holder_dies(backing: Backing) -> None:
    url = fresh_database(backing)
    one, two = Database(url), Database(url)
    inside, overlaps = 0, 0

    async def critical(db: Database) -> None:
        nonlocal inside, overlaps
        async with db.exclusive("session:x"):
            inside += 1
            overlaps += inside > 1
            await asyncio.sleep(0.02)
            inside -= 1

    try:
        await asyncio.gather(*(critical(db) for db in [one, two] * 5))
        assert overlaps == 0
        # A holder whose connection dies (as when its process is killed) releases the lock at once.
        holder = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
        try:
            await holder.execute("BEGIN")
            await holder.execute("SELECT pg_advisory_xact_lock($1, hashtext('session:y'))", LOCK_NAMESPACE)
            waiter = asyncio.create_task(critical_y(two))
            await asyncio.sleep(0.3)
            assert not waiter.done()
            async with one.read() as s:
                await s.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": holder.get_server_pid()})
            await asyncio.wait_for(waiter, 10)
        finally:
            holder.terminate()
    finally:
        await one.close()
        await two.close()


async def critical_y(db: Database) -> None:
    async with db.exclusive("session:y"):
        pass


async def test_history_pages_and_what_was_appended_since_read_in_order_on_postgresql(backing: Backing) -> None:
    """The history's reads (prebuilt statements comparing (turn, id) with 64-bit parameters) on a real server:
    pages newest first that continue from their cursor, and the messages after a cursor, oldest first."""
    url = fresh_database(backing)
    await asyncio.to_thread(upgrade, url)
    store = Store.connect(url)
    try:
        await seed_demo(store)
        await store.sessions.create({"id": "paged", "profile_id": "demo-tools"}, "test")
        for turn in range(1, 6):
            messages = [{"role": "user", "content": f"q{turn}"}, {"role": "assistant", "content": f"a{turn}"}]
            await store.sessions.record_turn("paged", {"turn": turn, "query": f"q{turn}"}, messages)
        written = [f"{kind}{turn}" for turn in range(1, 6) for kind in ("q", "a")]
        read, cursor = [], None
        while page := await store.sessions.message_page("paged", cursor, 3):
            read += [m.content for m in page]
            cursor = (page[-1].turn, page[-1].id)
        assert read == written[::-1]
        fourth = (await store.sessions.message_page("paged", None, 7))[-1]  # the 4th message written
        after = await store.sessions.messages_after("paged", (fourth.turn, fourth.id))
        assert [m.content for m in after] == written[4:]
        assert all(m.token_counts for m in after)  # stored JSON read back as written
    finally:
        await store.close()


async def test_nul_characters_are_refused_on_postgresql_as_on_sqlite(backing: Backing, tmp_path) -> None:
    """PostgreSQL cannot store NUL in text: a NUL used to surface as a 500, after a turn's snapshot was written."""
    from tda.app import create_app
    from tda.config import Settings
    from tests.service.support import check_nul_is_refused_before_anything_is_written

    url = fresh_database(backing)
    await asyncio.to_thread(upgrade, url)
    settings = Settings(data_dir=tmp_path, database_url=url, modules_dir=tmp_path / "modules", embedder="hashing")
    app = create_app(settings, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with app.test_app() as running:
        token, _ = await app.extensions["tda"].store.tokens.create("nul", "admin")
        client = running.test_client()
        await check_nul_is_refused_before_anything_is_written(client, {"Authorization": f"Bearer {token}"})


async def test_a_chat_clients_tool_loop_is_recorded_whole_on_postgresql(backing: Backing, tmp_path) -> None:
    """A session call's Core statements on a real server (the step's UPDATE of the turn's JSON results, the call's
    state read, the turn's messages), as on SQLite (tests/service/test_gateway_database.py)."""
    from tda.app import create_app
    from tda.config import Settings
    from tests.service.support import ScriptedModel, check_a_tool_loop_is_recorded_whole

    url = fresh_database(backing)
    await asyncio.to_thread(upgrade, url)
    settings = Settings(data_dir=tmp_path, database_url=url, modules_dir=tmp_path / "modules", embedder="hashing")
    model = ScriptedModel()
    app = create_app(settings, llm=model.llm, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with app.test_app() as running:
        token, _ = await app.extensions["tda"].store.tokens.create("loop", "admin")
        await check_a_tool_loop_is_recorded_whole(running.test_client(), {"Authorization": f"Bearer {token}"}, model)


async def test_projects_are_isolated_on_postgresql(backing: Backing, tmp_path) -> None:
    """The two-project probe suite on a real server: the store's project filter (an ORM hook reading the request's
    context inside SQLAlchemy's greenlet) holds on asyncpg as on SQLite."""
    from tda.app import create_app
    from tda.config import Settings
    from tests.service.support import BOOM, ECHO, write_module
    from tests.service.test_projects import build_two, check_no_probe_succeeds

    write_module(tmp_path / "modules", "fixture_echo", "Echo", ECHO, defaults={"priority": 90, "target_pct": 60})
    write_module(tmp_path / "modules", "fixture_boom", "Boom", BOOM)
    url = fresh_database(backing)
    await asyncio.to_thread(upgrade, url)
    settings = Settings(
        data_dir=tmp_path, database_url=url, modules_dir=tmp_path / "modules", embedder="hashing", mock_model=True
    )
    app = create_app(settings, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with app.test_app() as running:
        client = running.test_client()
        alpha, beta = await build_two(app.extensions["tda"], client)
        await check_no_probe_succeeds(client, alpha, beta)


async def test_history_vectors_on_postgresql(backing: Backing) -> None:
    """Recall's vectors table (``ON CONFLICT DO NOTHING`` inserts, the cascade) on a real server, as on SQLite."""
    await check_the_vector_table(fresh_database(backing))
