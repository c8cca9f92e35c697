"""Migrations match the models; the server commands work end to end on a fresh data folder."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from tda.cli import main
from tda.models import Base


def test_migrations_produce_exactly_the_models(template_db: Path):
    engine = create_engine(f"sqlite:///{template_db}")
    with engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    engine.dispose()
    assert differences == []  # a model changed without a migration otherwise


def test_a_chat_call_finds_the_turn_its_conversation_opened_by_index(template_db: Path):
    """``call_state`` (every gateway call with a session) looks its key up in an index, not through every turn of
    the session newest first: each row's request_key lies past its answer and results (~16 ms at 1,000 turns)."""
    from tda.store.sessions import CALL_STATE

    engine = create_engine(f"sqlite:///{template_db}")
    query = CALL_STATE.params(session_id="s", request_key="k").compile(engine, compile_kwargs={"literal_binds": True})
    with engine.connect() as connection:
        plan = " ".join(row[-1] for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {query}"))
    engine.dispose()
    assert "INDEX ix_turns_request (session_id=? AND request_key=?)" in plan and "TEMP B-TREE" not in plan


def test_db_upgrade_tokens_and_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("TDA_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("TDA_MODULES_DIR", str(tmp_path / "modules"))
    monkeypatch.setenv("TDA_EMBEDDER", "hashing")
    assert main(["db", "upgrade"]) == 0
    assert (tmp_path / "var" / "tda.db").is_file()
    assert main(["tokens", "create", "--role", "viewer", "--name", "ci"]) == 0
    token = capsys.readouterr().out.strip().splitlines()[-1]
    assert token.startswith("tda_")
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    demo_token = out.strip().splitlines()[-1].split()[-1]
    assert "documents in collection 'demo'" in out and " 0 chunks" not in out
    assert main(["demo"]) == 0  # idempotent; the previous demo token is revoked
    assert "(0 chunks embedded" in capsys.readouterr().out  # unchanged docs are not embedded again
    assert main(["tokens", "list"]) == 0
    listing = capsys.readouterr().out
    assert re.search(r"viewer +active +default +ci", listing) and re.search(r"revoked +default +demo-admin", listing)
    assert main(["tokens", "revoke", "999"]) == 2

    from tda.store import Store

    async def check() -> None:
        store = Store.connect(f"sqlite+aiosqlite:///{tmp_path / 'var' / 'tda.db'}")
        try:
            assert await store.tokens.authenticate(demo_token) is None
            assert len(await store.types.all()) == 4
            assert {p.type for p in await store.profiles.all()} == {"tool_enabled", "llm_only", "rag_focused", "genie"}
            assert len((await store.sessions.load("demo")).turns) == 4
        finally:
            await store.close()

    asyncio.run(check())


def test_snapshot_ids_migration_keeps_the_data_and_the_turn_links(tmp_path: Path):
    """0006 rebuilds SQLite's snapshots table with AUTOINCREMENT: rows, ids and turns.snapshot_id all survive
    (foreign keys stay on, as the app runs), and an id freed by a deleted session is not handed out again."""
    import sqlite3

    from tda.db import upgrade

    path = tmp_path / "tda.db"
    upgrade(f"sqlite+aiosqlite:///{path}", "0005")
    db = sqlite3.connect(path)
    db.execute("PRAGMA foreign_keys=ON")
    now = "2026-11-25 20:00:00"
    db.execute(
        "INSERT INTO profiles (id, name, type, system_prompt, tools, components, knowledge_collections, created_at, "
        "updated_at) VALUES ('p', '', 'llm_only', '', '[]', '[]', '[]', ?, ?)",
        (now, now),
    )
    for sid in ("keep", "drop"):
        db.execute(
            "INSERT INTO sessions (id, profile_id, user_id, title, created_at, updated_at) "
            "VALUES (?, 'p', 'u', '', ?, ?)",
            (sid, now, now),
        )
    for snap_id, sid in ((1, "keep"), (2, "keep"), (3, "drop")):
        db.execute(
            "INSERT INTO snapshots (id, session_id, turn, type_id, type_version, model, data, inputs, created_at) "
            "VALUES (?, ?, ?, 't', 1, 'm', ?, '{}', ?)",
            (snap_id, sid, snap_id, f'{{"n": {snap_id}}}', now),
        )
        db.execute(
            "INSERT INTO turns (session_id, turn, query, plan, answer, outcome, results, summary, tokens_in, "
            "tokens_out, valid, model, snapshot_id, created_at) VALUES (?, ?, 'q', '', '', 'success', '[]', '', "
            "0, 0, 1, 'm', ?, ?)",
            (sid, snap_id, snap_id, now),
        )
    db.commit()
    db.close()

    upgrade(f"sqlite+aiosqlite:///{path}")

    db = sqlite3.connect(path)
    db.execute("PRAGMA foreign_keys=ON")
    assert "AUTOINCREMENT" in db.execute("SELECT sql FROM sqlite_master WHERE name = 'snapshots'").fetchone()[0]
    assert db.execute("SELECT id, session_id, data FROM snapshots ORDER BY id").fetchall() == [
        (1, "keep", '{"n": 1}'),
        (2, "keep", '{"n": 2}'),
        (3, "drop", '{"n": 3}'),
    ]
    assert db.execute("SELECT turn, snapshot_id FROM turns ORDER BY turn").fetchall() == [(1, 1), (2, 2), (3, 3)]
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    assert {r[1] for r in db.execute("PRAGMA index_list('snapshots')")} >= {"ix_snapshots_session"}
    assert not db.execute("SELECT name FROM sqlite_master WHERE name LIKE '\\_%' ESCAPE '\\'").fetchall()
    db.execute("DELETE FROM sessions WHERE id = 'drop'")  # cascades to its snapshot and turn
    assert db.execute("SELECT count(*) FROM turns").fetchone() == (2,)
    db.execute(
        "INSERT INTO snapshots (session_id, turn, type_id, type_version, model, data, inputs, created_at) "
        "VALUES ('keep', 3, 't', 1, 'm', '{}', '{}', ?)",
        (now,),
    )
    assert db.execute("SELECT max(id) FROM snapshots").fetchone() == (4,)
    db.close()
