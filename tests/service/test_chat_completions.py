"""POST /v1/chat/completions driven by the real `openai` SDK against a real served app (hypercorn on 127.0.0.1).

The model is litellm's mock, scripted reply by reply (tests.service.support.ScriptedModel): the service's
own litellm path runs; only the provider is not called.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import openai
import pytest

from tda.events import stream_key
from tests.service.support import Served

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_orders",
            "description": "Look up a customer's orders. Returns one row per order with its status and amount.",
            "parameters": {
                "type": "object",
                "properties": {"customer": {"type": "string", "description": "The customer's name, e.g. ACME."}},
                "required": ["customer"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "send_email",
            "description": "Send an email to a recipient.",
            "parameters": {
                "type": "object",
                "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
                "required": ["to", "body"],
            },
        },
    },
]
ORDERS = [
    {"order": 1, "status": "open", "amount": 120.5},
    {"order": 2, "status": "open", "amount": 80.0},
    {"order": 3, "status": "open", "amount": 42.25},
]


def _module(snapshot: dict[str, Any], module_id: str) -> dict[str, Any]:
    return next(m for m in snapshot["modules"] if m["module_id"] == module_id)


async def _sessions(served: Served) -> set[str]:
    return {s["id"] for s in (await served.get("/v1/sessions"))["sessions"]}


async def test_a_tool_loop_then_a_second_turn_through_the_openai_sdk(served: Served):
    served.model.replies = [
        [("call_1", "lookup_orders", {"customer": "ACME"})],
        "ACME has 3 open orders.",
        "They total 242.75.",
    ]
    client = served.client()
    profile_tools = [{"type": "function", "function": {"name": "search_orders", "parameters": {"type": "object"}}}]
    await served.svc.store.profiles.create("agent", {"type": "genie", "tools": profile_tools}, "test")
    session = {"X-TDA-Session": "agent-1", "X-TDA-Profile": "agent"}
    events = served.svc.bus.subscribe(stream_key("default", "agent-1"))
    messages: list[Any] = [
        {"role": "system", "content": "You are the sales agent."},
        {"role": "user", "content": "How many open orders does ACME have?"},
    ]

    first = await client.chat.completions.create(model="tda", messages=messages, tools=TOOLS, extra_headers=session)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    call = choice.message.tool_calls[0]
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "call_1",
        "lookup_orders",
        {"customer": "ACME"},
    )
    assert served.model.sent[0]["messages"][0] == {"role": "system", "content": "You are the sales agent."}
    messages += [
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(ORDERS)},
    ]

    second = await client.chat.completions.create(model="tda", messages=messages, tools=TOOLS, extra_headers=session)
    assert second.choices[0].message.content == "ACME has 3 open orders." and second.choices[0].finish_reason == "stop"
    continued = served.model.sent[1]["messages"]
    assert [m["role"] for m in continued[-3:]] == ["user", "assistant", "tool"]  # the turn's loop follows its query
    assert continued[-2]["tool_calls"][0]["id"] == continued[-1]["tool_call_id"] == "call_1"

    messages += [second.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "And in total?"}]
    third = await client.chat.completions.create(model="tda", messages=messages, tools=TOOLS, extra_headers=session)
    assert third.choices[0].message.content == "They total 242.75."

    snapshots = (await served.get("/v1/sessions/agent-1/snapshots?newest_first=true&limit=1"))["snapshots"]
    snapshot = snapshots[0]["snapshot"]
    assert snapshots[0]["turn"] == 2
    for sent in served.model.sent:  # the client's tools, whole and in its order, on every step; never the profile's
        assert sent["tools"] == [{"type": "function", "function": t["function"]} for t in TOOLS]
    sent = served.model.sent[2]
    window = sent["messages"]
    assert window == [m if m.get("content") is not None else {**m, "content": ""} for m in messages]
    assert not any("Results of the previous turn" in str(m["content"]) for m in window)  # the client has them
    assert sent["max_tokens"] is None  # the client sent none, and the model's whole output fits the window
    assert third.usage.prompt_tokens == snapshot["total_used"]

    turns = (await served.get("/v1/sessions/agent-1/turns"))["turns"]
    assert [t["turn"] for t in turns] == [1, 2]
    assert turns[0]["results"] == [{"tool": "lookup_orders", "rows": ORDERS}]
    assert turns[0]["plan"] == 'lookup_orders({"customer": "ACME"})' and turns[0]["outcome"] == "success"
    assert turns[0]["answer"] == "ACME has 3 open orders."
    stored = (await served.get("/v1/sessions/agent-1/messages"))["messages"]
    assert [(m["turn"], m["role"]) for m in stored] == [
        (1, "user"),
        (1, "assistant"),
        (1, "tool"),
        (1, "assistant"),
        (2, "user"),
        (2, "assistant"),
    ]
    published: list[int] = []
    while len(published) < 3:  # heartbeats (id 0) come in between
        event = await asyncio.wait_for(events.next(), 5)
        published += [event.id] * (event.id != 0)
    assert published == [s["id"] for s in (await served.get("/v1/sessions/agent-1/snapshots"))["snapshots"]]
    served.svc.bus.unsubscribe(events)
    for snapshot_id in published:  # each step replays identically: the client's conversation is kept as input
        replay = await served.get(f"/v1/snapshots/{snapshot_id}/replay", "POST")
        assert replay["identical"], json.dumps(replay["differences"])


async def test_without_a_session_a_tool_loop_completes_and_leaves_nothing_behind(served: Served):
    served.model.replies = [[("call_7", "lookup_orders", {"customer": "ACME"})], "Three."]
    client = served.client()
    before = await _sessions(served)
    messages: list[Any] = [{"role": "user", "content": "How many open orders does ACME have?"}]
    raw = await client.chat.completions.with_raw_response.create(model="tda", messages=messages, tools=TOOLS)
    assert "X-TDA-Session" not in raw.headers
    reply = raw.parse().choices[0].message
    messages += [reply.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": "call_7", "content": "3 rows"}]
    done = await client.chat.completions.create(model="tda", messages=messages, tools=TOOLS)
    assert done.choices[0].message.content == "Three."
    assert served.model.sent[1]["messages"][-1] == {"role": "tool", "content": "3 rows", "tool_call_id": "call_7"}
    assert await _sessions(served) == before


async def test_a_retry_is_the_same_turn_and_an_edited_history_is_what_the_model_reads(served: Served):
    client = served.client()
    session = {"X-TDA-Session": "retry-1"}
    chat: list[Any] = [{"role": "user", "content": "My name is Alice."}]
    served.model.replies = ["Hello Alice.", "Hello Alice!", "Your name is Bob."]
    await client.chat.completions.create(model="tda", messages=chat, extra_headers=session)
    retried = await client.chat.completions.create(model="tda", messages=chat, extra_headers=session)
    assert [m["content"] for m in served.model.sent[1]["messages"]] == ["My name is Alice."]  # once, as sent
    turns = (await served.get("/v1/sessions/retry-1/turns"))["turns"]
    assert [t["turn"] for t in turns] == [1] and turns[0]["answer"] == "Hello Alice!"

    edited = [
        {"role": "user", "content": "My name is Bob."},
        {"role": "assistant", "content": retried.choices[0].message.content},
        {"role": "user", "content": "What is my name?"},
    ]
    await client.chat.completions.create(model="tda", messages=edited, extra_headers=session)
    sent = [m["content"] for m in served.model.sent[2]["messages"]]
    assert sent == ["My name is Bob.", "Hello Alice!", "What is my name?"]
    snapshot = (await served.get("/v1/sessions/retry-1/snapshots?newest_first=true&limit=1"))["snapshots"][0]
    assert snapshot["turn"] == 2
    assert (await served.get(f"/v1/snapshots/{snapshot['id']}"))["inputs"]["gateway"]["fork"] is True


async def test_a_request_sent_again_as_a_new_turn_leaves_the_turn_it_repeats_as_it_was(served: Served):
    """X-TDA-New-Turn (the trace page's copies send it): the same conversation is recorded as a turn of its own,
    numbered in its snapshot too; the repeated turn keeps its tokens, answer and snapshot. A bad value is a 422."""
    client = served.client()
    chat: list[Any] = [{"role": "user", "content": "Which depot ships to Lyon?"}]
    served.model.replies = ["Depot 4.", "Depot 4, still."]
    await client.chat.completions.create(model="tda", messages=chat, extra_headers={"X-TDA-Session": "again-1"})
    first = (await served.get("/v1/sessions/again-1/turns"))["turns"]
    again = {"X-TDA-Session": "again-1", "X-TDA-New-Turn": "true"}
    reply = await client.chat.completions.with_raw_response.create(model="tda", messages=chat, extra_headers=again)
    assert reply.headers["X-TDA-Turn"] == "2"
    turns = (await served.get("/v1/sessions/again-1/turns"))["turns"]
    assert turns[0] == first[0] and [t["turn"] for t in turns] == [1, 2] and turns[1]["answer"] == "Depot 4, still."
    snapshots = (await served.get("/v1/sessions/again-1/snapshots"))["snapshots"]
    assert [(r["turn"], r["snapshot"]["turn"]) for r in snapshots] == [(1, 1), (2, 2)]

    for session in ("again-1", "again-unborn"):
        with pytest.raises(openai.UnprocessableEntityError, match="X-TDA-New-Turn 'maybe' is not a yes or no"):
            bad = {"X-TDA-Session": session, "X-TDA-New-Turn": "maybe"}
            await client.chat.completions.create(model="tda", messages=chat, extra_headers=bad)
    assert len((await served.get("/v1/sessions/again-1/turns"))["turns"]) == 2
    assert "again-unborn" not in await _sessions(served)  # nothing half-made


async def test_the_profile_prompt_joins_the_clients_as_the_profile_says(served: Served):
    client = served.client()
    chat = [{"role": "developer", "content": "Client rules."}, {"role": "user", "content": "hi"}]
    expected = {
        "client": ["Client rules."],
        "profile": ["Profile rules."],
        "prepend": ["Profile rules.", "Client rules."],
        "append": ["Client rules.", "Profile rules."],
    }
    for mode, system in expected.items():
        fields = {"type": "llm_only", "system_prompt": "Profile rules.", "system_prompt_mode": mode}
        await served.svc.store.profiles.create(f"p-{mode}", fields, "test")
        await client.chat.completions.create(model=f"tda/p-{mode}", messages=chat)
        sent = served.model.sent[-1]["messages"]
        assert [m["content"] for m in sent if m["role"] == "system"] == system, mode
    await client.chat.completions.create(model="tda/p-client", messages=chat[1:])
    assert served.model.sent[-1]["messages"][0] == {"role": "system", "content": "Profile rules."}


async def test_parameters_images_and_strict_tools_reach_the_model_as_sent(served: Served):
    client = served.client()
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}}
    content = [{"type": "text", "text": "What is in this picture?"}, image]
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    response_format = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": True}}
    strict_tool = {"type": "function", "function": {**TOOLS[0]["function"], "strict": True}}
    await client.chat.completions.create(
        model="tda",
        messages=[{"role": "user", "content": content}],
        tools=[strict_tool],
        temperature=0.2,
        top_p=0.9,
        seed=7,
        stop=["END"],
        user="end-user-1",
        response_format=response_format,
        parallel_tool_calls=False,
        presence_penalty=0.1,
        frequency_penalty=0.2,
        logprobs=True,
        metadata={"run": "r1"},
    )
    sent = served.model.sent[-1]
    assert sent["messages"] == [{"role": "user", "content": content}]
    assert sent["tools"] == [strict_tool]
    assert sent["params"] == {
        "temperature": 0.2,
        "top_p": 0.9,
        "seed": 7,
        "stop": ["END"],
        "user": "end-user-1",
        "response_format": response_format,
        "parallel_tool_calls": False,
        "presence_penalty": 0.1,
        "frequency_penalty": 0.2,
        "logprobs": True,
        "metadata": {"run": "r1"},
    }


async def test_a_client_without_tools_gets_none_though_its_profile_has_some(served: Served):
    tools = [{"type": "function", "function": {"name": "search_orders", "parameters": {"type": "object"}}}]
    await served.svc.store.profiles.create("tooled", {"type": "tool_enabled", "tools": tools}, "test")
    await served.client().chat.completions.create(model="tda/tooled", messages=[{"role": "user", "content": "hi"}])
    assert served.model.sent[-1]["tools"] == []


async def test_a_streamed_reply_arrives_in_openai_chunks_and_is_recorded(served: Served):
    served.model.replies = ["Streaming works fine here.", [("call_9", "send_email", {"to": "ann", "body": "hi"})]]
    client = served.client()
    session = {"X-TDA-Session": "stream-1"}
    stream = await client.chat.completions.create(
        model="tda",
        messages=[{"role": "user", "content": "Say something."}],
        stream=True,
        stream_options={"include_usage": True},
        extra_headers=session,
    )
    chunks = [chunk async for chunk in stream]
    assert {c.model for c in chunks} == {"gpt-4o"} and len({c.id for c in chunks}) == 1
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Streaming works fine here."
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 1  # really in pieces
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage.prompt_tokens > 0 and chunks[-1].usage.completion_tokens > 0
    turns = (await served.get("/v1/sessions/stream-1/turns"))["turns"]
    assert turns[0]["answer"] == text

    stream = await client.chat.completions.create(
        model="tda",
        messages=[
            {"role": "user", "content": "Say something."},
            {"role": "assistant", "content": text},
            {"role": "user", "content": "Mail Ann."},
        ],
        tools=TOOLS,
        stream=True,
        extra_headers=session,
    )
    chunks = [chunk async for chunk in stream]
    calls = [c for chunk in chunks for c in (chunk.choices[0].delta.tool_calls or [])]
    assert calls[0].id == "call_9" and calls[0].function.name == "send_email"
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    turns = (await served.get("/v1/sessions/stream-1/turns"))["turns"]
    assert [t["turn"] for t in turns] == [1, 2]  # the second call extends the first turn's conversation


@pytest.mark.parametrize("wire", ["chat", "responses", "messages"])
async def test_a_streamed_call_whose_window_cannot_be_assembled_is_a_plain_http_error(served: Served, wire: str):
    """The window is assembled before a stream starts (its headers say what it cut): a limit too small for the
    question is a 422 in the wire's own error shape, which the SDK raises, not a stream that opens and then fails;
    the model is not called."""
    await served.svc.store.profiles.create("tiny", {"type": "tool_enabled", "context_limit": 256}, "test")
    question = "word " * 400
    if wire == "messages":
        client = anthropic.AsyncAnthropic(base_url=served.base_url.removesuffix("/v1"), api_key=served.token)
        async with client:
            with pytest.raises(anthropic.UnprocessableEntityError) as refused:
                messages = [{"role": "user", "content": question}]
                await client.messages.create(model="tda/tiny", max_tokens=50, messages=messages, stream=True)
        assert refused.value.body["type"] == "error"  # type: ignore[index]
    else:
        with pytest.raises(openai.UnprocessableEntityError) as error:
            if wire == "chat":
                messages = [{"role": "user", "content": question}]
                await served.client().chat.completions.create(model="tda/tiny", messages=messages, stream=True)
            else:
                await served.client().responses.create(model="tda/tiny", input=question, store=False, stream=True)
        assert error.value.code == "budget_exceeded"
    assert served.model.sent == []


async def test_a_smaller_max_tokens_in_the_request_wins_over_the_reserve(served: Served):
    client = served.client()
    await client.chat.completions.create(model="tda", messages=[{"role": "user", "content": "hi"}], max_tokens=50)
    await client.chat.completions.create(
        model="tda", messages=[{"role": "user", "content": "more"}], max_completion_tokens=10**6
    )
    [small, large] = served.model.sent
    assert small["max_tokens"] == 50 and 50 < large["max_tokens"] < 10**6


async def test_raw_sse_ends_with_done(served: Served):
    import httpx

    served.model.replies = ["ok then"]
    async with httpx.AsyncClient() as http:
        r = await http.post(
            served.base_url + "/chat/completions",
            json={"model": "tda", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
            headers={"Authorization": f"Bearer {served.token}"},
        )
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    frames = [f for f in r.text.split("\n\n") if f]
    assert all(f.startswith("data: ") for f in frames) and frames[-1] == "data: [DONE]"
    assert "X-TDA-Session" not in r.headers  # no header: stateless


async def test_sessions_are_created_on_first_use_under_the_named_or_default_profile(served: Served):
    client = served.client()
    await client.chat.completions.create(
        model="tda", messages=[{"role": "user", "content": "hello"}], extra_headers={"X-TDA-Session": "fresh"}
    )
    session = await served.get("/v1/sessions/fresh")
    assert session["profile_id"] == "default" and session["profile"]["type"] == "tool_enabled"
    assert session["user_id"] == "token:agent#1"
    await served.svc.store.profiles.create("analyst", {"type": "llm_only"}, "test")
    await client.chat.completions.create(
        model="tda",
        messages=[{"role": "user", "content": "hello"}],
        user="end-user-7",
        extra_headers={"X-TDA-Session": "bound", "X-TDA-Profile": "analyst"},
    )
    bound = await served.get("/v1/sessions/bound")
    assert (bound["profile_id"], bound["user_id"]) == ("analyst", "token:agent#1/end-user-7")
    with pytest.raises(openai.ConflictError, match="bound to profile 'analyst'"):
        await client.chat.completions.create(
            model="tda",
            messages=[{"role": "user", "content": "again"}],
            extra_headers={"X-TDA-Session": "bound", "X-TDA-Profile": "default"},
        )


async def test_mistakes_get_openai_errors_that_say_what_to_change(served: Served):
    client = served.client()
    with pytest.raises(openai.AuthenticationError):
        await served.client("not-a-token").chat.completions.create(
            model="tda", messages=[{"role": "user", "content": "hi"}]
        )
    with pytest.raises(openai.UnprocessableEntityError, match="need a user message"):
        await client.chat.completions.create(model="tda", messages=[{"role": "system", "content": "hi"}])
    with pytest.raises(openai.UnprocessableEntityError, match="names no provider"):
        await client.chat.completions.create(model="no-such-model-xyz", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.NotFoundError, match="nobody"):
        await client.chat.completions.create(
            model="tda", messages=[{"role": "user", "content": "hi"}], extra_headers={"X-TDA-Profile": "nobody"}
        )
    with pytest.raises(openai.UnprocessableEntityError, match="without tool_call_id"):
        await client.chat.completions.create(
            model="tda",
            messages=[{"role": "user", "content": "hi"}, {"role": "tool", "content": "1"}],
            extra_headers={"X-TDA-Session": "e2"},
        )
    with pytest.raises(openai.UnprocessableEntityError, match="n > 1 cannot be streamed"):
        await client.chat.completions.create(
            model="tda", messages=[{"role": "user", "content": "hi"}], n=2, stream=True
        )
    assert served.model.sent == [] and "e2" not in await _sessions(served)  # nothing sent, nothing half-written


async def test_another_sessions_tool_data_never_reaches_a_window_unless_the_profile_shares_cases(served: Served):
    """The leak the gateway had: a fresh session's prompt received another session's tool result."""
    client = served.client()
    secret = "owner John Smith, balance 1234.56 EUR"
    question = "Who owns account 42 and what is its balance?"
    for profile, sharing in (("private", "user"), ("shared", "profile")):
        await served.svc.store.profiles.create(profile, {"type": "tool_enabled", "case_sharing": sharing}, "test")
        served.model.replies = [[("call_s", "lookup_orders", {"customer": "42"})], f"The {secret}."]
        chat: list[Any] = [{"role": "user", "content": question}]
        headers = {"X-TDA-Session": f"{profile}-a", "X-TDA-Profile": profile}
        first = await client.chat.completions.create(model="tda", messages=chat, tools=TOOLS, extra_headers=headers)
        chat += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": "call_s", "content": secret},
        ]
        await client.chat.completions.create(model="tda", messages=chat, tools=TOOLS, extra_headers=headers)
        await served.svc.writer.settle(f"{profile}-a")  # the finished turn's case is recorded
        served.model.sent.clear()
        fresh = [{"role": "user", "content": question}]
        other = {"X-TDA-Session": f"{profile}-b", "X-TDA-Profile": profile}
        await client.chat.completions.create(model="tda", messages=fresh, extra_headers=other)
        await client.chat.completions.create(model=f"tda/{profile}", messages=fresh)  # stateless, same caller
        leaked = [secret in json.dumps(sent["messages"]) for sent in served.model.sent]
        assert leaked == ([False, False] if sharing == "user" else [True, True]), profile


async def test_two_conversations_may_share_a_session(served: Served):
    """Agents-as-tools and concurrent runs send different conversations under one session: each is answered from
    what it sent, and each call is recorded."""
    client = served.client()
    session = {"X-TDA-Session": "shared-1"}
    a: list[Any] = [{"role": "system", "content": "Agent A."}, {"role": "user", "content": "Plan the trip."}]
    b: list[Any] = [{"role": "system", "content": "Agent B."}, {"role": "user", "content": "Book the hotel."}]
    served.model.replies = ["Plan ready.", "Hotel booked.", "Trip planned.", "Hotel confirmed."]
    replies = await asyncio.gather(
        client.chat.completions.create(model="tda", messages=a, extra_headers=session),
        client.chat.completions.create(model="tda", messages=b, extra_headers=session),
    )
    for chat, reply in zip((a, b), replies, strict=True):
        chat += [reply.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "Go on."}]
    await client.chat.completions.create(model="tda", messages=a, extra_headers=session)
    await client.chat.completions.create(model="tda", messages=b, extra_headers=session)
    sent = [[m["content"] for m in s["messages"]] for s in served.model.sent]
    assert sent[2][:2] == ["Agent A.", "Plan the trip."] and sent[3][:2] == ["Agent B.", "Book the hotel."]
    assert not any("Book the hotel." in c for c in sent[2]) and not any("Plan the trip." in c for c in sent[3])
    turns = (await served.get("/v1/sessions/shared-1/turns"))["turns"]
    assert len(turns) == 4


async def test_a_message_sent_again_with_one_field_changed_reaches_the_model_as_sent(served: Served):
    """A client's messages sent before are recognised, not read again (tda/api/chat.py ``_SentMessages``): a message
    that differs from one sent before in any field it carries (its role, a call's arguments, the id a result answers,
    a name) is read as the new one."""
    served.model.replies = ["One.", "Two."]
    client = served.client()
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup_orders", "arguments": '{"customer": "A"}'}}
    first: list[Any] = [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Orders?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "3 rows"},
        {"role": "assistant", "content": "Three."},
        {"role": "user", "content": "And now?"},
    ]
    await client.chat.completions.create(model="tda", messages=first, tools=TOOLS)
    changed = {**call, "id": "call_2", "function": {**call["function"], "arguments": '{"customer": "B"}'}}
    second: list[Any] = [
        {"role": "developer", "content": "Answer briefly."},
        first[1],
        {"role": "assistant", "content": None, "tool_calls": [changed]},
        {"role": "tool", "tool_call_id": "call_2", "content": "3 rows"},
        {"role": "assistant", "content": "Three.", "name": "clerk"},
        first[5],
    ]
    await client.chat.completions.create(model="tda", messages=second, tools=TOOLS)
    sent = served.model.sent[1]["messages"]
    assert sent[0]["role"] == "system" and sent[0]["content"] == "Answer briefly."
    assert [(c["id"], c["function"]["arguments"]) for c in sent[2]["tool_calls"]] == [("call_2", '{"customer": "B"}')]
    assert sent[3]["tool_call_id"] == "call_2" and sent[4]["name"] == "clerk"
    assert served.model.sent[0]["messages"][4].get("name") is None  # the first call's message is unchanged
