"""Anthropic's Messages API at tda (issue 34, item 1): the real `anthropic` SDK (sync, async, streaming) completes a
tool loop through a real `tda serve` against the recording fake (tests/gateway/upstream.py), once at its
OpenAI-compatible chat completions (the service's default upstream) and once at its Anthropic-shaped /v1/messages
(a profile whose model is ``anthropic/...`` at the fake's URL). Every test asserts on what reached the fake: the
system prompt, tools, images and cache marks as the client sent them.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Iterator
from typing import Any, get_type_hints

import httpx
import litellm
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tda.api.anthropic_wire import FORWARDED, REFUSED_FIELDS, CountTokensRequest, MessagesRequest
from tests.gateway.servers import MODEL, UPSTREAM_KEY
from tests.gateway.support import SYSTEM_PROMPT, Gateway, balance_of, png_data_url, text_of
from tests.gateway.upstream import THINKING, TOOL_ARGUMENT, TOOL_RESULT_PREFIX, FakeUpstream, Recorded

anthropic = pytest.importorskip("anthropic", reason="the test extra pins anthropic (pip install -e '.[test]')")

CLAUDE = "anthropic/claude-sonnet-4-5"
"""The Anthropic-native profile's model: litellm calls it at the fake's /v1/messages in Anthropic's format."""
CACHE = {"type": "ephemeral"}
GET_BALANCE = {
    "name": "get_balance",
    "description": "The current balance of a bank account.",
    "input_schema": {
        "type": "object",
        "properties": {"account": {"type": "string", "description": "The account number."}},
        "required": ["account"],
    },
    "cache_control": CACHE,
}
PNG = png_data_url().removeprefix("data:image/png;base64,")
SYSTEM = [{"type": "text", "text": SYSTEM_PROMPT, "cache_control": CACHE}]
QUESTION = [
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
    {"type": "text", "text": "What is the balance of the account in this picture?", "cache_control": CACHE},
]


@pytest.fixture(scope="module")
def claude_profile(tda_server: Gateway, fake_upstream: FakeUpstream) -> str:
    """A profile whose model is Claude at the fake's Anthropic-shaped API (its root URL: litellm adds /v1/messages)."""
    root = fake_upstream.base_url.removesuffix("/v1")
    body = {
        "id": "claude",
        "type": "tool_enabled",
        "system_prompt": "",
        "model": CLAUDE,
        "upstream": {"base_url": root, "api_key_env": "FAKE_UPSTREAM_KEY"},
    }
    r = httpx.post(
        tda_server.base_url + "/profiles", json=body, headers={"Authorization": f"Bearer {tda_server.token}"}
    )
    assert r.status_code == 201, r.text
    return "tda/claude"


@pytest.fixture(params=["openai", "anthropic"])
def target(request: pytest.FixtureRequest, upstream: FakeUpstream) -> Iterator[str]:
    """The model a client names: the default profile's (at the fake's chat completions) or the Claude profile's."""
    yield MODEL if request.param == "openai" else request.getfixturevalue("claude_profile")


def _root(gateway: Gateway) -> str:
    return gateway.base_url.removesuffix("/v1")


def _client(gateway: Gateway, **headers: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=_root(gateway), api_key=gateway.token, max_retries=0, default_headers=headers)


def _async_client(gateway: Gateway, **headers: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=_root(gateway), api_key=gateway.token, max_retries=0, default_headers=headers
    )


def _model_calls(upstream: FakeUpstream) -> list[Recorded]:
    return [r for r in upstream.requests if r.path in ("/chat/completions", "/messages")]


def _answer_to(tool_use: Any, result: str) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in tool_use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use[-1].id, "content": result}]},
    ]


def _assert_sent_as_sent(recorded: Recorded) -> None:
    """The system prompt, the tool, the image and every cache mark reached the model as the client sent them."""
    body = recorded.body
    if recorded.path == "/messages":  # Anthropic's format: the blocks themselves
        assert body["system"] == SYSTEM
        (tool,) = body["tools"]
        assert {k: tool[k] for k in GET_BALANCE} == GET_BALANCE
        first = body["messages"][0]["content"]
        assert first[0]["source"] == QUESTION[0]["source"]
        assert first[1] == QUESTION[1]
        assert recorded.headers["x-api-key"] == UPSTREAM_KEY
        return
    system, question = body["messages"][0], body["messages"][1]  # chat completions: their chat equivalents
    assert system["role"] == "system" and system["content"] == [
        {"type": "text", "text": SYSTEM_PROMPT, "cache_control": CACHE}
    ]
    (tool,) = body["tools"]
    assert tool["function"]["name"] == "get_balance"
    assert tool["function"]["parameters"] == GET_BALANCE["input_schema"]
    assert question["content"][0]["image_url"]["url"] == png_data_url()
    assert question["content"][1] == QUESTION[1]
    assert recorded.headers["authorization"] == f"Bearer {UPSTREAM_KEY}"


