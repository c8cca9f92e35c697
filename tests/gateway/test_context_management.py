"""Anthropic's ``context_management`` edits on /v1/messages (issue 34, item 2), with the real `anthropic` SDK through
a real `tda serve` against the recording fake (tests/gateway/upstream.py): forwarded to Claude at Anthropic's API
(the fake's /v1/messages, which reports the edits by its own figures), applied by tda at an OpenAI-compatible one,
and said in the snapshot and in the response's ``context_management.applied_edits`` either way.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.gateway.servers import MODEL
from tests.gateway.support import Gateway
from tests.gateway.upstream import FAKE_CLEARED, FakeUpstream, Recorded

anthropic = pytest.importorskip("anthropic", reason="the test extra pins anthropic (pip install -e '.[test]')")

BETA = "context-management-2025-06-27"
CLEAR = {
    "type": "clear_tool_uses_20250919",
    "trigger": {"type": "input_tokens", "value": 200},
    "keep": {"type": "tool_uses", "value": 1},
}
TOOL = {
    "name": "get_balance",
    "description": "The current balance of a bank account.",
    "input_schema": {"type": "object", "properties": {"account": {"type": "string"}}, "required": ["account"]},
}


def _result(n: int) -> str:
    return "\n".join(f"account {n}-{i}: balance {i * 13}.25 EUR, last movement on day {i}" for i in range(40))


def _agent_loop(uses: int) -> list[dict[str, Any]]:
    """A question, then ``uses`` tool uses (Anthropic's blocks: tool_use, then its tool_result) of one agent loop."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Reconcile the balances of the four accounts."}]
    for n in range(uses):
        use = {"type": "tool_use", "id": f"toolu_{n}", "name": "get_balance", "input": {"account": str(n)}}
        messages.append({"role": "assistant", "content": [use]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": _result(n)}
        messages.append({"role": "user", "content": [result]})
    return messages


def _client(gateway: Gateway, **headers: str) -> Any:
    root = gateway.base_url.removesuffix("/v1")
    return anthropic.Anthropic(base_url=root, api_key=gateway.token, max_retries=0, default_headers=headers)


def _snapshot(gateway: Gateway, raw: Any) -> dict[str, Any]:
    url = f"{gateway.base_url}/snapshots/{raw.headers['X-TDA-Snapshot']}"
    found = httpx.get(url, headers={"Authorization": f"Bearer {gateway.token}"}, timeout=30)
    assert found.status_code == 200, found.text
    return dict(found.json()["snapshot"])


def _only_call(upstream: FakeUpstream) -> Recorded:
    """The one model call a test's request made."""
    [call] = [r for r in upstream.requests if r.path in ("/chat/completions", "/messages")]
    return call


@pytest.fixture(scope="module")
def claude(tda_server: Gateway, fake_upstream: FakeUpstream) -> str:
    """A profile whose model is Claude at the fake's Anthropic-shaped API."""
    body = {
        "id": "claude-edits",
        "type": "tool_enabled",
        "system_prompt": "",
        "model": "anthropic/claude-sonnet-4-5",
        "upstream": {"base_url": fake_upstream.base_url.removesuffix("/v1"), "api_key_env": "FAKE_UPSTREAM_KEY"},
    }
    created = httpx.post(
        tda_server.base_url + "/profiles", json=body, headers={"Authorization": f"Bearer {tda_server.token}"}
    )
    assert created.status_code == 201, created.text
    return "tda/claude-edits"


def test_the_edits_go_to_claude_at_anthropic_s_api_which_reports_them(
    tda_server: Gateway, upstream: FakeUpstream, claude: str
) -> None:
    client = _client(tda_server, **{"X-TDA-Session": "edits-native"})
    raw = client.beta.messages.with_raw_response.create(
        model=claude,
        max_tokens=100,
        messages=_agent_loop(4),
        tools=[TOOL],
        context_management={"edits": [CLEAR]},
        betas=[BETA],
    )
    reply = raw.parse()
    sent = _only_call(upstream)

    assert sent.path == "/messages"
    assert sent.body["context_management"] == {"edits": [CLEAR]}  # as the client sent it
    assert BETA in sent.headers["anthropic-beta"]
    results = [b for m in sent.body["messages"] for b in m["content"] if b.get("type") == "tool_result"]
    assert [r["content"] if isinstance(r["content"], str) else r["content"][0]["text"] for r in results] == [
        _result(n) for n in range(4)
    ]  # tda cleared nothing: Anthropic does
    [applied] = reply.context_management.applied_edits
    assert (applied.type, applied.cleared_input_tokens) == ("clear_tool_uses_20250919", FAKE_CLEARED)
    [feature] = _snapshot(tda_server, raw)["provider_features"]
    assert (feature["field"], feature["by"]) == ("context_management", "upstream")
    client.close()


def test_at_an_openai_compatible_upstream_tda_clears_the_old_results_and_reports_it(
    tda_server: Gateway, upstream: FakeUpstream
) -> None:
    client = _client(tda_server, **{"X-TDA-Session": "edits-by-tda"})
    raw = client.beta.messages.with_raw_response.create(
        model=MODEL,
        max_tokens=100,
        messages=_agent_loop(4),
        tools=[TOOL],
        context_management={"edits": [CLEAR]},
        betas=[BETA],
    )
    reply = raw.parse()
    sent = _only_call(upstream)

    assert sent.path == "/chat/completions" and "context_management" not in sent.body
    results = {m["tool_call_id"]: m["content"] for m in sent.body["messages"] if m["role"] == "tool"}
    assert results["toolu_3"] == _result(3)  # the newest tool use is kept
    for n in range(3):
        assert results[f"toolu_{n}"].startswith("[result of get_balance, ")
        assert results[f"toolu_{n}"].endswith(" tokens, cleared]")
    calls = [c["id"] for m in sent.body["messages"] for c in m.get("tool_calls") or []]
    assert calls == [f"toolu_{n}" for n in range(4)]  # every call still has its result
    [applied] = reply.context_management.applied_edits
    assert (applied.type, applied.cleared_tool_uses) == ("clear_tool_uses_20250919", 3)
    assert 0 < applied.cleared_input_tokens < sum(len(_result(n)) for n in range(3))  # tokens, fewer than chars
    [feature] = _snapshot(tda_server, raw)["provider_features"]
    assert (feature["field"], feature["by"]) == ("context_management", "tda")
    assert "clear_tool_uses_20250919" in feature["note"]
    assert raw.headers["X-TDA-Features"] == "context_management=tda"
    client.close()


def test_exclude_tools_and_an_unreached_trigger_clear_nothing(tda_server: Gateway, upstream: FakeUpstream) -> None:
    client = _client(tda_server)
    excluded = client.beta.messages.create(
        model=MODEL,
        max_tokens=100,
        messages=_agent_loop(3),
        tools=[TOOL],
        context_management={"edits": [{**CLEAR, "exclude_tools": ["get_balance"]}]},
        betas=[BETA],
    )
    unreached = client.beta.messages.create(
        model=MODEL,
        max_tokens=100,
        messages=_agent_loop(3),
        tools=[TOOL],
        context_management={"edits": [{**CLEAR, "trigger": {"type": "input_tokens", "value": 1_000_000}}]},
        betas=[BETA],
    )
    assert excluded.context_management.applied_edits == []
    assert unreached.context_management.applied_edits == []
    for sent in (r for r in upstream.requests if r.path == "/chat/completions"):
        assert [m["content"] for m in sent.body["messages"] if m["role"] == "tool"] == [_result(n) for n in range(3)]
    client.close()


def test_a_streamed_reply_reports_the_edits_in_its_message_delta(tda_server: Gateway, upstream: FakeUpstream) -> None:
    client = _client(tda_server)
    with client.beta.messages.stream(
        model=MODEL,
        max_tokens=100,
        messages=_agent_loop(4),
        tools=[TOOL],
        context_management={"edits": [CLEAR]},
        betas=[BETA],
    ) as stream:
        final = stream.get_final_message()
    [applied] = final.context_management.applied_edits
    assert applied.cleared_tool_uses == 3
    client.close()


def test_clear_thinking_keeps_the_newest_thinking_turn(tda_server: Gateway, upstream: FakeUpstream) -> None:
    thought = {"type": "thinking", "thinking": "The balance needs the account number.", "signature": "sig-1"}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "What is my balance?"},
        {"role": "assistant", "content": [thought, {"type": "text", "text": "Which account?"}]},
        {"role": "user", "content": "Account 7."},
        {"role": "assistant", "content": [thought, {"type": "text", "text": "One moment."}]},
        {"role": "user", "content": "Thanks."},
    ]
    edit = {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}}
    client = _client(tda_server)
    reply = client.beta.messages.create(
        model=MODEL, max_tokens=100, messages=messages, context_management={"edits": [edit]}, betas=[BETA]
    )
    [applied] = reply.context_management.applied_edits
    assert (applied.type, applied.cleared_thinking_turns) == ("clear_thinking_20251015", 1)
    assert applied.cleared_input_tokens > 0
    assert "sig-1" not in json.dumps(_only_call(upstream).body)  # an OpenAI-compatible model is sent no thinking
    client.close()


