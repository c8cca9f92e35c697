"""GET /v1/snapshots/{id}/trace: the window of a turn as sent, each message with its module and token count."""

from __future__ import annotations

from components.context_window.token_estimator import REPLY_PRIMING
from tests.service.support import FIXTURE_TYPE


async def test_trace_shows_the_text_that_was_sent(client, admin, viewer, session_id):
    r = await client.post(f"/v1/sessions/{session_id}/turns", json={"query": "How long is it?"}, headers=admin)
    turn = await r.get_json()
    r = await client.get(f"/v1/snapshots/{turn['snapshot_id']}/trace", headers=viewer)
    assert r.status_code == 200
    trace = await r.get_json()
    assert trace["identical"] is True and trace["turn"] == turn["turn"]
    sent = [(m["role"], m["content"], m["module_id"]) for m in trace["messages"]]
    # The imported history and the profile's prompt arrive as the echo module's; the query is last, on its own.
    assert ("user", "What is a context window?", "fixture_echo") in sent
    assert ("assistant", "The tokens a model reads in one call.", "fixture_echo") in sent
    assert any(c == "You answer briefly." and mod == "fixture_echo" for _, c, mod in sent)
    assert sent[-1] == ("user", "How long is it?", "query")
    # Per-message counts add up to what the snapshot says was used: the trace is the window that was counted.
    snapshot = turn["snapshot"]
    counted = sum(m["tokens"] for m in trace["messages"]) + sum(t["tokens"] for t in trace["tools"])
    assert counted + trace["tools_overhead"] + trace["reply_priming"] == snapshot["total_used"]
    assert all(m["tokens"] >= 3 + len(m["content"]) // 8 for m in trace["messages"])  # overhead plus the text


async def test_trace_of_an_unknown_snapshot_is_404(client, viewer):
    r = await client.get("/v1/snapshots/999/trace", headers=viewer)
    assert r.status_code == 404 and "999" in (await r.get_json())["message"]


async def test_a_turn_under_another_type(client, admin, viewer, session_id):
    turn = await (
        await client.post(f"/v1/sessions/{session_id}/turns", json={"query": "Again?"}, headers=admin)
    ).get_json()
    lean = {**FIXTURE_TYPE, "id": "lean", "name": "Lean", "output_reserve_pct": 45}
    assert (await client.post("/v1/context-window-types", json=lean, headers=admin)).status_code == 201
    r = await client.get(f"/v1/snapshots/{turn['snapshot_id']}/trace?type_id=lean", headers=viewer)
    other = await r.get_json()
    assert r.status_code == 200 and other["type_id"] == "lean" and other["snapshot"]["window_type_id"] == "lean"
    recorded = turn["snapshot"]
    assert other["snapshot"]["available_budget"] < recorded["available_budget"]  # a larger reserve leaves less
    assert other["messages"][-1]["content"] == "Again?"
    r = await client.get(f"/v1/snapshots/{turn['snapshot_id']}/trace?type_id=nope", headers=viewer)
    assert r.status_code == 404 and "nope" in (await r.get_json())["message"]
    r = await client.get(f"/v1/snapshots/{turn['snapshot_id']}/trace?colour=red", headers=viewer)
    assert r.status_code == 422


async def test_what_if_under_a_limit_and_another_profile(client, admin, viewer, session_id):
    body = {"type_id": "fixture", "session_id": session_id, "query": "hi"}
    r = await client.post("/v1/context-window-types/preview", json={**body, "context_limit": 8192}, headers=viewer)
    snap = (await r.get_json())["snapshot"]
    assert r.status_code == 200 and snap["effective_limit"] == snap["session_override"] == 8192
    r = await client.post("/v1/context-window-types/preview", json={**body, "context_limit": 10**9}, headers=viewer)
    assert r.status_code == 422 and "only lower" in (await r.get_json())["message"]

    other = {"id": "p2", "type": "llm_only", "system_prompt": "Reply in French, at length, with sources."}
    assert (await client.post("/v1/profiles", json=other, headers=admin)).status_code == 201
    r = await client.post("/v1/context-window-types/preview", json={**body, "profile_id": "p2"}, headers=viewer)
    assert r.status_code == 200
    own = await (await client.post("/v1/context-window-types/preview", json=body, headers=viewer)).get_json()
    echo = lambda s: next(m for m in s["modules"] if m["module_id"] == "fixture_echo")  # noqa: E731
    assert echo((await r.get_json())["snapshot"])["used"] > echo(own["snapshot"])["used"]  # the longer prompt
    r = await client.post("/v1/context-window-types/preview", json={**body, "profile_id": "nope"}, headers=viewer)
    assert r.status_code == 404
    assert (await (await client.get(f"/v1/sessions/{session_id}/snapshots", headers=viewer)).get_json())[
        "snapshots"
    ] == []


async def test_what_if_names_each_message_module_and_tokens(client, viewer, session_id):
    """The preview's messages stay as they would be sent; ``attribution`` says, per message, whose and how long.
    Its counts add up, with the tools, to what the preview's snapshot says it would use."""
    body = {"type_id": "fixture", "session_id": session_id, "query": "How long is it?"}
    out = await (await client.post("/v1/context-window-types/preview", json=body, headers=viewer)).get_json()
    assert out["messages"][-1] == {"role": "user", "content": "How long is it?"}  # as sent: no extra keys
    who = out["attribution"]
    assert len(who) == len(out["messages"]) and who[-1]["module_id"] == "query"
    sent = {(m["role"], m["content"], w["module_id"]) for m, w in zip(out["messages"], who, strict=True)}
    assert ("user", "What is a context window?", "fixture_echo") in sent
    assert any(c == "You answer briefly." and mod == "fixture_echo" for _, c, mod in sent)
    assert all(w["tokens"] >= 3 + len(m["content"]) // 8 for m, w in zip(out["messages"], who, strict=True))
    assert out["tools"] == []  # so the messages and the reply's priming are all the window holds
    assert sum(w["tokens"] for w in who) + REPLY_PRIMING == out["snapshot"]["total_used"]