# --- the tool loop, three ways ---------------------------------------------------------------------------


async def test_the_async_sdk_completes_a_tool_loop(tda_server: Gateway, upstream: FakeUpstream, target: str):
    client = _async_client(tda_server)
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    first = await client.messages.create(
        model=target, max_tokens=300, system=SYSTEM, tools=[GET_BALANCE], messages=messages
    )
    assert first.stop_reason == "tool_use" and first.role == "assistant" and first.type == "message"
    (call,) = [b for b in first.content if b.type == "tool_use"]
    assert call.name == "get_balance" and call.input == {"account": TOOL_ARGUMENT}
    messages += _answer_to(first.content, balance_of(TOOL_ARGUMENT))
    second = await client.messages.create(
        model=target, max_tokens=300, system=SYSTEM, tools=[GET_BALANCE], messages=messages
    )
    assert second.stop_reason == "end_turn"
    assert [b.text for b in second.content if b.type == "text"] == [TOOL_RESULT_PREFIX + balance_of(TOOL_ARGUMENT)]
    assert second.usage.input_tokens > 0 and second.usage.output_tokens > 0
    sent = _model_calls(upstream)
    assert len(sent) == 2
    for recorded in sent:
        _assert_sent_as_sent(recorded)
    await client.close()


def test_the_sync_sdk_streams_a_tool_loop(tda_server: Gateway, upstream: FakeUpstream, target: str):
    client = _client(tda_server, **{"X-TDA-Session": f"claude-{uuid.uuid4().hex[:12]}"})
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    with client.messages.stream(
        model=target, max_tokens=300, system=SYSTEM, tools=[GET_BALANCE], messages=messages
    ) as stream:
        events = [event.type for event in stream]
        first = stream.get_final_message()
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert "content_block_start" in events and "content_block_stop" in events
    (call,) = [b for b in first.content if b.type == "tool_use"]
    assert call.input == {"account": TOOL_ARGUMENT} and first.stop_reason == "tool_use"
    messages += _answer_to(first.content, balance_of("ACC-7"))
    with client.messages.stream(
        model=target, max_tokens=300, system=SYSTEM, tools=[GET_BALANCE], messages=messages
    ) as stream:
        text = "".join(stream.text_stream)
        second = stream.get_final_message()
    assert text == TOOL_RESULT_PREFIX + balance_of("ACC-7")
    assert second.stop_reason == "end_turn" and second.usage.output_tokens > 0
    sent = _model_calls(upstream)
    assert len(sent) == 2 and all(r.body.get("stream") for r in sent)
    for recorded in sent:
        _assert_sent_as_sent(recorded)
    client.close()


async def test_the_async_sdk_streams_text_deltas(tda_server: Gateway, upstream: FakeUpstream, target: str):
    client = _async_client(tda_server)
    deltas = []
    async with client.messages.stream(
        model=target, max_tokens=100, messages=[{"role": "user", "content": "Say something"}]
    ) as stream:
        async for event in stream:
            if event.type == "content_block_delta":
                deltas.append(event.delta.type)
        final = await stream.get_final_message()
    assert deltas and set(deltas) == {"text_delta"}
    assert final.content[0].type == "text" and final.content[0].text.endswith("Say something")
    await client.close()