@pytest.mark.parametrize(
    ("edits", "named"),
    [
        ([{"type": "clear_everything_20990101"}], "context_management.edits.0.type"),
        ([{**CLEAR, "keep": {"type": "tool_uses", "value": -1}}], "context_management.edits.0.keep.value"),
        ([{**CLEAR, "exclude_tools": "get_balance"}], "context_management.edits.0.exclude_tools"),
        ([{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 0}}], "edits.0.trigger.value"),
        ([{"type": "clear_thinking_20251015", "keep": {"type": "turns", "value": 1}}], "edits.0.keep"),
        ([CLEAR, "clear"], "context_management.edits"),
    ],
)
def test_an_edit_tda_cannot_read_is_a_422_naming_it(
    tda_server: Gateway, upstream: FakeUpstream, edits: list[dict[str, Any]], named: str
) -> None:
    client = _client(tda_server)
    with pytest.raises(anthropic.UnprocessableEntityError) as refused:
        client.beta.messages.create(
            model=MODEL,
            max_tokens=100,
            messages=_agent_loop(1),
            tools=[TOOL],
            context_management={"edits": edits},  # type: ignore[typeddict-item]
            betas=[BETA],
        )
    assert named in str(refused.value)
    assert not upstream.requests
    client.close()


def test_count_tokens_counts_the_window_after_tda_s_edits(tda_server: Gateway, upstream: FakeUpstream) -> None:
    client = _client(tda_server)
    edited = client.beta.messages.count_tokens(
        model=MODEL, messages=_agent_loop(4), tools=[TOOL], context_management={"edits": [CLEAR]}, betas=[BETA]
    )
    plain = client.beta.messages.count_tokens(model=MODEL, messages=_agent_loop(4), tools=[TOOL], betas=[BETA])
    assert edited.input_tokens < plain.input_tokens
    assert edited.context_management is not None
    assert edited.context_management.original_input_tokens == plain.input_tokens
    assert not [r for r in upstream.requests if r.path in ("/chat/completions", "/messages")]
    client.close()


