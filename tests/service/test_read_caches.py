"""Reads served from per-replica caches stay honest: a token revoked or a type saved through another replica
(another Store on the same database) is seen within a second; through this one, at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from components.context_window.session_cache import BoundedCache
from components.context_window.window_type import ContextWindowType
from tda.app import create_app
from tda.store import Store
from tda.store import types as types_store
from tda.store.components import CACHE_TTL_S as COMPONENTS_TTL
from tda.store.tokens import CACHE_TTL_S as TOKEN_TTL
from tda.store.types import CACHE_TTL_S as TYPES_TTL
from tests.service.support import FIXTURE_TYPE


@asynccontextmanager
async def elsewhere(settings) -> AsyncIterator[Store]:
    """Another replica's store on the same database."""
    other = Store.connect(settings.sqlalchemy_url)
    try:
        yield other
    finally:
        await other.close()


async def _within(seconds: float, check) -> float:
    """How long until ``check()`` holds (polling); fails the test past ``seconds``."""
    started = time.monotonic()
    while not await check():
        assert time.monotonic() - started < seconds, f"not seen within {seconds} s"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def test_a_token_revoked_on_another_replica_stops_working_within_a_second(client, svc, settings):
    assert TOKEN_TTL <= 1.0
    token, row = await svc.store.tokens.create("elsewhere", "viewer")
    headers = {"Authorization": f"Bearer {token}"}
    assert (await client.get("/v1/profiles", headers=headers)).status_code == 200  # now cached here
    async with elsewhere(settings) as other:
        await other.tokens.revoke(row.id, "test")

    async def refused() -> bool:
        return (await client.get("/v1/profiles", headers=headers)).status_code == 401

    await _within(1.0 + 0.5, refused)  # the TTL, plus this machine's slack


async def test_a_signed_in_browser_loses_access_within_a_second_of_a_revocation_elsewhere(client, svc, settings):
    token, row = await svc.store.tokens.create("browser", "viewer")
    assert (await client.post("/v1/auth/session", json={"token": token})).status_code == 200
    assert (await client.get("/v1/profiles")).status_code == 200
    async with elsewhere(settings) as other:
        await other.tokens.revoke(row.id, "test")

    async def refused() -> bool:
        return (await client.get("/v1/profiles")).status_code == 401

    await _within(1.0 + 0.5, refused)


async def test_types_saved_elsewhere_are_listed_within_a_second_and_saved_here_at_once(client, admin, svc, settings):
    assert TYPES_TTL <= 1.0
    listed = await (await client.get("/v1/context-window-types", headers=admin)).get_json()
    assert "fixture" not in {t["id"] for t in listed["types"]}
    r = await client.post("/v1/context-window-types", json=FIXTURE_TYPE, headers=admin)
    assert r.status_code == 201
    listed = await (await client.get("/v1/context-window-types", headers=admin)).get_json()
    fixture = next(t for t in listed["types"] if t["id"] == "fixture")
    assert fixture["version"] == 1 and fixture["etag"] == r.headers["ETag"]

    async with elsewhere(settings) as other:
        saved = await other.types.update(
            (await other.types.get("fixture")).type.model_copy(update={"name": "Renamed elsewhere"}), 1, "test"
        )

    async def seen() -> bool:
        body = await (await client.get("/v1/context-window-types", headers=admin)).get_json()
        return any(
            t["id"] == "fixture" and t["name"] == "Renamed elsewhere" and t["version"] == 2 for t in body["types"]
        )

    await _within(1.0 + 0.5, seen)
    r = await client.get("/v1/context-window-types/fixture", headers=admin)
    assert r.headers["ETag"] == saved.etag
    # A stale If-Match is refused whatever this replica had cached: writes check the database.
    r = await client.put(
        "/v1/context-window-types/fixture", json=FIXTURE_TYPE, headers={**admin, "If-Match": '"fixture.v1"'}
    )
    assert r.status_code == 412


async def test_component_texts_saved_elsewhere_are_used_within_a_second_and_saved_here_at_once(svc, settings):
    assert COMPONENTS_TTL <= 1.0
    await svc.store.components.put("chart", {"full": "Draw charts."}, "test")
    assert await svc.store.components.texts_for(["chart", "table"]) == {"chart": {"full": "Draw charts."}}
    async with elsewhere(settings) as other:
        await other.components.put("chart", {"full": "Draw bar charts.", "light": "Charts."}, "test")
        await other.components.put("table", {"medium": "Tables."}, "test")

    async def seen() -> bool:
        return await svc.store.components.texts_for(["chart", "table"]) == {
            "chart": {"full": "Draw bar charts.", "light": "Charts."},
            "table": {"medium": "Tables."},
        }

    await _within(1.0 + 0.5, seen)
    await svc.store.components.delete("table", "test")
    assert await svc.store.components.texts_for(["chart", "table"]) == {
        "chart": {"full": "Draw bar charts.", "light": "Charts."}
    }


async def test_a_process_s_first_call_validates_no_window_type(settings, monkeypatch):
    """The current types are validated at start-up (``TDAService.startup``), not by the process's first call: it
    resolved its profile's type by validating every stored one (~4 ms of a resent chat's first call, session 55)."""
    monkeypatch.setattr(types_store, "_PARSED", BoundedCache(4096))  # as in a new process: none parsed yet
    validated: list[Any] = []
    validate = ContextWindowType.model_validate

    def counted(data: Any, **kwargs: Any) -> ContextWindowType:
        validated.append(data)
        return validate(data, **kwargs)

    app = create_app(settings, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with app.test_app() as running:
        token, _ = await running.app.extensions["tda"].store.tokens.create("first-call", "admin")
        headers = {"Authorization": f"Bearer {token}"}
        monkeypatch.setattr(ContextWindowType, "model_validate", counted)
        chat = {"model": "tda", "messages": [{"role": "user", "content": "What is a token?"}]}
        r = await running.test_client().post("/v1/chat/completions", json=chat, headers=headers)
        assert r.status_code == 200, await r.get_data()
    assert validated == []
