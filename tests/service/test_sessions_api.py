"""Profiles, sessions, turns, limits, validity, purge, snapshots, analytics and replay through the API."""

from __future__ import annotations

from tests.oracle import cookbook_tokens
from tests.service.support import FIXTURE_TYPE


async def _turn(client, admin, session_id: str, query: str) -> dict:
    r = await client.post(f"/v1/sessions/{session_id}/turns", json={"query": query}, headers=admin)
    assert r.status_code == 201, await r.get_json()
    return await r.get_json()


async def test_profile_crud_and_validation(client, admin, viewer):
    r = await client.post("/v1/profiles", json={"id": "p", "type": "genie", "context_limit": 8192}, headers=admin)
    assert r.status_code == 201 and (await r.get_json())["context_limit"] == 8192
    assert (await client.post("/v1/profiles", json={"id": "p"}, headers=admin)).status_code == 409
    r = await client.post("/v1/profiles", json={"id": "q", "type": "robot"}, headers=admin)
    assert r.status_code == 422 and (await r.get_json())["errors"][0]["loc"] == "type"
    r = await client.post("/v1/profiles", json={"id": "q", "context_window_type_id": "nope"}, headers=admin)
    assert r.status_code == 422 and (await r.get_json())["errors"][0]["loc"] == "context_window_type_id"
    r = await client.post("/v1/profiles", json={"id": "q", "context_limit": 10_000_000}, headers=admin)
    assert r.status_code == 422 and "only lower" in (await r.get_json())["message"]
    assert (await client.patch("/v1/profiles/p", json={"name": "P"}, headers=viewer)).status_code == 403
    r = await client.patch("/v1/profiles/p", json={"name": "P", "context_limit": None}, headers=admin)
    assert (await r.get_json())["name"] == "P" and (await r.get_json())["context_limit"] is None
    assert (await client.get("/v1/profiles/zzz", headers=viewer)).status_code == 404
    active = await (await client.get("/v1/context-window/active/p", headers=viewer)).get_json()
    assert active["profile_type"] == "genie" and active["context_window_type"]["id"] == "balanced"
    assert {m["module_id"] for m in active["modules"]} >= {"fixture_echo", "fixture_boom"}
    assert (await client.get("/v1/context-window/active/zzz", headers=viewer)).status_code == 404
    assert (await client.delete("/v1/profiles/p", headers=admin)).status_code == 204


async def test_a_turn_succeeds_when_a_module_raises(client, admin, session_id):
    body = await _turn(client, admin, session_id, "And what is a token?")
    assert body["turn"] == 2 and body["answer"]
    modules = {m["module_id"]: m for m in body["snapshot"]["modules"]}
    assert modules["fixture_boom"]["status"] == "failed" and modules["fixture_echo"]["status"] == "ok"
    assert body["snapshot"]["total_used"] <= body["snapshot"]["available_budget"]
    messages = (await (await client.get(f"/v1/sessions/{session_id}/messages", headers=admin)).get_json())["messages"]
    assert [(m["turn"], m["role"]) for m in messages][-2:] == [(2, "user"), (2, "assistant")]
    turns = (await (await client.get(f"/v1/sessions/{session_id}/turns", headers=admin)).get_json())["turns"]
    assert turns[-1]["snapshot_id"] == body["snapshot_id"] and turns[-1]["tokens_in"] > 0
    # The next turn sees the recorded history.
    second = await _turn(client, admin, session_id, "Thanks!")
    assert second["turn"] == 3
    assert second["snapshot"]["total_used"] > body["snapshot"]["total_used"]


