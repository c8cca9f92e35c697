"""GET /v1/sessions and /v1/sessions/{id}/turns filtered on the server: by profile, window type, model, outcome,
date range and text; a bad filter is a 422 that names it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest


async def _turn(client, admin, session_id: str, query: str) -> dict:
    r = await client.post(f"/v1/sessions/{session_id}/turns", json={"query": query}, headers=admin)
    assert r.status_code == 201, await r.get_json()
    return await r.get_json()


async def _ids(client, viewer, query: str) -> dict[str, list[int] | None]:
    r = await client.get(f"/v1/sessions?{query}", headers=viewer)
    assert r.status_code == 200, await r.get_json()
    return {s["id"]: s["matching_turns"] for s in (await r.get_json())["sessions"]}


async def test_filters_narrow_sessions_and_turns(client, admin, viewer, session_id):
    other = {"id": "p2", "type": "llm_only", "system_prompt": "Be brief."}
    assert (await client.post("/v1/profiles", json=other, headers=admin)).status_code == 201
    assert (await client.post("/v1/sessions", json={"id": "s2", "profile_id": "p2"}, headers=admin)).status_code == 201
    assert (await client.post("/v1/sessions", json={"id": "empty", "profile_id": "p2"}, headers=admin)).status_code
    first = await _turn(client, admin, session_id, "Where is the Rotterdam warehouse?")
    await _turn(client, admin, session_id, "And the 100% refund policy?")
    await _turn(client, admin, "s2", "Tell me about rotterdam ports")

    assert set(await _ids(client, viewer, "")) >= {session_id, "s2", "empty"}
    assert await _ids(client, viewer, "profile_id=p2") == {"s2": None, "empty": None}
    # Text matches case-insensitively, in the query; "%" is a character, not a wildcard.
    assert await _ids(client, viewer, "q=ROTTERDAM") == {session_id: [first["turn"]], "s2": [1]}
    assert await _ids(client, viewer, "q=100%25") == {session_id: [first["turn"] + 1]}
    assert await _ids(client, viewer, "q=rotterdam&profile_id=p2") == {"s2": [1]}
    assert await _ids(client, viewer, "type_id=fixture&q=rotterdam") == {session_id: [first["turn"]]}
    assert await _ids(client, viewer, f"model={first['model']}&outcome=tool_calls") == {}
    both = await _ids(client, viewer, f"model={first['model']}&outcome=success")
    assert both == {session_id: [first["turn"], first["turn"] + 1], "s2": [1]}
    today = datetime.now(UTC).date()
    assert set(await _ids(client, viewer, f"since={today}&until={today}")) == {session_id, "s2"}
    assert await _ids(client, viewer, f"until={today - timedelta(days=1)}") == {}
    assert await _ids(client, viewer, f"since={today + timedelta(days=1)}") == {}

    r = await client.get(f"/v1/sessions/{session_id}/turns?q=refund", headers=viewer)
    assert [t["query"] for t in (await r.get_json())["turns"]] == ["And the 100% refund policy?"]
    r = await client.get(f"/v1/sessions/{session_id}/turns", headers=viewer)
    assert len((await r.get_json())["turns"]) >= 2


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("outcome=maybe", "outcome"),
        ("since=yesterday", "since"),
        ("until=2026-13-01", "until"),
        ("profile_id=no%20spaces", "profile_id"),
        ("limit=0", "limit"),
        ("colour=red", "colour"),
    ],
)
async def test_a_bad_filter_is_refused_by_name(client, viewer, query, field):
    r = await client.get(f"/v1/sessions?{query}", headers=viewer)
    body = await r.get_json()
    assert r.status_code in (400, 422), body
    assert field in str(body), body


async def test_dates_out_of_order_are_refused(client, viewer, session_id):
    for path in ("/v1/sessions", f"/v1/sessions/{session_id}/turns"):
        r = await client.get(f"{path}?since=2026-11-25&until=2026-11-24", headers=viewer)
        assert r.status_code in (400, 422) and "since must come before until" in str(await r.get_json())