async def test_a_session_records_the_tool_loop_as_one_turn(tda_server: Gateway, upstream: FakeUpstream):
    session = f"claude-{uuid.uuid4().hex[:12]}"
    client = _async_client(tda_server, **{"X-TDA-Session": session})
    messages: list[Any] = [{"role": "user", "content": "Balance of ACC-42?"}]
    first = await client.messages.create(model=MODEL, max_tokens=50, tools=[GET_BALANCE], messages=messages)
    messages += _answer_to(first.content, balance_of("ACC-42"))
    await client.messages.create(model=MODEL, max_tokens=50, tools=[GET_BALANCE], messages=messages)
    again = await client.messages.with_raw_response.create(
        model=MODEL, max_tokens=50, tools=[GET_BALANCE], messages=messages
    )  # a retry of the same step
    assert again.headers["X-TDA-Session"] == session and again.headers["X-TDA-Turn"] == "1"
    turns = (await tda_server.get(f"/v1/sessions/{session}/turns")).json()
    assert [t["turn"] for t in turns["turns"]] == [1]
    anew = await client.messages.with_raw_response.create(
        model=MODEL, max_tokens=50, tools=[GET_BALANCE], messages=messages, extra_headers={"X-TDA-New-Turn": "true"}
    )  # the same request sent again as a new turn, as the chat route takes it
    assert anew.headers["X-TDA-Turn"] == "2"
    await client.close()


@pytest.mark.parametrize("stream", [False, True])
async def test_claude_s_thinking_comes_back_signed_and_goes_back_as_sent(
    tda_server: Gateway, upstream: FakeUpstream, claude_profile: str, stream: bool
):
    """Extended thinking with tool use: the reply's signed thinking block reaches the client (streamed as
    thinking and signature deltas), and the next step sends it back to Claude before the tool call, as Anthropic
    requires; the session records the loop as one turn all the same."""
    session = f"think-{uuid.uuid4().hex[:12]}"
    client = _async_client(tda_server, **{"X-TDA-Session": session})
    thinking: Any = {"type": "enabled", "budget_tokens": 1024}
    messages: list[Any] = [{"role": "user", "content": "Balance of ACC-42?"}]
    request: Any = {"model": claude_profile, "max_tokens": 2048, "thinking": thinking, "tools": [GET_BALANCE]}
    if stream:
        async with client.messages.stream(**request, messages=messages) as events:
            kinds = [e.delta.type async for e in events if e.type == "content_block_delta"]
            first = await events.get_final_message()
        assert kinds[:2] == ["thinking_delta", "signature_delta"]
    else:
        first = await client.messages.create(**request, messages=messages)
    assert [b.type for b in first.content] == ["thinking", "tool_use"]
    thought = first.content[0].model_dump(exclude_none=True)
    assert thought["thinking"] == THINKING and thought["signature"].startswith("sig-fake-")
    messages += _answer_to(first.content, balance_of("ACC-42"))
    second = await client.messages.create(**request, messages=messages)
    assert [b.type for b in second.content] == ["thinking", "text"]
    sent_back = _model_calls(upstream)[1].body["messages"][1]["content"]
    assert sent_back[0] == thought and sent_back[1]["type"] == "tool_use"
    turns = (await tda_server.get(f"/v1/sessions/{session}/turns")).json()["turns"]
    assert [t["turn"] for t in turns] == [1]
    await client.close()


async def test_the_beta_header_and_a_top_level_cache_mark_reach_claude(
    tda_server: Gateway, upstream: FakeUpstream, claude_profile: str
):
    """``anthropic-beta`` goes on to Claude's API (never to an OpenAI-compatible one); the request-level
    ``cache_control`` (automatic caching) marks the last block, as Anthropic applies it."""
    client = _async_client(tda_server)
    beta = "interleaved-thinking-2025-05-14"
    for model in (claude_profile, MODEL):
        await client.messages.create(
            model=model,
            max_tokens=50,
            messages=[{"role": "user", "content": "Hi"}],
            extra_headers={"anthropic-beta": beta},
            extra_body={"cache_control": CACHE},
        )
    to_claude, to_openai = _model_calls(upstream)
    assert beta in to_claude.headers["anthropic-beta"].split(",")
    assert "anthropic-beta" not in to_openai.headers
    assert to_claude.body["messages"][-1]["content"][-1] == {"type": "text", "text": "Hi", "cache_control": CACHE}
    await client.close()