async def test_turn_errors(client, admin, viewer, session_id):
    assert (await client.post("/v1/sessions/nope/turns", json={"query": "hi"}, headers=admin)).status_code == 404
    assert (await client.post(f"/v1/sessions/{session_id}/turns", json={"query": ""}, headers=admin)).status_code == 422
    assert (
        await client.post(f"/v1/sessions/{session_id}/turns", json={"query": "x"}, headers=viewer)
    ).status_code == 403
    # A limit too small for the query alone: a clear 422, not a 500.
    r = await client.post(f"/v1/sessions/{session_id}/context-limit", json={"context_limit": 256}, headers=admin)
    assert r.status_code == 200
    r = await client.post(f"/v1/sessions/{session_id}/turns", json={"query": "word " * 400}, headers=admin)
    assert r.status_code == 422
    body = await r.get_json()
    assert body["error"] == "budget_exceeded" and body["available"] < body["floor_tokens"]


async def test_a_session_whose_history_took_the_last_turn_number_refuses_a_turn_cleanly(client, admin, session_id):
    """Turn numbers are 32-bit in SQL: a history imported up to 2**31 - 1 leaves no number for the next turn. A 409
    that says what to do, nothing written (PostgreSQL answered 500 here; SQLite stored a turn PostgreSQL cannot)."""
    last = 2**31 - 1
    message = {"role": "user", "content": "the last one", "turn": last}
    r = await client.post(f"/v1/sessions/{session_id}/messages", json={"messages": [message]}, headers=admin)
    assert r.status_code == 201, await r.get_json()
    before = await (await client.get(f"/v1/sessions/{session_id}/snapshots", headers=admin)).get_json()
    r = await client.post(f"/v1/sessions/{session_id}/turns", json={"query": "one more"}, headers=admin)
    body = await r.get_json()
    assert r.status_code == 409 and "new session" in body["message"], body
    turns = (await (await client.get(f"/v1/sessions/{session_id}/turns", headers=admin)).get_json())["turns"]
    assert all(t["turn"] <= last for t in turns)
    assert await (await client.get(f"/v1/sessions/{session_id}/snapshots", headers=admin)).get_json() == before


async def test_context_limit_only_lowers_and_null_clears(client, admin, session_id):
    url = f"/v1/sessions/{session_id}/context-limit"
    r = await client.post(url, json={"context_limit": 8000}, headers=admin)
    assert r.status_code == 200 and (await r.get_json())["context_limit"] == 8000
    snap = (await _turn(client, admin, session_id, "q"))["snapshot"]
    assert snap["effective_limit"] == 8000 and snap["session_override"] == 8000
    r = await client.post(url, json={"context_limit": 50_000_000}, headers=admin)
    assert r.status_code == 422
    assert (await client.post(url, json={"context_limit": 10}, headers=admin)).status_code == 422
    assert (await client.post(url, json={}, headers=admin)).status_code == 422
    r = await client.post(url, json={"context_limit": None}, headers=admin)
    assert r.status_code == 200 and (await r.get_json())["context_limit"] is None
    assert (await _turn(client, admin, session_id, "q2"))["snapshot"]["effective_limit"] == 128_000
    assert (
        await client.post("/v1/sessions/nope/context-limit", json={"context_limit": None}, headers=admin)
    ).status_code == 404


async def test_turn_validity_and_memory_purge(client, admin, session_id):
    first = await _turn(client, admin, session_id, "Remember the number 42.")
    r = await client.patch(f"/v1/sessions/{session_id}/turns/{first['turn']}", json={"valid": False}, headers=admin)
    assert r.status_code == 200 and (await r.get_json())["valid"] is False
    assert (
        await client.patch(f"/v1/sessions/{session_id}/turns/99", json={"valid": False}, headers=admin)
    ).status_code == 404
    messages = (await (await client.get(f"/v1/sessions/{session_id}/messages", headers=admin)).get_json())["messages"]
    assert all(not m["valid"] for m in messages if m["turn"] == first["turn"])
    assert any(m["valid"] for m in messages if m["turn"] == 1)

    r = await client.post(f"/v1/sessions/{session_id}/purge-memory", headers=admin)
    assert r.status_code == 200 and (await r.get_json())["messages_invalidated"] == 2  # turn 1's pair
    messages = (await (await client.get(f"/v1/sessions/{session_id}/messages", headers=admin)).get_json())["messages"]
    assert len(messages) == 4 and not any(m["valid"] for m in messages)  # kept, not deleted
    after = await _turn(client, admin, session_id, "What number?")
    echo = next(m for m in after["snapshot"]["modules"] if m["module_id"] == "fixture_echo")
    first_echo = next(m for m in first["snapshot"]["modules"] if m["module_id"] == "fixture_echo")
    assert echo["used"] < first_echo["used"]  # invalid history is no longer sent
    audit = await (await client.get(f"/v1/audit?entity=session&entity_id={session_id}", headers=admin)).get_json()
    assert {"purge_memory", "turn_validity"} <= {e["action"] for e in audit["entries"]}


