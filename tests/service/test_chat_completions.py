"""POST /v1/chat/completions driven by the real `openai` SDK against a real served app (hypercorn on 127.0.0.1).

The model is litellm's mock, scripted reply by reply (tests.service.support.ScriptedModel): the service's
own litellm path runs; only the provider is not called.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from hypercorn.asyncio import serve
from hypercorn.config import Config

from tda.app import create_app
from tda.config import Settings
from tda.service import TDAService
from tests.service.support import ScriptedModel

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    def __init__(self, svc: TDAService, model: ScriptedModel, base_url: str, token: str) -> None:
        self.svc, self.model, self.base_url, self.token = svc, model, base_url, token
        self.clients: list[openai.AsyncOpenAI] = []

    def client(self, key: str | None = None) -> openai.AsyncOpenAI:
        """The official SDK, pointed at tda: base_url and a tda token as the API key are all it takes."""
        client = openai.AsyncOpenAI(base_url=self.base_url, api_key=key or self.token, max_retries=0, timeout=30)
        self.clients.append(client)
        return client

    async def get(self, path: str, method: str = "GET") -> Any:
        import httpx

        async with httpx.AsyncClient(base_url=self.base_url.removesuffix("/v1"), timeout=30) as http:
            r = await http.request(method, path, headers={"Authorization": f"Bearer {self.token}"})
            assert r.status_code == 200, r.text
            return r.json()


@pytest.fixture
async def served(settings: Settings) -> AsyncIterator[Served]:
    model = ScriptedModel()
    app = create_app(settings, llm=model.llm, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    config = Config()
    port = _free_port()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    stop = asyncio.Event()
    server = asyncio.create_task(serve(app, config, shutdown_trigger=stop.wait))
    svc: TDAService = app.extensions["tda"]
    for _ in range(200):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            break
        except OSError:
            await asyncio.sleep(0.05)
    token, _ = await svc.store.tokens.create("agent", "admin")
    await svc.knowledge.warm_up()  # as serve does: the first turn's retrieval must not time out opening Chroma
    target = Served(svc, model, f"http://127.0.0.1:{port}/v1", token)
    try:
        yield target
    finally:
        for client in target.clients:
            await client.close()
        stop.set()
        await asyncio.wait_for(server, 10)


def _module(snapshot: dict[str, Any], module_id: str) -> dict[str, Any]:
    return next(m for m in snapshot["modules"] if m["module_id"] == module_id)


async def test_a_tool_loop_then_a_second_turn_through_the_openai_sdk(served: Served):
    served.model.replies = [
        [("call_1", "lookup_orders", {"customer": "ACME"})],
        "ACME has 3 open orders.",
        "They total 242.75.",
    ]
    client = served.client()
    # A genie profile calls tools but is served no champion cases: the steps replay identically later, when the
    # finished turn's case would otherwise change what retrieval finds.
    await served.svc.store.profiles.create("agent", {"type": "genie"}, "test")
    session = {"X-TDA-Session": "agent-1", "X-TDA-Profile": "agent"}
    events = served.svc.bus.subscribe("agent-1")
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
    tools = _module(snapshot, "tool_definitions")
    assert tools["strategy"] == "full" and tools["metadata"]["full_schemas"] == len(TOOLS)
    sent = served.model.sent[2]
    assert sent["tools"] == [{"type": "function", "function": t["function"]} for t in TOOLS]  # full, in order
    window = sent["messages"]
    calls = [i for i, m in enumerate(window) if m.get("tool_calls")]
    assert len(calls) == 1 and window[calls[0] + 1] == {
        "role": "tool",
        "content": json.dumps(ORDERS),
        "tool_call_id": "call_1",
    }  # the pair, kept together in history
    plan = _module(snapshot, "plan_hydration")
    assert plan["used"] > 0 and plan["metadata"]["turn"] == 1 and plan["metadata"]["results"] == 1
    hydrated = next(
        m["content"] for m in window if m["role"] == "system" and "Results of the previous turn" in m["content"]
    )
    assert "lookup_orders" in hydrated and "120.5" in hydrated
    assert sent["max_tokens"] == snapshot["output_reserve"]
    assert third.usage.prompt_tokens == snapshot["total_used"]

    turns = (await served.get("/v1/sessions/agent-1/turns"))["turns"]
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
    for snapshot_id in published:  # each step replays identically: the client's tools and the loop so far are inputs
        replay = await served.get(f"/v1/snapshots/{snapshot_id}/replay", "POST")
        assert replay["identical"], json.dumps(replay["differences"])


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


async def test_a_smaller_max_tokens_in_the_request_wins_over_the_reserve(served: Served):
    client = served.client()
    session = {"X-TDA-Session": "small"}
    await client.chat.completions.create(
        model="tda", messages=[{"role": "user", "content": "hi"}], max_tokens=50, extra_headers=session
    )
    await client.chat.completions.create(
        model="tda",
        messages=[{"role": "user", "content": "hi"}, {"role": "user", "content": "more"}],
        max_completion_tokens=10**6,
        extra_headers=session,
    )
    [small, large] = served.model.sent
    snapshot = (await served.get("/v1/sessions/small/snapshots?newest_first=true&limit=1"))["snapshots"][0]
    assert small["max_tokens"] == 50 and large["max_tokens"] == snapshot["snapshot"]["output_reserve"]


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
    assert r.headers["X-TDA-Session"].startswith("chat-")  # no header: a new session, named in the response


async def test_sessions_are_created_on_first_use_under_the_named_or_default_profile(served: Served):
    client = served.client()
    raw = await client.chat.completions.with_raw_response.create(
        model="tda", messages=[{"role": "user", "content": "hello"}]
    )
    assert raw.headers["X-TDA-Session"].startswith("chat-")
    session = await served.get(f"/v1/sessions/{raw.headers['X-TDA-Session']}")
    assert session["profile_id"] == "default" and session["profile"]["type"] == "tool_enabled"
    await served.svc.store.profiles.create("analyst", {"type": "llm_only"}, "test")
    await client.chat.completions.create(
        model="tda",
        messages=[{"role": "user", "content": "hello"}],
        extra_headers={"X-TDA-Session": "bound", "X-TDA-Profile": "analyst"},
    )
    assert (await served.get("/v1/sessions/bound"))["profile_id"] == "analyst"
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
    with pytest.raises(openai.UnprocessableEntityError, match="must end with a new user message"):
        await client.chat.completions.create(
            model="tda",
            messages=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
            extra_headers={"X-TDA-Session": "e1"},
        )
    with pytest.raises(openai.UnprocessableEntityError, match="names no provider"):
        await client.chat.completions.create(model="no-such-model-xyz", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.NotFoundError, match="nobody"):
        await client.chat.completions.create(
            model="tda", messages=[{"role": "user", "content": "hi"}], extra_headers={"X-TDA-Profile": "nobody"}
        )
    with pytest.raises(openai.UnprocessableEntityError, match="tool results answering"):
        await client.chat.completions.create(
            model="tda",
            messages=[{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "1"}],
            extra_headers={"X-TDA-Session": "e2"},
        )
    served.model.replies = ["hello"]
    chat: list[Any] = [{"role": "user", "content": "hi"}]
    reply = await client.chat.completions.create(model="tda", messages=chat, extra_headers={"X-TDA-Session": "e4"})
    chat += [
        reply.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": "x", "content": "1"},
    ]
    with pytest.raises(openai.ConflictError, match="called no tool"):
        await client.chat.completions.create(model="tda", messages=chat, extra_headers={"X-TDA-Session": "e4"})
    served.model.replies = [[("call_a", "lookup_orders", {"customer": "ACME"})]]
    messages: list[Any] = [{"role": "user", "content": "orders?"}]
    first = await client.chat.completions.create(
        model="tda", messages=messages, tools=TOOLS, extra_headers={"X-TDA-Session": "e3"}
    )
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": "call_zz", "content": "1"},
    ]
    with pytest.raises(openai.UnprocessableEntityError, match="call_a"):
        await client.chat.completions.create(
            model="tda", messages=messages, tools=TOOLS, extra_headers={"X-TDA-Session": "e3"}
        )
    assert (await served.get("/v1/sessions/e3/turns"))["turns"][0]["results"] == []  # nothing half-written


async def test_a_client_chat_is_merged_once_even_around_tdas_own_messages(served: Served):
    client = served.client()
    session = {"X-TDA-Session": "merge-1"}
    chat: list[Any] = [
        {"role": "system", "content": "Client-side instructions."},
        {"role": "user", "content": "Earlier question"},
        {"role": "assistant", "content": "Earlier answer"},
        {"role": "user", "content": "Now this"},
    ]
    served.model.replies = ["Answer one.", "Answer two."]
    first = await client.chat.completions.create(model="tda", messages=chat, extra_headers=session)
    stored = (await served.get("/v1/sessions/merge-1/messages"))["messages"]
    assert [(m["turn"], m["role"], m["content"]) for m in stored] == [
        (1, "user", "Earlier question"),  # the client's earlier chat, kept as history once
        (1, "assistant", "Earlier answer"),
        (2, "user", "Now this"),
        (2, "assistant", "Answer one."),
    ]
    # a phase move writes tda's own system message, which no client echoes
    await served.svc.store.sessions.update("merge-1", {"phase": "ideate"}, "test")
    await served.svc.store.sessions.update(
        "merge-1", {"phase": "focus"}, "test", carry=[{"role": "system", "content": "carried", "turn": 2}]
    )
    chat += [first.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "And then?"}]
    await client.chat.completions.create(model="tda", messages=chat, extra_headers=session)
    stored = (await served.get("/v1/sessions/merge-1/messages"))["messages"]
    assert [m["content"] for m in stored][-3:] == ["carried", "And then?", "Answer two."]
    assert sum(m["content"] == "Now this" for m in stored) == 1