async def test_the_beta_client_as_claude_code_calls_it(
    tda_server: Gateway, upstream: FakeUpstream, claude_profile: str
):
    """Claude Code's shape: the SDK's beta client (``/v1/messages?beta=true`` with ``anthropic-beta``), system
    blocks with a cache mark, ``metadata.user_id``, ``tool_choice`` any, streamed; and its token count first."""
    client = _async_client(tda_server)
    betas = ["interleaved-thinking-2025-05-14", "context-management-2025-06-27"]
    request: Any = {
        "model": claude_profile,
        "max_tokens": 500,
        "system": [{"type": "text", "text": "You are Claude Code."}, *SYSTEM],
        "tools": [GET_BALANCE],
        "tool_choice": {"type": "any"},
        "metadata": {"user_id": "user_abc_account_1_session_2"},
        "messages": [{"role": "user", "content": QUESTION}],
        "betas": betas,
    }
    counted = await client.beta.messages.count_tokens(
        **{k: v for k, v in request.items() if k not in ("max_tokens", "metadata")}
    )
    assert counted.input_tokens > 0
    async with client.beta.messages.stream(**request) as stream:
        final = await stream.get_final_message()
    assert final.stop_reason == "tool_use" and final.content[-1].input == {"account": TOOL_ARGUMENT}
    (sent,) = _model_calls(upstream)
    assert set(betas) <= set(sent.headers["anthropic-beta"].split(","))
    assert sent.body["system"] == request["system"] and sent.body["tool_choice"]["type"] == "any"
    assert sent.body["metadata"] == {"user_id": "user_abc_account_1_session_2"}
    await client.close()


# --- count_tokens --------------------------------------------------------------------------------------------


TEXT = st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))
"""Any text a field may hold (tda refuses NUL with a 422 of its own; JSON cannot carry lone surrogates)."""


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    system=st.text(TEXT, min_size=1, max_size=300),
    user=st.text(TEXT, min_size=1, max_size=600),
    with_tool=st.booleans(),
)
def test_count_tokens_is_never_below_litellm_s_count(
    tda_server: Gateway, system: str, user: str, with_tool: bool
) -> None:
    client = _client(tda_server)
    tools = [GET_BALANCE] if with_tool else []
    counted = client.messages.count_tokens(
        model=MODEL, system=system, tools=tools, messages=[{"role": "user", "content": user}]
    )
    chat = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    openai_tools = [
        {
            "type": "function",
            "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]},
        }
        for t in tools
    ]
    assert counted.input_tokens >= litellm.token_counter(model=MODEL, messages=chat, tools=openai_tools or None)
    client.close()


def test_count_tokens_counts_an_image(tda_server: Gateway) -> None:
    client = _client(tda_server)
    plain = client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": QUESTION[1]["text"]}])
    with_image = client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": QUESTION}])
    assert with_image.input_tokens > plain.input_tokens
    client.close()


# --- what tda refuses, in Anthropic's shape ----------------------------------------------------------------


@pytest.mark.parametrize("field", ["api_base", "base_url", "api_key", "extra_headers", "custom_llm_provider"])
def test_routing_and_credential_fields_are_refused_naming_the_field(
    tda_server: Gateway, upstream: FakeUpstream, field: str
) -> None:
    client = _client(tda_server)
    with pytest.raises(anthropic.UnprocessableEntityError) as refused:
        client.messages.create(
            model=MODEL,
            max_tokens=10,
            messages=[{"role": "user", "content": "Hi"}],
            extra_body={field: "http://attacker.example"},
        )
    assert field in str(refused.value) and "chooses where the model is called" in str(refused.value)
    assert refused.value.body["type"] == "error" and refused.value.body["error"]["type"] == "invalid_request_error"
    assert not _model_calls(upstream)
    client.close()


def test_every_field_of_the_sdk_s_requests_is_read_or_refused_by_name() -> None:
    """The published request schemas (the SDK's own params, beta ones too) against what tda declares: a field tda
    does not declare would be refused as unknown, so each is declared, then handled, forwarded or refused with its
    own reason (REFUSED_FIELDS); none is dropped without a word."""
    from anthropic.types import message_count_tokens_params, message_create_params
    from anthropic.types.beta import message_create_params as beta_create_params

    sdk = set(get_type_hints(message_create_params.MessageCreateParamsBase)) | {"stream"}
    beta = set(get_type_hints(beta_create_params.MessageCreateParamsBase)) - {"betas"}  # betas: a header
    assert sdk | beta <= set(MessagesRequest.model_fields)
    counted = set(get_type_hints(message_count_tokens_params.MessageCountTokensParams)) - {"betas"}
    assert counted <= set(CountTokensRequest.model_fields)
    handled = {"model", "messages", "system", "tools", "tool_choice", "max_tokens", "stream", "stop_sequences"}
    handled |= {"metadata", "cache_control", "temperature", "top_p"}
    for name in MessagesRequest.model_fields:
        assert name in handled or name in FORWARDED or name in REFUSED_FIELDS, name


