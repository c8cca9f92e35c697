"""Money: each turn's dollars split by module, and totals per session and per profile in analytics, checked against
litellm's own ``cost_per_token`` for the usage the (fake) provider reported. Unknown prices are never $0."""

from __future__ import annotations

from typing import Any

import litellm
import pytest

from tests.service.served_app import served

USAGE = {"prompt_tokens": 2048, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 1536}}
UNPRICED = "openai/acme-small-unpriced"  # an OpenAI-compatible model litellm has no price for


def call_cost() -> tuple[float, float, float]:
    """The oracle: uncached input, cached input and output dollars of one call as litellm prices gpt-4o."""
    uncached, _ = litellm.cost_per_token(model="gpt-4o", prompt_tokens=512, completion_tokens=0)
    with_cache, output = litellm.cost_per_token(
        model="gpt-4o", prompt_tokens=2048, completion_tokens=7, cache_read_input_tokens=1536
    )
    return uncached, with_cache - uncached, output


def shares(snapshot: dict[str, Any]) -> dict[str, float]:
    """Each module's fraction of the window's tokens (the query and the rest of the window as ``query``)."""
    used = {m["module_id"]: m["used"] for m in snapshot["modules"] if m["used"] > 0}
    used["query"] = snapshot["total_used"] - sum(used.values())
    return {module: tokens / snapshot["total_used"] for module, tokens in used.items()}


async def test_turn_session_and_profile_dollars(live, upstream):
    upstream.usage = USAGE
    async with served(live) as app:
        at = {"base_url": upstream.base_url}
        await app.profile("gpt", type="llm_only", model="gpt-4o", upstream=at, system_prompt="You help with orders.")
        await app.profile("acme", type="llm_only", model=UNPRICED, upstream=at, system_prompt="You help.")
        done: dict[str, list[dict[str, Any]]] = {}
        for session, profile, turns in (("a", "gpt", 3), ("b", "gpt", 1), ("u", "acme", 2)):
            r = await app.http("POST", "/v1/sessions", json={"id": session, "profile_id": profile})
            assert r.status_code == 201, r.text
            for turn in range(turns):
                r = await app.http("POST", f"/v1/sessions/{session}/turns", json={"query": f"Where is order {turn}?"})
                assert r.status_code == 201, r.text
                done.setdefault(session, []).append(r.json())
        analytics = {s: (await app.http("GET", f"/v1/sessions/{s}/context-analytics")).json() for s in "abu"}
        profile = (await app.http("GET", "/v1/profiles/gpt/analytics")).json()
        unpriced_profile = (await app.http("GET", "/v1/profiles/acme/analytics")).json()
        missing = await app.http("GET", "/v1/profiles/nobody/analytics")
    uncached, cached, output = call_cost()
    per_call = uncached + cached + output

    # a turn: its dollars in the snapshot, the input split by module in proportion to the tokens each sent
    first = done["a"][0]
    cost = first["model_call"]["cost"]
    assert cost["uncached_input_usd"] == pytest.approx(uncached) and cost["cached_input_usd"] == pytest.approx(cached)
    assert cost["output_usd"] == pytest.approx(output) and cost["total_usd"] == pytest.approx(per_call)
    expected = shares(first["snapshot"])
    assert set(cost["by_module"]) == set(expected) and {"system_prompt", "query"} <= set(expected)
    for module, share in expected.items():
        split = cost["by_module"][module]
        assert split["uncached_input_usd"] == pytest.approx(uncached * share)
        assert split["cached_input_usd"] == pytest.approx(cached * share)
        assert split["tokens"] == round(share * first["snapshot"]["total_used"])

    # a session: per turn and summed
    a = analytics["a"]["summary"]["cost"]
    assert [t["model_call"]["cost_usd"] for t in analytics["a"]["turns"]] == pytest.approx([per_call] * 3)
    assert a["model_calls"] == a["priced_calls"] == 3 and a["unpriced_calls"] == 0
    assert a["total_usd"] == pytest.approx(3 * per_call) and a["output_usd"] == pytest.approx(3 * output)
    assert a["prompt_tokens"] == 3 * 2048 and a["cache_read_tokens"] == 3 * 1536 and a["completion_tokens"] == 21
    assert sum(a["input_by_module_usd"].values()) == pytest.approx(3 * (uncached + cached))

    # a profile: every session's calls, and each session's own total
    summary = profile["summary"]
    assert summary["model_calls"] == 4 and summary["total_usd"] == pytest.approx(4 * per_call)
    assert [(s["session_id"], s["model_calls"]) for s in profile["sessions"]] == [("a", 3), ("b", 1)]
    assert profile["sessions"][1]["total_usd"] == pytest.approx(per_call)

    # a model without a price: counted, never $0
    u = analytics["u"]["summary"]["cost"]
    assert u["model_calls"] == 2 and u["priced_calls"] == 0 and u["unpriced_models"] == [UNPRICED]
    assert u["total_usd"] is None and u["input_by_module_usd"] is None and u["prompt_tokens"] == 2 * 2048
    assert [t["model_call"]["cost_usd"] for t in analytics["u"]["turns"]] == [None, None]
    assert done["u"][0]["model_call"]["cost"] is None
    assert unpriced_profile["summary"]["total_usd"] is None and unpriced_profile["summary"]["unpriced_calls"] == 2
    assert missing.status_code == 404 and "nobody" in missing.json()["message"]
