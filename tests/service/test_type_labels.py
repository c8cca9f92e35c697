"""Labels on type versions (issue 36, item 2): a profile bound by label runs the version the label is on; moving the
label is the rollout and the rollback, audited with its reason; bad labels and bindings are refused by name."""

from __future__ import annotations

from typing import Any

TYPE = "/v1/context-window-types/fixture"


async def _ok(response: Any, status: int = 200) -> Any:
    body = await response.get_json()
    assert response.status_code == status, body
    return body


async def _save_v2(client: Any, admin: dict[str, str]) -> int:
    current = await _ok(await client.get(TYPE, headers=admin))
    changed = {**current, "description": "v2: a changed description"}
    saved = await _ok(await client.put(TYPE, json=changed, headers={**admin, "If-Match": current["etag"]}))
    return saved["version"]


async def _turn_version(client: Any, admin: dict[str, str], session_id: str) -> int:
    await _ok(await client.post(f"/v1/sessions/{session_id}/turns", json={"query": "Which depot?"}, headers=admin), 201)
    r = await client.get(f"/v1/sessions/{session_id}/snapshots?newest_first=true&limit=1", headers=admin)
    return (await _ok(r))["snapshots"][0]["type_version"]


async def test_a_profile_bound_by_label_runs_the_labelled_version_and_moves_with_it(client, admin, session_id):
    first = (await _ok(await client.get(TYPE, headers=admin)))["version"]
    second = await _save_v2(client, admin)
    assert second == first + 1
    put = {"version": first, "reason": "kept on v1 until the experiment is read"}
    label = await _ok(await client.put(f"{TYPE}/labels/production", json=put, headers=admin))
    assert (label["label"], label["version"], label["reason"]) == ("production", first, put["reason"])
    await _ok(await client.patch("/v1/profiles/p1", json={"context_window_type_label": "production"}, headers=admin))
    assert await _turn_version(client, admin, session_id) == first  # the label's version, not the current one

    # The rollout: the label moves to v2, and the profile's next turn runs v2; the rollback moves it back.
    await _ok(
        await client.put(f"{TYPE}/labels/production", json={"version": second, "reason": "rollout"}, headers=admin)
    )
    assert await _turn_version(client, admin, session_id) == second
    await _ok(
        await client.put(f"{TYPE}/labels/production", json={"version": first, "reason": "rollback"}, headers=admin)
    )
    assert await _turn_version(client, admin, session_id) == first

    versions = (await _ok(await client.get(f"{TYPE}/versions", headers=admin)))["versions"]
    assert {v["version"]: v["labels"] for v in versions} == {second: [], first: ["production"]}
    labels = (await _ok(await client.get(f"{TYPE}/labels", headers=admin)))["labels"]
    assert [(x["label"], x["version"], x["reason"]) for x in labels] == [("production", first, "rollback")]
    entries = (await _ok(await client.get("/v1/audit?entity=context_window_type&entity_id=fixture", headers=admin)))[
        "entries"
    ]
    moves = [(e["before"], e["after"]) for e in entries if e["action"] == "label"][::-1]
    assert [(b and b["version"], a["version"], a["reason"]) for b, a in moves] == [
        (None, first, put["reason"]),
        (first, second, "rollout"),
        (second, first, "rollback"),
    ]

    # Bound by it: the label stays until the profile is bound otherwise.
    r = await client.delete(f"{TYPE}/labels/production", headers=admin)
    assert r.status_code == 409 and "p1" in (await r.get_json())["message"]
    await _ok(await client.patch("/v1/profiles/p1", json={"context_window_type_label": None}, headers=admin))
    assert await _turn_version(client, admin, session_id) == second  # unlabelled: the current version
    assert (await client.delete(f"{TYPE}/labels/production", headers=admin)).status_code == 204
    assert (await _ok(await client.get(f"{TYPE}/labels", headers=admin)))["labels"] == []


async def test_bad_labels_and_bindings_are_refused_by_name(client, admin, session_id):
    r = await client.put(f"{TYPE}/labels/staging", json={"version": 99}, headers=admin)
    assert r.status_code == 422 and "no version 99" in str(await r.get_json())
    r = await client.put(f"{TYPE}/labels/no%20spaces", json={"version": 1}, headers=admin)
    assert r.status_code == 422 and "is not a label" in (await r.get_json())["message"]
    r = await client.put("/v1/context-window-types/nope/labels/staging", json={"version": 1}, headers=admin)
    assert r.status_code == 404
    r = await client.patch("/v1/profiles/p1", json={"context_window_type_label": "staging"}, headers=admin)
    body = await r.get_json()
    assert r.status_code == 422 and "has no label 'staging'" in body["message"], body
    assert body["errors"][0]["loc"] in ("context_window_type_label", ["context_window_type_label"])
    unbound = {"context_window_type_id": None, "context_window_type_label": "staging"}
    r = await client.patch("/v1/profiles/p1", json=unbound, headers=admin)
    assert r.status_code == 422 and "set context_window_type_id too" in (await r.get_json())["message"]
    profile = await _ok(await client.get("/v1/profiles/p1", headers=admin))
    assert (profile["context_window_type_id"], profile["context_window_type_label"]) == ("fixture", None)


async def test_the_active_type_of_a_profile_bound_by_label_is_the_labelled_version(client, admin, session_id):
    first = (await _ok(await client.get(TYPE, headers=admin)))["version"]
    await _save_v2(client, admin)
    await _ok(await client.put(f"{TYPE}/labels/staging", json={"version": first}, headers=admin))
    await _ok(await client.patch("/v1/profiles/p1", json={"context_window_type_label": "staging"}, headers=admin))
    active = await _ok(await client.get("/v1/context-window/active/p1", headers=admin))
    assert (active["bound_type_id"], active["bound_label"]) == ("fixture", "staging")
    assert active["context_window_type"]["version"] == first
    assert active["context_window_type"]["description"] != "v2: a changed description"
