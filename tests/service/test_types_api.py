"""/v1/context-window-types: auth, validation, ETags, exactly one default, bound profiles, versions, rollback."""

from __future__ import annotations

import copy
from typing import Any

from tda.builtins import DEFAULT_TYPES
from tests.service.support import FIXTURE_TYPE

URL = "/v1/context-window-types"


async def _get(client: Any, headers: dict[str, str], type_id: str) -> tuple[dict[str, Any], str]:
    r = await client.get(f"{URL}/{type_id}", headers=headers)
    assert r.status_code == 200
    return await r.get_json(), r.headers["ETag"]


async def test_reads_need_a_token_and_mutations_need_admin(client, viewer, admin):
    assert (await client.get(URL)).status_code == 401
    assert (await client.get(URL, headers={"Authorization": "Bearer nope"})).status_code == 401
    r = await client.get(URL, headers=viewer)
    assert r.status_code == 200
    body = await r.get_json()
    assert {t["id"] for t in body["types"]} == set(DEFAULT_TYPES) and body["default"] == "balanced"
    r = await client.post(URL, json=FIXTURE_TYPE, headers=viewer)
    assert r.status_code == 403
    assert "admin" in (await r.get_json())["message"]


async def test_create_returns_201_with_etag_and_duplicate_is_409(client, admin):
    r = await client.post(URL, json=FIXTURE_TYPE, headers=admin)
    assert r.status_code == 201
    assert r.headers["ETag"] == '"fixture.v1"'
    assert (await r.get_json())["version"] == 1
    r = await client.post(URL, json=FIXTURE_TYPE, headers=admin)
    assert r.status_code == 409


async def test_invalid_bodies_get_422_with_per_field_errors(client, admin):
    bad = copy.deepcopy(FIXTURE_TYPE)
    bad["modules"]["fixture_echo"]["target_pct"] = 140
    bad["output_reserve_pct"] = 80
    r = await client.post(URL, json=bad, headers=admin)
    assert r.status_code == 422
    locs = {e["loc"] for e in (await r.get_json())["errors"]}
    assert {"modules.fixture_echo.target_pct", "output_reserve_pct"} <= locs

    unknown = copy.deepcopy(FIXTURE_TYPE)
    unknown["modules"]["no_such_module"] = {"target_pct": 5}
    r = await client.post(URL, json=unknown, headers=admin)
    assert r.status_code == 422
    assert "no_such_module" in str((await r.get_json())["errors"])

    for body in ([1, 2], "text"):
        r = await client.post(URL, json=body, headers=admin)
        assert r.status_code == 422
    r = await client.post(URL, data="{not json", headers={**admin, "Content-Type": "application/json"})
    assert r.status_code == 400  # malformed JSON: tests/ops/test_security.py
    assert (await client.get(f"{URL}/fixture", headers=admin)).status_code == 404  # nothing half-written


async def test_put_requires_if_match_and_rejects_stale_etags(client, admin):
    body, etag = await _get(client, admin, "token_efficient")
    edit = {k: v for k, v in body.items() if k not in ("version", "updated_at", "etag")}
    edit["description"] = "edited"
    assert (await client.put(f"{URL}/token_efficient", json=edit, headers=admin)).status_code == 428
    r = await client.put(f"{URL}/token_efficient", json=edit, headers={**admin, "If-Match": etag})
    assert r.status_code == 200
    assert r.headers["ETag"] == '"token_efficient.v2"' and (await r.get_json())["description"] == "edited"
    r = await client.put(f"{URL}/token_efficient", json=edit, headers={**admin, "If-Match": etag})
    assert r.status_code == 412
    assert (await r.get_json())["current_etag"] == '"token_efficient.v2"'
    r = await client.put(
        f"{URL}/token_efficient", json={**edit, "id": "renamed"}, headers={**admin, "If-Match": '"token_efficient.v2"'}
    )
    assert r.status_code == 422 and (await r.get_json())["errors"][0]["loc"] == "id"
    no_id = {k: v for k, v in edit.items() if k != "id"}
    assert (
        await client.put(f"{URL}/missing", json=no_id, headers={**admin, "If-Match": '"missing.v1"'})
    ).status_code == 404


