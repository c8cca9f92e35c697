"""No field a client sends is dropped without a trace (issue 34, item 2): every body field of the three wire formats,
enumerated from the providers' own SDK types (the `openai` package's chat-completions and Responses params, the
`anthropic` package's Messages params, beta ones too), is sent to a real `tda serve` whose upstream is the recording
fake's OpenAI-compatible chat completions, and must come out one of three ways:

- forwarded: the request the fake received carries it (under the chat-completions name it translates to);
- traced: the call's snapshot names it in ``provider_features`` (tda handled it, or litellm sends the provider no
  such field: tda found that from the request litellm builds);
- refused: a 422 whose message names it.

The oracles are the SDK types (which fields exist), the fake upstream's recording (what arrived) and the stored
snapshot read back over the API.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any, get_type_hints

import httpx
import pytest

from tests.gateway.servers import MODEL
from tests.gateway.support import Gateway
from tests.gateway.upstream import FakeUpstream

anthropic = pytest.importorskip("anthropic", reason="the test extra pins anthropic (pip install -e '.[test]')")

FUNCTION = {"name": "get_balance", "parameters": {"type": "object", "properties": {"account": {"type": "string"}}}}
CHAT_TOOL = {"type": "function", "function": FUNCTION}
RESPONSES_TOOL = {"type": "function", **FUNCTION}
ANTHROPIC_TOOL = {"name": "get_balance", "input_schema": FUNCTION["parameters"]}

CHAT_SAMPLES: dict[str, Any] = {
    "audio": {"voice": "alloy", "format": "wav"},
    "frequency_penalty": 0.1,
    "function_call": "auto",
    "functions": [FUNCTION],
    "logit_bias": {"50256": -100},
    "logprobs": True,
    "max_completion_tokens": 50,
    "max_tokens": 50,
    "messages": [{"role": "user", "content": "What is the balance?"}],
    "metadata": {"run": "r1"},
    "modalities": ["text"],
    "model": MODEL,
    "moderation": {"model": "omni-moderation-latest"},
    "n": 2,
    "parallel_tool_calls": False,
    "prediction": {"type": "content", "content": "The balance is"},
    "presence_penalty": 0.1,
    "prompt_cache_key": "tenant-1",
    "prompt_cache_options": {"mode": "implicit"},
    "prompt_cache_retention": "24h",
    "reasoning_effort": "low",
    "response_format": {"type": "json_object"},
    "safety_identifier": "user-hash-1",
    "seed": 7,
    "service_tier": "auto",
    "stop": ["END"],
    "store": True,
    "stream": True,
    "stream_options": {"include_usage": True},
    "temperature": 0.2,
    "tool_choice": "auto",
    "tools": [CHAT_TOOL],
    "top_logprobs": 2,
    "top_p": 0.9,
    "user": "end-user-1",
    "verbosity": "low",
    "web_search_options": {"search_context_size": "low"},
}
"""A valid value of each chat-completions field."""

CHAT_NEEDS: dict[str, dict[str, Any]] = {
    "tool_choice": {"tools": [CHAT_TOOL]},
    "parallel_tool_calls": {"tools": [CHAT_TOOL]},
    "top_logprobs": {"logprobs": True},
    "stream_options": {"stream": True},
    "function_call": {"functions": [FUNCTION]},
}
"""The fields a field is only valid with."""

RESPONSES_SAMPLES: dict[str, Any] = {
    "background": False,
    "context_management": [{"type": "compaction", "compact_threshold": 100_000}],
    "conversation": "conv_1",
    "include": ["message.output_text.logprobs"],
    "input": "What is the balance?",
    "instructions": "Answer in one sentence.",
    "max_output_tokens": 50,
    "max_tool_calls": 3,
    "metadata": {"run": "r1"},
    "model": MODEL,
    "moderation": {"model": "omni-moderation-latest"},
    "parallel_tool_calls": False,
    "previous_response_id": None,  # filled in with a real response's id
    "prompt": {"id": "pmpt_1"},
    "prompt_cache_key": "tenant-1",
    "prompt_cache_options": {"mode": "implicit"},
    "prompt_cache_retention": "24h",
    "reasoning": {"effort": "low"},
    "safety_identifier": "user-hash-1",
    "service_tier": "auto",
    "store": True,
    "stream": True,
    "stream_options": {"include_obfuscation": False},
    "temperature": 0.2,
    "text": {"format": {"type": "json_object"}},
    "tool_choice": "auto",
    "tools": [RESPONSES_TOOL],
    "top_logprobs": 2,
    "top_p": 0.9,
    "truncation": "auto",
    "user": "end-user-1",
}
RESPONSES_NEEDS: dict[str, dict[str, Any]] = {
    "tool_choice": {"tools": [RESPONSES_TOOL]},
    "parallel_tool_calls": {"tools": [RESPONSES_TOOL]},
    "stream_options": {"stream": True},
}
RESPONSES_AS: dict[str, tuple[str, ...]] = {
    "input": ("messages",),
    "instructions": ("messages",),
    "max_output_tokens": ("max_tokens", "max_completion_tokens"),
    "reasoning": ("reasoning_effort",),
    "text": ("response_format",),
    "top_logprobs": ("top_logprobs",),
}
"""The chat-completions fields a Responses field reaches the model as."""

MESSAGES_SAMPLES: dict[str, Any] = {
    "billing_policy": {"type": "standard"},
    "cache_control": {"type": "ephemeral"},
    "compaction": {"type": "summarize"},
    "container": "container_1",
    "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
    "diagnostics": {"previous_message_id": "msg_1"},
    "fallback_credit_token": "token",
    "fallbacks": [{"model": "claude-haiku-4-5"}],
    "inference_geo": "us",
    "max_tokens": 50,
    "mcp_servers": [{"type": "url", "url": "https://mcp.example", "name": "x"}],
    "messages": [{"role": "user", "content": "What is the balance?"}],
    "metadata": {"user_id": "end-user-1"},
    "model": MODEL,
    "output_config": {"effort": "low"},
    "output_format": {"type": "json_schema", "schema": {"type": "object"}},
    "service_tier": "auto",
    "speed": "fast",
    "stop_sequences": ["END"],
    "stream": True,
    "system": "Answer in one sentence.",
    "temperature": 0.2,
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "thread": {"id": "thread_1"},
    "tool_choice": {"type": "auto"},
    "tools": [ANTHROPIC_TOOL],
    "top_k": 5,
    "top_p": 0.9,
    "user_profile_id": "profile-1",
    "workspace_id": "wrkspc_1",
}
MESSAGES_NEEDS: dict[str, dict[str, Any]] = {"tool_choice": {"tools": [ANTHROPIC_TOOL]}}
MESSAGES_AS: dict[str, tuple[str, ...]] = {
    "system": ("messages",),
    "stop_sequences": ("stop",),
    "metadata": ("user",),
    "cache_control": ("messages",),
}
CLAUDE = "tda/claude-wire"
"""A profile whose model is Claude at the fake's Anthropic-shaped API: the Messages fields at their own provider."""


