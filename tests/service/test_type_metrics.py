"""Metrics per type version (issue 36, item 3): what each version did to the traffic it served, checked against the
snapshots the API lists, summed here."""

from __future__ import annotations

from statistics import fmean
from typing import Any

TYPE = "/v1/context-window-types/fixture"


async def _ok(response: Any, status: int = 200) -> Any:
    body = await response.get_json()
    assert response.status_code == status, body
    return body


async def test_metrics_per_version_add_up_the_windows_of_each_version(client, admin, viewer, session_id):
    for query in ("Which depot?", "And the other one?"):
        await _ok(await client.post(f"/v1/sessions/{session_id}/turns", json={"query": query}, headers=admin), 201)
    current = await _ok(await client.get(TYPE, headers=admin))
    changed = {**current, "description": "v2"}
    await _ok(await client.put(TYPE, json=changed, headers={**admin, "If-Match": current["etag"]}))
    for query in ("A third?", "A fourth?", "A fifth?"):
        await _ok(await client.post(f"/v1/sessions/{session_id}/turns", json={"query": query}, headers=admin), 201)

    metrics = await _ok(await client.get(f"{TYPE}/metrics", headers=viewer))
    rows = (await _ok(await client.get(f"/v1/sessions/{session_id}/snapshots", headers=viewer)))["snapshots"]
    v1, v2 = current["version"], current["version"] + 1
    assert [v["version"] for v in metrics["versions"]] == [v2, v1]
    for figures in metrics["versions"]:
        mine = [r for r in rows if r["type_version"] == figures["version"] and r["type_id"] == "fixture"]
        calls = [r["snapshot"]["model_call"] for r in mine]
        assert figures["windows"] == len(mine) == (3 if figures["version"] == v2 else 2)
        assert figures["turns"] == len({r["turn"] for r in mine})
        assert figures["tokens_in"] == sum(c["prompt_tokens"] for c in calls)
        assert figures["tokens_out"] == sum(c["completion_tokens"] for c in calls)
        assert figures["cache_read_tokens"] == sum(c["cache_read_tokens"] for c in calls)
        priced = [c["cost"]["total_usd"] for c in calls if c.get("cost")]
        assert figures["cost_usd"] == (sum(priced) if priced else None)
        assert abs(figures["avg_utilisation"] - fmean(r["snapshot"]["utilisation"] for r in mine)) < 1e-4
        assert figures["condensations"] == sum(len(r["snapshot"]["condensations"]) for r in mine)
    assert sum(d["windows"] for d in metrics["days"]) == len(rows)
    assert {d["version"] for d in metrics["days"]} == {v1, v2}

    r = await client.get("/v1/context-window-types/nope/metrics", headers=viewer)
    assert r.status_code == 404
