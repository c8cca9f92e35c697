"""The trace of a turn carries the request that made it (to copy and send again, without credentials) and how long
each step of the turn took."""

from __future__ import annotations

import pytest

TOOL = {
    "type": "function",
    "function": {"name": "lookup", "description": "Find a row.", "parameters": {"type": "object", "properties": {}}},
}


async def test_a_chat_clients_request_rebuilt_and_sent_again_is_a_new_turn(client, admin, viewer, session_id):
    sent = {
        "model": "tda",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "Which row?"},
        ],
        "tools": [TOOL],
        "tool_choice": "auto",
        "temperature": 0.2,
        "seed": 7,
        "max_tokens": 50,
    }
    headers = {**admin, "X-TDA-Session": "copy-1"}
    r = await client.post("/v1/chat/completions", json=sent, headers=headers)
    assert r.status_code == 200, await r.get_json()
    turn, snapshot = r.headers["X-TDA-Turn"], r.headers["X-TDA-Snapshot"]
    trace = await (await client.get(f"/v1/snapshots/{snapshot}/trace", headers=viewer)).get_json()
    request = trace["request"]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"] == {"X-TDA-Session": "copy-1", "X-TDA-New-Turn": "true"}  # never rewrites this turn
    assert request["body"] == sent  # the client's own body, field for field (the token is not part of it)
    assert "Authorization" not in str(request)
    assert set(trace["timings_ms"]) >= {"load", "assemble", "model"}
    assert all(ms > 0 for ms in trace["timings_ms"].values())

    again = await client.post("/v1/chat/completions", json=request["body"], headers={**admin, **request["headers"]})
    assert again.status_code == 200 and again.headers["X-TDA-Turn"] == str(int(turn) + 1)
    retrace = await (
        await client.get(f"/v1/snapshots/{again.headers['X-TDA-Snapshot']}/trace", headers=viewer)
    ).get_json()
    assert retrace["request"] == request and retrace["messages"] == trace["messages"]  # the same window, sent again
    first = await (await client.get(f"/v1/snapshots/{snapshot}/trace", headers=viewer)).get_json()
    assert first == trace  # the original turn's record is untouched


async def test_a_native_turn_names_its_query_and_its_step_times(client, admin, viewer, session_id):
    r = await client.post(f"/v1/sessions/{session_id}/turns", json={"query": "How long?"}, headers=admin)
    body = await r.get_json()
    timing = dict(part.split(";dur=") for part in r.headers["Server-Timing"].split(", "))
    trace = await (await client.get(f"/v1/snapshots/{body['snapshot_id']}/trace", headers=viewer)).get_json()
    assert trace["request"]["path"] == f"/v1/sessions/{session_id}/turns"
    assert trace["request"]["body"] == {"query": "How long?"}
    # The stored steps are the ones the Server-Timing header reported (all but recording, which comes after).
    for step in ("load", "assemble", "snapshot", "model"):
        assert abs(trace["timings_ms"][step] - float(timing[step])) < 0.01


def test_a_model_a_router_routes_but_litellm_has_no_price_for_is_unpriced() -> None:
    import litellm

    from tda.cost import prices

    litellm.Router(model_list=[{"model_name": "openai/house-13b", "litellm_params": {"model": "openai/house-13b"}}])
    assert litellm.get_model_info("openai/house-13b")["input_cost_per_token"] == 0  # what litellm fills in
    assert prices("openai/house-13b") is None  # "price unknown", not $0
    assert prices("gpt-4o") == pytest.approx(
        (
            litellm.model_cost["gpt-4o"]["input_cost_per_token"],
            litellm.model_cost["gpt-4o"]["cache_read_input_token_cost"],
            litellm.model_cost["gpt-4o"]["input_cost_per_token"],  # no cache-write price: charged as input
            litellm.model_cost["gpt-4o"]["output_cost_per_token"],
        )
    )