def _chat_fields() -> set[str]:
    from openai.types.chat import completion_create_params

    return set(get_type_hints(completion_create_params.CompletionCreateParamsBase)) | {"stream"}


def _responses_fields() -> set[str]:
    from openai.types.responses import response_create_params

    return set(get_type_hints(response_create_params.ResponseCreateParamsBase)) | {"stream"}


def _messages_fields() -> set[str]:
    from anthropic.types import message_create_params
    from anthropic.types.beta import message_create_params as beta

    fields = set(get_type_hints(message_create_params.MessageCreateParamsBase))
    return fields | set(get_type_hints(beta.MessageCreateParamsBase)) - {"betas"} | {"stream"}  # betas: a header


WIRES: dict[str, tuple[str, Callable[[], set[str]], dict[str, Any], dict[str, dict[str, Any]], dict[str, Any]]] = {
    "chat": ("/chat/completions", _chat_fields, CHAT_SAMPLES, CHAT_NEEDS, {"max_completion_tokens": ("max_tokens",)}),
    "responses": ("/responses", _responses_fields, RESPONSES_SAMPLES, RESPONSES_NEEDS, RESPONSES_AS),
    "messages": ("/messages", _messages_fields, MESSAGES_SAMPLES, MESSAGES_NEEDS, MESSAGES_AS),
    "messages-at-claude": (
        "/messages",
        _messages_fields,
        MESSAGES_SAMPLES,
        MESSAGES_NEEDS,
        {"cache_control": ("messages",)},
    ),
}
BASE = {
    "chat": {"model": MODEL, "messages": CHAT_SAMPLES["messages"]},
    "responses": {"model": MODEL, "input": RESPONSES_SAMPLES["input"]},
    "messages": {"model": MODEL, "max_tokens": 50, "messages": MESSAGES_SAMPLES["messages"]},
    "messages-at-claude": {"model": CLAUDE, "max_tokens": 50, "messages": MESSAGES_SAMPLES["messages"]},
}


