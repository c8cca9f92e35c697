"""Migrations match the models; the server commands work end to end on a fresh data folder."""

from __future__ import annotations

import asyncio
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
    assert "viewer  active   ci" in listing and "revoked  demo-admin" in listing
    assert main(["tokens", "revoke", "999"]) == 2

    from tda.store import Store

    async def check() -> None:
        store = Store.connect(f"sqlite+aiosqlite:///{tmp_path / 'var' / 'tda.db'}")
        try:
            assert await store.tokens.authenticate(demo_token) is None
            assert len(await store.types.list()) == 4
            assert {p.type for p in await store.profiles.list()} == {"tool_enabled", "llm_only", "rag_focused", "genie"}
            assert len((await store.sessions.load("demo")).turns) == 4
        finally:
            await store.close()

    asyncio.run(check())