def test_a_wrong_key_is_an_authentication_error(tda_server: Gateway) -> None:
    client = anthropic.Anthropic(base_url=_root(tda_server), api_key="tda_wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as refused:
        client.messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "Hi"}])
    assert refused.value.body["error"]["type"] == "authentication_error"
    client.close()


def test_a_conversation_without_a_user_message_is_refused(tda_server: Gateway, upstream: FakeUpstream) -> None:
    client = _client(tda_server)
    with pytest.raises(anthropic.UnprocessableEntityError, match="user message"):
        client.messages.create(model=MODEL, max_tokens=10, messages=[{"role": "assistant", "content": "Hello"}])
    assert not _model_calls(upstream)
    client.close()


def test_empty_content_is_a_422_not_a_500(tda_server: Gateway, upstream: FakeUpstream) -> None:
    client = _client(tda_server)
    with pytest.raises(anthropic.UnprocessableEntityError, match="user message"):
        client.messages.create(
            model=MODEL, max_tokens=10, messages=[{"role": "user", "content": []}], extra_body={"cache_control": CACHE}
        )
    assert not _model_calls(upstream)
    client.close()


def test_hosted_tools_and_files_are_refused_with_what_to_send(tda_server: Gateway) -> None:
    client = _client(tda_server)
    with pytest.raises(anthropic.UnprocessableEntityError, match="custom tools"):
        client.messages.create(
            model=MODEL,
            max_tokens=10,
            tools=[{"type": "web_search_20250305", "name": "web_search"}],
            messages=[{"role": "user", "content": "Hi"}],
        )
    file_image = {"type": "image", "source": {"type": "file", "file_id": "file_1"}}
    with pytest.raises(anthropic.UnprocessableEntityError, match="base64"):
        client.messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": [file_image]}])
    client.close()


async def test_a_document_and_thinking_blocks(tda_server: Gateway, upstream: FakeUpstream, claude_profile: str):
    """A PDF reaches Claude as a document block; the assistant's thinking goes back to Claude as sent (signed), and
    never to an OpenAI-compatible model."""
    pdf = base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode()
    thinking = {"type": "thinking", "thinking": "The user wants a greeting.", "signature": "sig-123"}
    messages: list[Any] = [
        {
            "role": "user",
            "content": [
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": pdf}},
                {"type": "text", "text": "Summarise it"},
            ],
        },
        {"role": "assistant", "content": [thinking, {"type": "text", "text": "It is empty."}]},
        {"role": "user", "content": "Thanks"},
    ]
    client = _async_client(tda_server)
    for model in (claude_profile, MODEL):
        await client.messages.create(model=model, max_tokens=50, messages=messages)
    to_claude, to_openai = _model_calls(upstream)
    document = to_claude.body["messages"][0]["content"][0]
    assert document["type"] == "document" and document["source"]["data"] == pdf
    assert to_claude.body["messages"][1]["content"][0] == thinking
    assert "sig-123" not in to_openai.text and "It is empty." in to_openai.text
    await client.close()


def test_stop_sequences_and_sampling_reach_the_model(tda_server: Gateway, upstream: FakeUpstream) -> None:
    client = _client(tda_server)
    client.messages.create(
        model=MODEL,
        max_tokens=77,
        stop_sequences=["END"],
        metadata={"user_id": "user-9"},
        messages=[{"role": "user", "content": "Hi"}],
        extra_body={"temperature": 0.3, "top_p": 0.9},  # the API's sampling fields (the 2.x SDK has no argument)
    )
    (sent,) = _model_calls(upstream)
    body = sent.body
    assert (body["max_tokens"], body["temperature"], body["top_p"]) == (77, 0.3, 0.9)
    assert body["stop"] == ["END"] and body["user"] == "user-9"
    client.close()


async def test_concurrent_clients_do_not_mix(tda_server: Gateway, upstream: FakeUpstream):
    client = _async_client(tda_server)
    words = [f"word-{i}" for i in range(4)]
    replies = await asyncio.gather(
        *(client.messages.create(model=MODEL, max_tokens=20, messages=[{"role": "user", "content": w}]) for w in words)
    )
    assert [r.content[0].text.rsplit(" ", 1)[-1] for r in replies] == words
    assert sorted(text_of(r.body["messages"][-1]["content"]) for r in _model_calls(upstream)) == words
    await client.close()
