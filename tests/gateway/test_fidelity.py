"""The gateway is faithful: what the client sends reaches the model, once, and nothing else's does (issue 22).

The raw `openai` SDK drives a real `tda serve` (mock model off) whose upstream is the recording fake
(tests/gateway/upstream.py); every test asserts on the request bodies that reached the fake, not only on the reply.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import jsonschema
import litellm
import openai
import pytest

from tests.gateway.servers import MODEL, UPSTREAM_KEY
from tests.gateway.support import (
    GET_BALANCE,
    SYSTEM_PROMPT,
    Gateway,
    answered_call_ids,
    balance_of,
    leading_instructions,
    png_data_url,
    text_of,
    tool_names,
    tool_results,
    user_texts,
)
from tests.gateway.upstream import ECHO_PREFIX, TOOL_ARGUMENT, TOOL_RESULT_PREFIX, FakeUpstream


def _session() -> dict[str, str]:
    return {"X-TDA-Session": f"fid-{uuid.uuid4().hex[:12]}"}


def _only_call(upstream: FakeUpstream) -> dict[str, Any]:
    calls = upstream.calls()
    assert len(calls) == 1, f"one client call made {len(calls)} upstream calls: {[c.text[:200] for c in calls]}"
    return calls[0].body


async def _tool_loop(client: openai.AsyncOpenAI, headers: dict[str, str], question: str, result: str) -> str:
    """Two client calls: the model calls get_balance, the client answers with ``result``; the final text."""
    messages: list[Any] = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]
    first = await client.chat.completions.create(
        model=MODEL, messages=messages, tools=[GET_BALANCE], extra_headers=headers
    )
    call = first.choices[0].message.tool_calls[0]
    assert call.function.name == "get_balance" and json.loads(call.function.arguments) == {"account": TOOL_ARGUMENT}
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": result},
    ]
    second = await client.chat.completions.create(
        model=MODEL, messages=messages, tools=[GET_BALANCE], extra_headers=headers
    )
    return second.choices[0].message.content or ""


# --- the conversation is the client's ------------------------------------------------------------------


@pytest.mark.parametrize("role", ["system", "developer"])
async def test_the_client_system_prompt_reaches_the_model_first(gateway: Gateway, upstream: FakeUpstream, role: str):
    client = gateway.client()
    await client.chat.completions.create(
        model=MODEL, messages=[{"role": role, "content": SYSTEM_PROMPT}, {"role": "user", "content": "Hello"}]
    )
    body = _only_call(upstream)
    assert SYSTEM_PROMPT in leading_instructions(upstream.calls()[0]), body["messages"]


@pytest.mark.parametrize("header", [False, True], ids=["no-session-header", "session-header"])
async def test_a_tool_loop_completes_with_one_upstream_call_per_client_call(
    gateway: Gateway, upstream: FakeUpstream, header: bool
):
    answer = await _tool_loop(
        gateway.client(), _session() if header else {}, "Balance of ACC-42?", balance_of("ACC-42")
    )
    assert answer == TOOL_RESULT_PREFIX + balance_of("ACC-42")
    first, second = upstream.calls()  # exactly two
    assert tool_names(first) == tool_names(second) == ["get_balance"]
    results = tool_results(second)
    assert [r["content"] for r in results] == [balance_of("ACC-42")], second.body["messages"]
    assert results[0]["tool_call_id"] in answered_call_ids(second)  # the call and its result, paired
    assert SYSTEM_PROMPT in leading_instructions(first) and SYSTEM_PROMPT in leading_instructions(second)


async def test_a_streamed_tool_loop_without_a_session_header(gateway: Gateway, upstream: FakeUpstream):
    client = gateway.client()
    messages: list[Any] = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "Balance?"}]
    calls: dict[int, dict[str, str]] = {}
    async for chunk in await client.chat.completions.create(
        model=MODEL, messages=messages, tools=[GET_BALANCE], stream=True
    ):
        for choice in chunk.choices:
            for delta in choice.delta.tool_calls or ():
                call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                call["id"] += delta.id or ""
                call["name"] += (delta.function and delta.function.name) or ""
                call["arguments"] += (delta.function and delta.function.arguments) or ""
    assert [c["name"] for c in calls.values()] == ["get_balance"]
    tool_call = {
        "id": calls[0]["id"],
        "type": "function",
        "function": {"name": "get_balance", "arguments": calls[0]["arguments"]},
    }
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [tool_call]},
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": balance_of("ACC-7")},
    ]
    text = ""
    async for chunk in await client.chat.completions.create(
        model=MODEL, messages=messages, tools=[GET_BALANCE], stream=True
    ):
        text += "".join(c.delta.content or "" for c in chunk.choices)
    assert text == TOOL_RESULT_PREFIX + balance_of("ACC-7")
    assert len(upstream.calls()) == 2
    assert [r["content"] for r in tool_results(upstream.calls()[1])] == [balance_of("ACC-7")]


async def test_no_tools_reach_the_model_when_the_client_sends_none(gateway: Gateway, upstream: FakeUpstream):
    reply = await gateway.client().chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Just talk."}], extra_headers=_session()
    )
    assert reply.choices[0].message.content == ECHO_PREFIX + "Just talk."
    assert not _only_call(upstream).get("tools")


async def test_a_retry_of_the_same_messages_is_the_same_turn(gateway: Gateway, upstream: FakeUpstream):
    headers = _session()
    client = gateway.client()
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "What is my balance, retry?"}]
    for _ in range(2):  # the client timed out and sends the very same request again
        await client.chat.completions.create(model=MODEL, messages=messages, extra_headers=headers)
    retried = upstream.calls()[-1]
    assert user_texts(retried).count("What is my balance, retry?") == 1, retried.body["messages"]
    session = await gateway.session(headers["X-TDA-Session"])
    assert len(session["turns"]) == 1, f"a retry made {len(session['turns'])} turns"


async def test_an_edited_history_is_respected(gateway: Gateway, upstream: FakeUpstream):
    headers = _session()
    client = gateway.client()
    said = [{"role": "user", "content": "My name is Alice."}]
    await client.chat.completions.create(model=MODEL, messages=said, extra_headers=headers)
    edited = [  # the user edited their first message (the client's copy of the reply mentions no name) and asks on
        {"role": "user", "content": "My name is Bob."},
        {"role": "assistant", "content": "Nice to meet you."},
        {"role": "user", "content": "What is my name?"},
    ]
    await client.chat.completions.create(model=MODEL, messages=edited, extra_headers=headers)
    sent = upstream.calls()[-1]
    assert "Bob" in sent.text
    assert "Alice" not in sent.text, [m for m in sent.body["messages"] if "Alice" in json.dumps(m)]


# --- parameters pass through ---------------------------------------------------------------------------

PASSED_THROUGH = {
    "temperature": 0.3,
    "top_p": 0.9,
    "seed": 7,
    "stop": ["END"],
    "user": "user-17",
    "presence_penalty": 0.5,
    "frequency_penalty": 0.25,
    "logprobs": True,
    "top_logprobs": 2,
    "metadata": {"ticket": "T-1"},
    "response_format": {"type": "json_object"},
}


@pytest.mark.parametrize("name", list(PASSED_THROUGH))
async def test_a_parameter_passes_through(gateway: Gateway, upstream: FakeUpstream, name: str):
    value = PASSED_THROUGH[name]
    extra = {"store": True} if name == "metadata" else {}  # OpenAI stores a completion's metadata
    await gateway.client().chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Answer in JSON."}], **{name: value}, **extra
    )
    body = _only_call(upstream)
    assert body.get(name) == value, f"{name}: sent {value!r}, upstream got {body.get(name)!r}"


async def test_parallel_tool_calls_passes_through(gateway: Gateway, upstream: FakeUpstream):
    await gateway.client().chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Balance?"}], tools=[GET_BALANCE], parallel_tool_calls=False
    )
    assert _only_call(upstream).get("parallel_tool_calls") is False


async def test_response_format_json_schema_passes_through_and_the_reply_matches(
    gateway: Gateway, upstream: FakeUpstream
):
    schema = {
        "type": "object",
        "properties": {"account": {"type": "string"}, "balance": {"type": "number"}},
        "required": ["account", "balance"],
        "additionalProperties": False,
    }
    response_format = {"type": "json_schema", "json_schema": {"name": "balance", "schema": schema, "strict": True}}
    reply = await gateway.client().chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Balance as JSON."}], response_format=response_format
    )
    assert _only_call(upstream).get("response_format") == response_format
    jsonschema.validate(json.loads(reply.choices[0].message.content), schema)


async def test_n_choices(gateway: Gateway, upstream: FakeUpstream):
    reply = await gateway.client().chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Two ideas."}], n=2
    )
    assert _only_call(upstream).get("n") == 2
    assert [c.index for c in reply.choices] == [0, 1]
    assert [c.message.content for c in reply.choices] == [ECHO_PREFIX + "Two ideas."] * 2


async def test_strict_tools_stay_strict(gateway: Gateway, upstream: FakeUpstream):
    strict = json.loads(json.dumps(GET_BALANCE))
    strict["function"]["strict"] = True
    strict["function"]["parameters"]["additionalProperties"] = False
    await gateway.client().chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Balance?"}], tools=[strict]
    )
    (sent,) = _only_call(upstream)["tools"]
    assert sent["function"].get("strict") is True, sent
    assert sent["function"]["parameters"] == strict["function"]["parameters"]  # strict mode validates against it


async def test_an_image_reaches_the_model_in_its_message(gateway: Gateway, upstream: FakeUpstream):
    image = png_data_url()
    parts = [
        {"type": "text", "text": "What colour is this picture?"},
        {"type": "image_url", "image_url": {"url": image}},
    ]
    await gateway.client().chat.completions.create(model=MODEL, messages=[{"role": "user", "content": parts}])
    messages = _only_call(upstream)["messages"]
    carrying = [m for m in messages if image in json.dumps(m)]
    assert len(carrying) == 1, "the image did not reach the model" if not carrying else "the image was sent twice"
    message = carrying[0]
    assert message["role"] == "user" and "What colour is this picture?" in text_of(message["content"])
    images = [p["image_url"]["url"] for p in message["content"] if p.get("type") == "image_url"]
    assert images == [image], message["content"]


def _max_tokens(body: dict[str, Any]) -> int | None:
    return body.get("max_completion_tokens") or body.get("max_tokens")


async def test_max_tokens_sent_upstream_is_within_the_models_output_limit(gateway: Gateway, upstream: FakeUpstream):
    limit = litellm.get_model_info(MODEL)["max_output_tokens"]
    assert limit == 32_768  # gpt-4.1's, from litellm's map (the oracle)
    await gateway.client().chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    sent = _max_tokens(_only_call(upstream))
    assert sent is None or sent <= limit, f"max_tokens {sent} upstream exceeds {MODEL}'s output limit {limit}"


async def test_the_clients_max_tokens_is_kept(gateway: Gateway, upstream: FakeUpstream):
    await gateway.client().chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Hi"}], max_completion_tokens=100
    )
    assert _max_tokens(_only_call(upstream)) == 100


async def test_the_upstream_gets_its_own_key_never_the_clients_token(gateway: Gateway, upstream: FakeUpstream):
    await gateway.client().chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    sent = upstream.calls()[0]
    assert sent.headers.get("authorization") == f"Bearer {UPSTREAM_KEY}"
    assert gateway.token not in json.dumps(sent.headers) + sent.text


# --- the rest of OpenAI's surface ----------------------------------------------------------------------


async def test_models_are_listed_in_openais_shape(gateway: Gateway, upstream: FakeUpstream):
    page = await gateway.client().models.list()
    models = page.data
    assert models, "GET /v1/models listed no model"
    for model in models:
        assert model.object == "model" and isinstance(model.id, str) and model.id
        assert isinstance(model.created, int) and isinstance(model.owned_by, str)
    assert MODEL in [m.id for m in models], "the service's configured model is not listed"
    raw = (await gateway.get("/v1/models")).json()
    assert raw["object"] == "list"


async def test_a_responses_tool_loop_with_instructions(gateway: Gateway, upstream: FakeUpstream):
    client = gateway.client()
    tool = {"type": "function", **GET_BALANCE["function"]}
    first = await client.responses.create(
        model=MODEL, instructions=SYSTEM_PROMPT, input="Balance of ACC-42?", tools=[tool]
    )
    calls = [item for item in first.output if item.type == "function_call"]
    assert [c.name for c in calls] == ["get_balance"], first.output
    follow_up = [
        {"role": "user", "content": "Balance of ACC-42?"},
        {"type": "function_call", "call_id": calls[0].call_id, "name": "get_balance", "arguments": calls[0].arguments},
        {"type": "function_call_output", "call_id": calls[0].call_id, "output": balance_of("ACC-42")},
    ]
    second = await client.responses.create(model=MODEL, instructions=SYSTEM_PROMPT, input=follow_up, tools=[tool])
    assert second.output_text == TOOL_RESULT_PREFIX + balance_of("ACC-42")
    sent = upstream.requests
    assert len(sent) == 2, f"two client calls made {len(sent)} upstream calls"
    assert SYSTEM_PROMPT in sent[0].text and balance_of("ACC-42") in sent[1].text


@pytest.mark.parametrize(("method", "path"), [("GET", "/v1/no-such-thing"), ("POST", "/v1/chat/completion")])
async def test_unknown_routes_answer_in_openais_error_shape(gateway: Gateway, method: str, path: str):
    r = await (gateway.get(path) if method == "GET" else gateway.post(path, {"model": MODEL}))
    assert r.status_code == 404
    error = r.json().get("error")
    assert isinstance(error, dict), r.text
    assert isinstance(error.get("message"), str) and error["message"]
    assert isinstance(error.get("type"), str) and "code" in error


# --- isolation -----------------------------------------------------------------------------------------

SECRET = "owner John Smith, balance 1234.56 EUR"


async def test_no_cross_session_leak(gateway: Gateway, upstream: FakeUpstream):
    client = gateway.client()
    await _tool_loop(client, _session(), "Who owns ACC-42 and what is its balance?", SECRET)
    assert SECRET in upstream.calls()[-1].text  # session A's model saw it
    upstream.clear()
    question = [{"role": "user", "content": "Who owns ACC-42 and what is its balance?"}]
    await client.chat.completions.create(model=MODEL, messages=question, extra_headers=_session())  # fresh session B
    await client.chat.completions.create(model=MODEL, messages=question)  # no header at all
    await client.chat.completions.create(model=MODEL, messages=question, tools=[GET_BALANCE])
    assert len(upstream.requests) == 3
    for sent in upstream.requests:
        assert "John Smith" not in sent.text and "1234.56" not in sent.text, sent.text
