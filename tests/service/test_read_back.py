"""Read-modify-write: what GET returns can be sent back with one field changed, on every editable resource."""

from __future__ import annotations

from typing import Any

TYPES = "/v1/context-window-types"


async def test_a_type_fetched_with_get_can_be_put_back_with_an_edit(client: Any, admin: dict[str, str]) -> None:
    got = await client.get(f"{TYPES}/balanced", headers=admin)
    body = await got.get_json()
    assert {"etag", "version", "updated_at"} <= set(body)
    body["description"] = "edited by read-modify-write"
    r = await client.put(f"{TYPES}/balanced", json=body, headers={**admin, "If-Match": got.headers["ETag"]})
    assert r.status_code == 200, await r.get_json()
    saved = await r.get_json()
    assert saved["description"] == "edited by read-modify-write"
    assert saved["version"] == body["version"] + 1  # the body's stale version was ignored, not stored
    # The same stale body again: If-Match still decides (412), the body's etag does not override it.
    r = await client.put(f"{TYPES}/balanced", json=body, headers={**admin, "If-Match": got.headers["ETag"]})
    assert r.status_code == 412


async def test_a_type_fetched_with_get_can_be_posted_as_a_copy(client: Any, admin: dict[str, str]) -> None:
    body = await (await client.get(f"{TYPES}/balanced", headers=admin)).get_json()
    r = await client.post(TYPES, json={**body, "id": "balanced_copy", "is_default": False}, headers=admin)
    assert r.status_code == 201, await r.get_json()
    assert (await r.get_json())["version"] == 1


async def test_a_profile_fetched_with_get_can_be_patched_back(
    client: Any, admin: dict[str, str], session_id: str
) -> None:
    body = await (await client.get("/v1/profiles/p1", headers=admin)).get_json()
    r = await client.patch("/v1/profiles/p1", json={**body, "name": "Renamed"}, headers=admin)
    assert r.status_code == 200, await r.get_json()
    assert (await r.get_json())["name"] == "Renamed"
    r = await client.patch("/v1/profiles/p1", json={**body, "id": "other"}, headers=admin)
    assert r.status_code == 422
    assert [e["loc"] for e in (await r.get_json())["errors"]] == ["id"]


async def test_a_session_fetched_with_get_can_be_patched_back(
    client: Any, admin: dict[str, str], session_id: str
) -> None:
    body = await (await client.get(f"/v1/sessions/{session_id}", headers=admin)).get_json()
    assert {"turns", "model_limit", "profile"} <= set(body)  # computed fields the server adds
    r = await client.patch(f"/v1/sessions/{session_id}", json={**body, "title": "Renamed"}, headers=admin)
    assert r.status_code == 200, await r.get_json()
    assert (await r.get_json())["title"] == "Renamed"
    # Fields that cannot change through PATCH are checked, not silently dropped.
    r = await client.patch(f"/v1/sessions/{session_id}", json={**body, "context_limit": 4096}, headers=admin)
    assert r.status_code == 422
    error = await r.get_json()
    assert [e["loc"] for e in error["errors"]] == ["context_limit"]
    assert (await (await client.get(f"/v1/sessions/{session_id}", headers=admin)).get_json())["context_limit"] is None
