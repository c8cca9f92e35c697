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


def test_the_modules_own_model_calls_are_priced_by_module():
    """A summary or a query rewrite a module asked for while assembling is priced at its model's list price
    (litellm's ``cost_per_token``, the oracle) and charged to that module; an unpriced model makes the figure
    unknown, not $0."""
    from components.context_window.snapshot import AuxiliaryCall, ContextWindowSnapshot, ModuleUsage
    from tda.analytics import cost_totals
    from tda.cost import model_call
    from tda.llm import Completion

    def snapshot(*calls: AuxiliaryCall) -> ContextWindowSnapshot:
        modules = [ModuleUsage("conversation_history", "ok", allocated=900, used=700)]
        window = ("balanced", "Balanced", "gpt-4o", 128_000, "litellm", None, None, 4_000, 500, 3_500, 12, 712, modules)
        return ContextWindowSnapshot(*window, auxiliary_calls=list(calls))

    summary = AuxiliaryCall("conversation_history", "history_summary", "gpt-4o-mini", 640, 90, 256, ms=40.0)
    rewrite = AuxiliaryCall("rag_context", "query_rewrite", "gpt-4o-mini", 120, 12, 64, ms=9.0)
    done = Completion("ok", 712, 9, [])
    call = model_call("gpt-4o", snapshot(summary, rewrite), done)
    expected = {
        c.module_id: sum(
            litellm.cost_per_token(model=c.model, prompt_tokens=c.tokens_in, completion_tokens=c.tokens_out)
        )
        for c in (summary, rewrite)
    }
    aux = call["auxiliary"]
    assert aux["calls"] == 2 and aux["tokens_in"] == 760 and aux["tokens_out"] == 102
    assert aux["by_module_usd"] == pytest.approx(expected) and aux["usd"] == pytest.approx(sum(expected.values()))
    assert "auxiliary" not in model_call("gpt-4o", snapshot(), done)

    unpriced = AuxiliaryCall("conversation_history", "history_summary", UNPRICED, 640, 90, 256, ms=40.0)
    unknown = model_call("gpt-4o", snapshot(summary, unpriced), done)["auxiliary"]
    assert unknown["usd"] is None and unknown["unpriced_models"] == [UNPRICED]

    totals = cost_totals([call, call, model_call("gpt-4o", snapshot(summary, unpriced), done)])
    assert totals["auxiliary_calls"] == 6 and totals["auxiliary_usd"] == pytest.approx(2 * sum(expected.values()))
    assert totals["auxiliary_unpriced_models"] == [UNPRICED]
    assert cost_totals([model_call("gpt-4o", snapshot(unpriced), done)])["auxiliary_usd"] is None
    assert cost_totals([call])["total_usd"] == pytest.approx(call["cost"]["total_usd"])  # the answer's own call
