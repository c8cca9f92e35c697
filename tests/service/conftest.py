"""A real app per test on a fresh SQLite file (copied from a migrated, seeded template), with fixture modules."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tda.app import create_app
from tda.builtins import module_registry
from tda.config import Settings
from tda.db import upgrade
from tda.service import TDAService
from tda.store import Store
from tests.service.fake_upstream import FakeUpstream, fake_upstream
from tests.service.served_app import serving
from tests.service.support import BOOM, ECHO, FIXTURE_TYPE, ScriptedModel, Served, write_module


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database as a fresh service leaves it at start-up: migrated, the shipped types seeded (once per worker
    rather than in every test's start-up, which then finds them there and seeds nothing)."""
    path = tmp_path_factory.mktemp("template") / "tda.db"
    url = f"sqlite+aiosqlite:///{path}"
    upgrade(url)
    asyncio.run(_seed_shipped_types(url))
    return path


async def _seed_shipped_types(url: str) -> None:
    store = Store.connect(url)
    try:  # the types TDAService.startup seeds: the built-in modules' and installed packs' (no user module ships one)
        await store.types.seed_defaults(types=module_registry().load().window_types())
    finally:
        await store.close()


@pytest.fixture
def modules_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "user_modules"
    write_module(folder, "fixture_echo", "Echo", ECHO, defaults={"priority": 90, "target_pct": 60})
    write_module(folder, "fixture_boom", "Boom", BOOM)
    return folder


@pytest.fixture
def settings(tmp_path: Path, modules_dir: Path, template_db: Path) -> Settings:
    shutil.copy(template_db, tmp_path / "tda.db")
    return Settings(
        data_dir=tmp_path,
        modules_dir=modules_dir,
        module_roots=(tmp_path,),  # tests install modules they write under tmp_path
        mock_model=True,
        module_timeout_s=10.0,  # no module times out because the machine is busy (timeouts: tests/test_isolation.py)
        embedder="hashing",
    )


@pytest.fixture
async def test_app(settings: Settings) -> AsyncIterator[Any]:
    app = create_app(settings, migrate=False, warm_up_llm=False, warm_up_knowledge=False, heartbeat_s=0.2)
    async with app.test_app() as running:
        yield running


@pytest.fixture
def svc(test_app: Any) -> TDAService:
    return test_app.app.extensions["tda"]


@pytest.fixture
def client(test_app: Any) -> Any:
    return test_app.test_client()


async def _bearer(svc: TDAService, role: str) -> dict[str, str]:
    token, _ = await svc.store.tokens.create(f"test-{role}", role)
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
async def admin(svc: TDAService) -> dict[str, str]:
    return await _bearer(svc, "admin")


@pytest.fixture
async def viewer(svc: TDAService) -> dict[str, str]:
    return await _bearer(svc, "viewer")


@pytest.fixture
async def session_id(client: Any, admin: dict[str, str]) -> str:
    """A profile bound to the fixture type and a session with two turns of history."""
    r = await client.post("/v1/context-window-types", json=FIXTURE_TYPE, headers=admin)
    assert r.status_code == 201, await r.get_json()
    r = await client.post(
        "/v1/profiles",
        json={
            "id": "p1",
            "type": "llm_only",
            "context_window_type_id": "fixture",
            "system_prompt": "You answer briefly.",
        },
        headers=admin,
    )
    assert r.status_code == 201, await r.get_json()
    r = await client.post("/v1/sessions", json={"id": "s1", "profile_id": "p1"}, headers=admin)
    assert r.status_code == 201, await r.get_json()
    history = [
        {"role": "user", "content": "What is a context window?", "turn": 1},
        {"role": "assistant", "content": "The tokens a model reads in one call.", "turn": 1},
    ]
    r = await client.post("/v1/sessions/s1/messages", json={"messages": history}, headers=admin)
    assert r.status_code == 201, await r.get_json()
    return "s1"


@pytest.fixture
async def served(settings: Settings) -> AsyncIterator[Served]:
    model = ScriptedModel()
    app = create_app(settings, llm=model.llm, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with serving(app) as (svc, base_url, token):
        target = Served(svc, model, base_url, token)
        try:
            yield target
        finally:
            for client in target.clients:
                await client.close()


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    """A fake OpenAI-compatible (and Anthropic) upstream on 127.0.0.1 that records every request."""
    with fake_upstream() as fake:
        yield fake


@pytest.fixture
def live(settings: Settings) -> Settings:
    """The test settings with the mock model off: turns call an upstream."""
    return dataclasses.replace(settings, mock_model=False)
