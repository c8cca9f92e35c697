"""A window tda assembled in process (tda/integrations, inside an agent's own framework) reported to a server: kept
with the session's snapshots and streamed to its live panel, like a window the server assembled itself."""

from __future__ import annotations

import asyncio
import json
import logging

from tda.events import SNAPSHOT_EVENT
from tda.integrations import Reporter, Window
from tests.service.served_app import served
from tests.service.support import free_port

CONVERSATION = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "Where is order 7?"},
    {"role": "assistant", "content": "It left on Monday."},
    {"role": "user", "content": "And order 8?"},
]


async def test_reported_windows_join_the_session_s_snapshots_and_live_panel(settings):
    async with served(settings) as app:
        await app.profile("agent")
        assert (await app.http("POST", "/v1/sessions", json={"id": "lc-1", "profile_id": "agent"})).status_code == 201
        live = app.svc.bus.subscribe("lc-1")
        reporter = Reporter(app.base_url.removesuffix("/v1"), app.token, "lc-1")
        window = Window("balanced", model="gpt-4o", report=reporter)
        first = await window.assemble(CONVERSATION[:2], source="langchain")
        second = await window.assemble(CONVERSATION, source="langchain")
        listed = (await app.http("GET", "/v1/sessions/lc-1/snapshots")).json()["snapshots"]
        assert [(s["turn"], s["type_id"], s["model"]) for s in listed] == [(n, "balanced", "gpt-4o") for n in (1, 2)]
        for stored, assembled in zip(listed, (first, second), strict=True):
            assert stored["snapshot"] == assembled.snapshot.to_dict()
        sent: list[dict] = []
        while len(sent) < 2:  # heartbeats aside
            frame = await asyncio.wait_for(live.next(), 10)
            if frame.name == SNAPSHOT_EVENT:
                sent.append(json.loads(frame.payload.decode().split("data: ", 1)[1]))
        assert [s["snapshot_id"] for s in sent] == [s["id"] for s in listed]
        assert sent[1]["total_used"] == second.snapshot.total_used
        one = (await app.http("GET", f"/v1/snapshots/{listed[0]['id']}")).json()
        assert one["inputs"] == {"library": "langchain"}
        replayed = await app.http("POST", f"/v1/snapshots/{listed[0]['id']}/replay")
        assert replayed.status_code == 409 and "assembled in process by langchain" in replayed.text


async def test_a_report_that_cannot_be_kept_is_refused_with_what_to_change(settings):
    async with served(settings) as app:
        await app.profile("agent")
        assert (await app.http("POST", "/v1/sessions", json={"id": "s", "profile_id": "agent"})).status_code == 201
        snapshot = (await Window().assemble(CONVERSATION)).snapshot.to_dict()
        body = {"turn": 1, "snapshot": snapshot}
        assert (await app.http("POST", "/v1/sessions/nope/snapshots", json=body)).status_code == 404
        assert (await app.http("POST", "/v1/sessions/s/snapshots", json=body, key="wrong")).status_code == 401
        broken = await app.http(
            "POST", "/v1/sessions/s/snapshots", json={**body, "snapshot": {**snapshot, "total_used": "x"}}
        )
        assert broken.status_code == 422 and "total_used" in broken.text and "Traceback" not in broken.text
        assert (await app.http("POST", "/v1/sessions/s/snapshots", json={**body, "turn": 0})).status_code == 422
        viewer, _ = await app.svc.store.tokens.create("watcher", "viewer")
        assert (await app.http("POST", "/v1/sessions/s/snapshots", json=body, key=viewer)).status_code == 403
        listed = (await app.http("GET", "/v1/sessions/s/snapshots")).json()["snapshots"]
        assert listed == []  # nothing half-written


async def test_a_server_that_is_down_costs_a_warning_not_the_turn(caplog):
    caplog.set_level(logging.WARNING, logger="tda.integrations.window")
    window = Window(report=Reporter(f"http://127.0.0.1:{free_port()}", "t", "s", timeout_s=2))
    assembled = await window.assemble(CONVERSATION)
    assert assembled.messages[-1] == CONVERSATION[-1]
    assert any("was not reported" in r.getMessage() for r in caplog.records)