def test_compact_at_an_openai_compatible_upstream_is_tda_s_condensation_within_its_trigger(
    tda_server: Gateway, upstream: FakeUpstream
) -> None:
    import litellm

    fact = "The invoice INV-{n} was paid on day {n} of the quarter by wire transfer, as the ledger shows. "
    messages: list[dict[str, Any]] = []
    for n in range(30):
        messages += [
            {"role": "user", "content": f"Tell me about invoice {n}. " + fact.format(n=n) * 3},
            {"role": "assistant", "content": fact.format(n=n) * 3},
        ]
    messages.append({"role": "user", "content": "Which invoice was paid last?"})
    edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 1_500}}
    client = _client(tda_server, **{"X-TDA-Session": "edits-compact"})
    raw = client.beta.messages.with_raw_response.create(
        model=MODEL,
        max_tokens=100,
        messages=messages,
        context_management={"edits": [edit]},
        betas=["compact-2026-01-12"],
    )
    sent = _only_call(upstream).body["messages"]
    whole = litellm.token_counter(model=MODEL, messages=messages)

    assert raw.parse().content[0].type == "text"
    assert litellm.token_counter(model=MODEL, messages=sent) <= 1_500 < whole
    assert sent[-1]["content"] == "Which invoice was paid last?"
    [feature] = _snapshot(tda_server, raw)["provider_features"]
    assert feature["by"] == "tda" and "compact_20260112" in feature["note"]
    client.close()