async def test_there_is_always_exactly_one_default(client, admin):
    r = await client.post(URL, json={**FIXTURE_TYPE, "is_default": True}, headers=admin)
    assert r.status_code == 201
    listed = (await (await client.get(URL, headers=admin)).get_json())["types"]
    assert [t["id"] for t in listed if t["is_default"]] == ["fixture"]
    _, etag = await _get(client, admin, "balanced")
    assert etag == '"balanced.v2"'  # demotion is a new version: old ETags cannot undo it silently

    fixture, etag = await _get(client, admin, "fixture")
    edit = {k: v for k, v in fixture.items() if k not in ("version", "updated_at", "etag")}
    r = await client.put(f"{URL}/fixture", json={**edit, "is_default": False}, headers={**admin, "If-Match": etag})
    assert r.status_code == 409
    r = await client.delete(f"{URL}/fixture", headers={**admin, "If-Match": etag})
    assert r.status_code == 409 and "default" in (await r.get_json())["message"]


async def test_delete_bound_type_is_409_naming_the_profiles(client, admin):
    await client.post(URL, json=FIXTURE_TYPE, headers=admin)
    for pid in ("alpha", "beta"):
        r = await client.post("/v1/profiles", json={"id": pid, "context_window_type_id": "fixture"}, headers=admin)
        assert r.status_code == 201
    r = await client.delete(f"{URL}/fixture", headers={**admin, "If-Match": '"fixture.v1"'})
    assert r.status_code == 409
    body = await r.get_json()
    assert body["profiles"] == ["alpha", "beta"] and "alpha" in body["message"]
    assert (await client.delete(f"{URL}/fixture", headers=admin)).status_code == 428

    for pid in ("alpha", "beta"):
        await client.patch(f"/v1/profiles/{pid}", json={"context_window_type_id": None}, headers=admin)
    assert (await client.delete(f"{URL}/fixture", headers={**admin, "If-Match": '"fixture.v0"'})).status_code == 412
    assert (await client.delete(f"{URL}/fixture", headers={**admin, "If-Match": '"fixture.v1"'})).status_code == 204
    assert (await client.get(f"{URL}/fixture", headers=admin)).status_code == 404


async def test_versions_and_rollback(client, admin):
    body, etag = await _get(client, admin, "knowledge_heavy")
    edit = {k: v for k, v in body.items() if k not in ("version", "updated_at", "etag")}
    for i in range(2):
        r = await client.put(
            f"{URL}/knowledge_heavy", json={**edit, "name": f"KH {i}"}, headers={**admin, "If-Match": etag}
        )
        etag = r.headers["ETag"]
    versions = (await (await client.get(f"{URL}/knowledge_heavy/versions", headers=admin)).get_json())["versions"]
    assert [v["version"] for v in versions] == [3, 2, 1] and versions[0]["current"]
    assert versions[2]["data"]["name"] == "Knowledge Heavy"

    r = await client.post(
        f"{URL}/knowledge_heavy/rollback", json={"version": 1}, headers={**admin, "If-Match": '"knowledge_heavy.v1"'}
    )
    assert r.status_code == 412
    r = await client.post(f"{URL}/knowledge_heavy/rollback", json={"version": 1}, headers={**admin, "If-Match": etag})
    assert r.status_code == 200
    rolled = await r.get_json()
    assert rolled["name"] == "Knowledge Heavy" and rolled["version"] == 4
    assert (
        await client.post(f"{URL}/knowledge_heavy/rollback", json={"version": 99}, headers=admin)
    ).status_code == 404
    assert (await client.post(f"{URL}/knowledge_heavy/rollback", json={"version": 0}, headers=admin)).status_code == 422

    audit = await (
        await client.get("/v1/audit?entity=context_window_type&entity_id=knowledge_heavy", headers=admin)
    ).get_json()
    actions = [e["action"] for e in audit["entries"]]
    assert actions[:3] == ["rollback to v1", "update", "update"]
    assert audit["entries"][0]["before"]["name"] == "KH 1" and audit["entries"][0]["after"]["name"] == "Knowledge Heavy"


