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
        ("offset=-1", "offset"),
        ("find=", "find"),
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


async def _page(client, headers, path: str) -> tuple[list[str], int | None]:
    r = await client.get(path, headers=headers)
    body = await r.get_json()
    assert r.status_code == 200, body
    items = body.get("sessions", body.get("entries"))
    return [item.get("entity_id", item["id"]) for item in items], body["next_offset"]


async def test_lists_page_past_their_limit_and_sessions_are_found_by_id_title_or_user(
    client, admin, viewer, session_id
):
    """Every session once across the pages (newest first), the last page saying so; ``find`` matches any case."""
    made = [f"paged-{i:02d}" for i in range(7)]
    for i, session_id in enumerate(made):
        body = {"id": session_id, "profile_id": "p1", "title": f"Route {i} 50%_off", "user_id": f"ULLA-{i % 2}"}
        assert (await client.post("/v1/sessions", json=body, headers=admin)).status_code == 201
    seen, offset = [], 0
    while offset is not None:
        page, offset = await _page(client, viewer, f"/v1/sessions?find=paged-&limit=3&offset={offset}")
        assert len(page) <= 3
        seen += page
    assert seen == made[::-1]
    assert (await _page(client, viewer, "/v1/sessions?find=paged-&limit=7"))[1] is None  # exactly one full page

    assert set((await _page(client, viewer, "/v1/sessions?find=route%203"))[0]) == {"paged-03"}  # title
    assert set((await _page(client, viewer, "/v1/sessions?find=ulla-1"))[0]) == {"paged-01", "paged-03", "paged-05"}
    assert (await _page(client, viewer, "/v1/sessions?find=PAGED-06"))[0] == ["paged-06"]  # id
    assert (await _page(client, viewer, "/v1/sessions?find=1%25_o"))[0] == []  # "%" and "_" are characters
    assert len((await _page(client, viewer, "/v1/sessions?find=50%25_off"))[0]) == 7

    # The audit log pages the same way, and finds changes by who made them.
    entries, offset = [], 0
    while offset is not None:
        page, offset = await _page(client, admin, f"/v1/audit?entity=session&limit=4&offset={offset}")
        entries += page
    assert [e for e in entries if e in made] == made[::-1]
    mine, _ = await _page(client, admin, "/v1/audit?entity=session&actor=NO-SUCH-ACTOR")
    assert mine == []
    r = await client.get("/v1/audit?entity=session&limit=1", headers=admin)
    actor = (await r.get_json())["entries"][0]["actor"]
    by_actor, _ = await _page(client, admin, f"/v1/audit?entity=session&actor={actor[2:6].upper()}")
    assert set(made) <= set(by_actor)