async def test_snapshots_analytics_and_replay(client, admin, viewer, session_id):
    t1 = await _turn(client, admin, session_id, "one")
    t2 = await _turn(client, admin, session_id, "two")
    snaps = (await (await client.get(f"/v1/sessions/{session_id}/snapshots", headers=viewer)).get_json())["snapshots"]
    assert [s["id"] for s in snaps] == [t1["snapshot_id"], t2["snapshot_id"]]
    later = await (
        await client.get(f"/v1/sessions/{session_id}/snapshots?after={t1['snapshot_id']}", headers=viewer)
    ).get_json()
    assert [s["id"] for s in later["snapshots"]] == [t2["snapshot_id"]]
    assert (await client.get(f"/v1/sessions/{session_id}/snapshots?limit=0", headers=viewer)).status_code == 422
    latest = await client.get(f"/v1/sessions/{session_id}/snapshots?limit=1&newest_first=true", headers=viewer)
    assert [s["id"] for s in (await latest.get_json())["snapshots"]] == [t2["snapshot_id"]]

    analytics = await (await client.get(f"/v1/sessions/{session_id}/context-analytics", headers=viewer)).get_json()
    summary = analytics["summary"]
    assert summary["turns"] == 2 and summary["max_total_used"] == t2["snapshot"]["total_used"]
    assert summary["modules"]["fixture_boom"]["times_failed"] == 2
    assert [t["turn"] for t in analytics["turns"]] == [2, 3]

    r = await client.post(f"/v1/snapshots/{t2['snapshot_id']}/replay", headers=viewer)
    replay = await r.get_json()
    assert r.status_code == 200 and replay["identical"], replay["differences"]
    assert replay["inputs_changed"] == []

    # Invalidate turn 2: replaying turn 3 now sends less history, and says what changed.
    await client.patch(f"/v1/sessions/{session_id}/turns/2", json={"valid": False}, headers=admin)
    replay = await (await client.post(f"/v1/snapshots/{t2['snapshot_id']}/replay", headers=viewer)).get_json()
    assert not replay["identical"] and "history" in replay["inputs_changed"]
    paths = {d["path"] for d in replay["differences"]}
    assert "modules.fixture_echo.used" in paths and "total_used" in paths
    assert (await client.post("/v1/snapshots/999/replay", headers=viewer)).status_code == 404
    assert (await client.get(f"/v1/snapshots/{t1['snapshot_id']}", headers=viewer)).status_code == 200