@pytest.fixture(scope="module")
def claude(tda_server: Gateway, fake_upstream: FakeUpstream) -> str:
    body = {
        "id": CLAUDE.removeprefix("tda/"),
        "type": "tool_enabled",
        "system_prompt": "",
        "model": "anthropic/claude-sonnet-4-5",
        "upstream": {"base_url": fake_upstream.base_url.removesuffix("/v1"), "api_key_env": "FAKE_UPSTREAM_KEY"},
    }
    created = httpx.post(
        tda_server.base_url + "/profiles", json=body, headers={"Authorization": f"Bearer {tda_server.token}"}
    )
    assert created.status_code == 201, created.text
    return CLAUDE


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_every_sdk_field_has_a_sample(wire: str) -> None:
    """The SDK is the oracle for which fields exist: a field it gains fails here until it is sent below. (Messages
    has four more: ``temperature``, ``top_p``, ``top_k`` and ``output_format``, which SDKs before 2.x send.)"""
    _, fields, samples, _, _ = WIRES[wire]
    assert fields() <= set(samples)


def _cases() -> list[tuple[str, str]]:
    return [(wire, field) for wire, (_, _, samples, _, _) in sorted(WIRES.items()) for field in sorted(samples)]


def _post(gateway: Gateway, path: str, body: dict[str, Any], session: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {gateway.token}", "X-TDA-Session": session}
    return httpx.post(gateway.base_url + path, json=body, headers=headers, timeout=60)


def _traced(gateway: Gateway, session: str) -> list[dict[str, Any]]:
    """The provider_features of the session's newest snapshot."""
    headers = {"Authorization": f"Bearer {gateway.token}"}
    found = httpx.get(f"{gateway.base_url}/sessions/{session}", headers=headers, timeout=30).json()
    snapshot_id = found["turns"][-1]["snapshot_id"]
    snapshot = httpx.get(f"{gateway.base_url}/snapshots/{snapshot_id}", headers=headers, timeout=30).json()
    return list(snapshot["snapshot"].get("provider_features") or [])


@pytest.mark.parametrize(("wire", "field"), _cases())
def test_each_field_is_forwarded_traced_or_refused(
    tda_server: Gateway, upstream: FakeUpstream, claude: str, wire: str, field: str
) -> None:
    path, _, samples, needs, sent_as = WIRES[wire]
    body = {**BASE[wire], **needs.get(field, {}), field: samples[field]}
    body["model"] = BASE[wire]["model"]  # the wire's own model (the sample's is the OpenAI-compatible one)
    session = f"wire-{uuid.uuid4().hex[:12]}"
    if field == "previous_response_id":
        first = _post(tda_server, path, BASE[wire], session)
        body[field] = first.json()["id"]
        upstream.clear()
    answer = _post(tda_server, path, body, session)

    if answer.status_code == 422:
        assert field in answer.text, answer.text
        return
    assert answer.status_code == 200, answer.text
    [call] = upstream.calls("/messages" if wire == "messages-at-claude" else "/chat/completions")
    names = (field, *sent_as.get(field, ()))
    if any(name in call.body for name in names):
        return  # forwarded
    traced = {entry["field"].split(".")[0] for entry in _traced(tda_server, session)}
    assert traced & set(names), f"{field} was dropped silently: upstream got {sorted(call.body)}; traced {traced}"


def test_what_litellm_does_not_send_is_named_with_the_reason(tda_server: Gateway, upstream: FakeUpstream) -> None:
    """An Anthropic field at an OpenAI-compatible upstream: litellm leaves it out, and the snapshot says so."""
    session = f"wire-{uuid.uuid4().hex[:12]}"
    body = {**BASE["messages"], "thinking": MESSAGES_SAMPLES["thinking"]}
    answer = _post(tda_server, "/messages", body, session)
    assert answer.status_code == 200, answer.text
    [call] = upstream.calls()
    assert "thinking" not in json.dumps(call.body)
    [entry] = [e for e in _traced(tda_server, session) if e["field"] == "thinking"]
    assert entry["by"] == "litellm" and "litellm 1.106.2" in entry["note"] and "openai" in entry["note"]