async def test_a_constraint_race_is_a_conflict_not_a_500(svc):
    """Two writers passing their checks at once (possible on PostgreSQL): the database decides, 409."""
    from tda.errors import Conflict
    from tda.models import ProfileRow

    async with svc.store.db.write() as s:
        s.add(ProfileRow(id="twin", type="llm_only"))
    try:
        async with svc.store.db.write() as s:
            s.add(ProfileRow(id="twin", type="llm_only"))
        raise AssertionError("a duplicate key must not pass")
    except Conflict as exc:
        assert "concurrent change" in exc.message
    assert [p.id for p in await svc.store.profiles.all()] == ["twin"]


async def test_the_database_refuses_a_second_default(svc):
    """Even a writer that skipped the store's checks cannot make two defaults."""
    from sqlalchemy import update

    from tda.errors import Conflict
    from tda.models import WindowTypeRow

    try:
        async with svc.store.db.write() as s:
            await s.execute(update(WindowTypeRow).where(WindowTypeRow.id == "knowledge_heavy").values(is_default=True))
        raise AssertionError("two defaults must not pass")
    except Conflict:
        pass
    assert [t.id for t in await svc.store.types.all() if t.type.is_default] == ["balanced"]


async def test_an_unchanged_put_keeps_the_version_and_a_rollback_says_what_it_restored(client, admin):
    body, etag = await _get(client, admin, "token_efficient")
    edit = {k: v for k, v in body.items() if k not in ("version", "updated_at", "etag")}
    r = await client.put(f"{URL}/token_efficient", json=edit, headers={**admin, "If-Match": etag})
    assert r.status_code == 200 and r.headers["ETag"] == etag and (await r.get_json())["version"] == 1
    audit = await (await client.get("/v1/audit?entity_id=token_efficient", headers=admin)).get_json()
    assert [e["action"] for e in audit["entries"]] == ["create"]  # nothing changed, nothing recorded

    r = await client.put(f"{URL}/token_efficient", json={**edit, "name": "TE 2"}, headers={**admin, "If-Match": etag})
    r = await client.post(
        f"{URL}/token_efficient/rollback", json={"version": 1}, headers={**admin, "If-Match": r.headers["ETag"]}
    )
    assert r.status_code == 200
    versions = (await (await client.get(f"{URL}/token_efficient/versions", headers=admin)).get_json())["versions"]
    assert [(v["version"], v["rollback_of"]) for v in versions] == [(3, 1), (2, None), (1, None)]


async def test_versions_and_audit_name_the_author_by_the_token_name(client, svc):
    """A version and an audit entry say who saved them by the API token's name (the actor stays alongside);
    actors that are not tokens (the seeding "system") are shown as they are."""
    token, _ = await svc.store.tokens.create("ops-alice", "admin")
    alice = {"Authorization": f"Bearer {token}"}
    body, etag = await _get(client, alice, "token_efficient")
    edit = {k: v for k, v in body.items() if k not in ("version", "updated_at", "etag")}
    r = await client.put(f"{URL}/token_efficient", json={**edit, "name": "TE"}, headers={**alice, "If-Match": etag})
    assert r.status_code == 200
    versions = (await (await client.get(f"{URL}/token_efficient/versions", headers=alice)).get_json())["versions"]
    assert [(v["version"], v["author"]) for v in versions] == [(2, "ops-alice"), (1, "system")]
    assert versions[0]["actor"].startswith("token:ops-alice#")
    audit = await (await client.get("/v1/audit?entity_id=token_efficient", headers=alice)).get_json()
    assert [(e["action"], e["author"]) for e in audit["entries"]] == [("update", "ops-alice"), ("create", "system")]