async def test_preview_persists_nothing(client, admin, viewer, session_id):
    bigger = {**FIXTURE_TYPE, "id": "draft", "output_reserve_pct": 40}
    r = await client.post(
        "/v1/context-window-types/preview",
        json={"type": bigger, "session_id": session_id, "query": "hi"},
        headers=viewer,
    )
    assert r.status_code == 200
    body = await r.get_json()
    assert body["persisted"] is False and body["snapshot"]["window_type_id"] == "draft"
    assert body["snapshot"]["output_reserve"] == int(128_000 * 0.40)
    r = await client.post(
        "/v1/context-window-types/preview",
        json={"type_id": "fixture", "session_id": session_id, "query": "hi"},
        headers=viewer,
    )
    body = await r.get_json()
    assert r.status_code == 200 and body["type_version"] == 1
    # what the model would be sent: the window's messages, the query last, and their count is the snapshot's
    assert body["messages"][-1] == {"role": "user", "content": "hi"} and isinstance(body["tools"], list)
    counted = cookbook_tokens(body["messages"], "gpt-4o")  # an independent count of the messages as sent
    assert counted == body["snapshot"]["total_used"] if not body["tools"] else counted < body["snapshot"]["total_used"]
    assert (await client.get("/v1/context-window-types/draft", headers=viewer)).status_code == 404
    assert (await (await client.get(f"/v1/sessions/{session_id}/snapshots", headers=viewer)).get_json())[
        "snapshots"
    ] == []
    assert (await (await client.get(f"/v1/sessions/{session_id}/turns", headers=viewer)).get_json())["turns"] == []

    bad = {**bigger, "output_reserve_pct": 99}
    r = await client.post(
        "/v1/context-window-types/preview", json={"type": bad, "session_id": session_id, "query": "hi"}, headers=viewer
    )
    assert r.status_code == 422 and (await r.get_json())["errors"][0]["loc"] == "type.output_reserve_pct"
    r = await client.post(
        "/v1/context-window-types/preview", json={"session_id": session_id, "query": "hi"}, headers=viewer
    )
    assert r.status_code == 422
    r = await client.post(
        "/v1/context-window-types/preview",
        json={"type_id": "fixture", "session_id": "nope", "query": "hi"},
        headers=viewer,
    )
    assert r.status_code == 404


async def test_sessions_crud_and_attachments(client, admin, viewer, session_id):
    r = await client.post("/v1/sessions", json={"profile_id": "p1", "title": "second"}, headers=admin)
    assert r.status_code == 201
    other = (await r.get_json())["id"]
    assert (await client.post("/v1/sessions", json={"profile_id": "nope"}, headers=admin)).status_code == 422
    assert (
        await client.post("/v1/sessions", json={"id": session_id, "profile_id": "p1"}, headers=admin)
    ).status_code == 409
    listed = (await (await client.get("/v1/sessions", headers=viewer)).get_json())["sessions"]
    assert {s["id"] for s in listed} == {session_id, other}
    r = await client.patch(f"/v1/sessions/{other}", json={"phase": "focus"}, headers=admin)
    assert (await r.get_json())["phase"] == "focus"
    r = await client.post(
        f"/v1/sessions/{session_id}/attachments", json={"name": "notes.txt", "text": "hello"}, headers=admin
    )
    assert r.status_code == 201
    attachment = await r.get_json()
    detail = await (await client.get(f"/v1/sessions/{session_id}", headers=viewer)).get_json()
    assert detail["attachments"][0]["name"] == "notes.txt" and detail["message_count"] == 2
    assert detail["context_window_type_id"] == "fixture" and detail["model_limit"] == 128_000
    assert (
        await client.delete(f"/v1/sessions/{session_id}/attachments/{attachment['id']}", headers=admin)
    ).status_code == 204
    assert (
        await client.delete(f"/v1/sessions/{session_id}/attachments/{attachment['id']}", headers=admin)
    ).status_code == 404
    assert (await client.delete("/v1/profiles/p1", headers=admin)).status_code == 409  # sessions use it
    assert (await client.delete(f"/v1/sessions/{other}", headers=admin)).status_code == 204
    assert (await client.get(f"/v1/sessions/{other}", headers=viewer)).status_code == 404


async def test_turn_with_builtin_modules_and_tools(client, admin):
    """The shipped default type with the built-in modules, a profile with tools: tools reach the model."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Look a thing up.",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            },
        }
    ]
    r = await client.post("/v1/profiles", json={"id": "tooly", "tools": tools}, headers=admin)
    assert r.status_code == 201
    session = await (await client.post("/v1/sessions", json={"profile_id": "tooly"}, headers=admin)).get_json()
    body = await _turn(client, admin, session["id"], "Look up the weather.")
    used = {m["module_id"]: m["used"] for m in body["snapshot"]["modules"] if m["status"] == "ok"}
    assert body["snapshot"]["window_type_id"] == "balanced"
    assert used["tool_definitions"] > 0 and used["system_prompt"] > 0
