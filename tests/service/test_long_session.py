"""Issue 32's session, held: 60 agent turns (240 messages, ~170K tokens) sent through /v1/chat/completions by the
real `openai` SDK to a profile with a 16K limit, then the next turn's two-step tool loop, answered by a fake
upstream that records what it was sent (tests.service.fake_upstream).

The window must be full (>= 80% of the available budget), keep the newest complete turn, send the same history
part on both steps of the turn (and cold as warm), pair every tool result with its call, send every model call to
the profile's own upstream and model within its window, and tell the client what it cut.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import anthropic
import litellm
import pytest

from components.context_window.recall.messages import SessionRecall
from tda.api.errors import _parsed as parsed_bodies
from tda.config import Settings
from tests.agent_session import SYSTEM, TOOLS, call_id, orders, tool_call, tool_loop, turn_messages
from tests.agent_wires import anthropic_tools, as_anthropic, as_responses, responses_tools
from tests.service.fake_upstream import FakeUpstream, fake_upstream
from tests.service.served_app import App, served

LIMIT = 16_000
PROFILE_MODEL = "gpt-4o"
DEFAULT_MODEL = "gpt-4o-mini"


@dataclasses.dataclass
class Setup:
    app: App
    profile_upstream: FakeUpstream
    default_upstream: FakeUpstream


@pytest.fixture(params=["words", "vectors"])
async def setup(live: Settings, request: pytest.FixtureRequest) -> AsyncIterator[Setup]:
    async with AsyncExitStack() as stack:
        own = stack.enter_context(fake_upstream())
        default = stack.enter_context(fake_upstream())
        settings = dataclasses.replace(
            live, model=DEFAULT_MODEL, upstream_base_url=default.base_url, module_timeout_s=60.0
        )  # no module may time out under load: the windows are compared
        app = await stack.enter_async_context(served(settings))
        # Recall by words, or with the service's own (vectors, the test embedder). Cold = warm with vectors is
        # tests/service/test_cold_warm.py's.
        if request.param == "words":
            app.svc.sources.history_recall = SessionRecall(None)
        await app.profile("agent", model=PROFILE_MODEL, context_limit=LIMIT, upstream={"base_url": own.base_url})
        yield Setup(app, own, default)


def _prompt_tokens(body: dict[str, Any]) -> int:
    """An independent count of what a model call sent (litellm's tokenizer for the model it names)."""
    messages = [m if m.get("content") is not None else {**m, "content": ""} for m in body["messages"]]
    return litellm.token_counter(model=body["model"], messages=messages, tools=body.get("tools") or None)


def _history_part(body: dict[str, Any], sent_after_query: int) -> list[dict[str, Any]]:
    """The window's messages before the turn's query (the query and its tool loop are the last ones)."""
    return body["messages"][: len(body["messages"]) - 1 - sent_after_query]


def _answers(setup: Setup) -> list[dict[str, Any]]:
    """The bodies of the calls that answered the client (not a summary or a rewrite: those carry no tools)."""
    return [r.body for r in setup.profile_upstream.received if r.body.get("tools")]


async def _tool_loop(setup: Setup, headers: dict[str, str]) -> list[Any]:
    client = setup.app.sdk(**headers)
    replies = []
    for step in tool_loop(60):
        replies.append(await client.chat.completions.with_raw_response.create(model="tda", messages=step, tools=TOOLS))
    return replies


async def _snapshots(app: App, session: str) -> list[dict[str, Any]]:
    r = await app.http("GET", f"/v1/sessions/{session}/snapshots")
    return [row["snapshot"] for row in r.json()["snapshots"]]


async def test_the_long_session_gets_a_full_stable_provider_ready_window_and_the_client_is_told(setup: Setup):
    replies = await _tool_loop(setup, {"X-TDA-Profile": "agent", "X-TDA-Session": "long-1"})
    step1, step2 = _answers(setup)

    for snapshot in await _snapshots(setup.app, "long-1"):
        assert snapshot["total_used"] >= 0.8 * snapshot["available_budget"], snapshot["decisions"]
    newest = [m if m.get("content") is not None else {**m, "content": ""} for m in turn_messages(60)]
    # The newest complete turn is sent whole, in order, on both steps.
    for body in (step1, step2):
        start = body["messages"].index(newest[0])
        assert body["messages"][start : start + 4] == newest
    assert _history_part(step2, 2) == _history_part(step1, 0)  # step 1 kept room for a loop like the newest turn's
    for body in (step1, step2):
        assert _prompt_tokens(body) <= LIMIT
        _assert_paired(body["messages"])
    # Every model call went to the profile's upstream, named the profile's model, and fitted its window.
    assert not setup.default_upstream.received
    for received in setup.profile_upstream.received:
        assert received.body["model"] == PROFILE_MODEL
        assert _prompt_tokens(received.body) <= LIMIT

    for raw, received, body in zip(replies, tool_loop(60), (step1, step2), strict=True):
        _assert_told(raw, received, body)


async def test_the_second_step_of_a_turn_sends_the_first_as_it_was(setup: Setup):
    """Issue 32's item 2: the provider's prompt cache holds within a turn. While the tool loop fits the room the
    first step's window left (here a 40-row result, ~2,000 tokens), step 2's request goes out with step 1's
    messages byte for byte (the history part, then the query), and its tool call and result after them. (A loop
    larger than that room is made room for from the end of the history part: the test above.)"""
    step1 = tool_loop(60)[0]
    call = {"role": "assistant", "content": None, "tool_calls": [tool_call(61)]}
    step2 = [*step1, call, {"role": "tool", "tool_call_id": call_id(61), "content": orders(61, rows=40)}]
    client = setup.app.sdk(**{"X-TDA-Profile": "agent", "X-TDA-Session": "long-steps"})
    for messages in (step1, step2):
        await client.chat.completions.create(model="tda", messages=messages, tools=TOOLS)  # type: ignore[arg-type]
    first, second = [r for r in setup.profile_upstream.received if r.body.get("tools")]
    end = _end_of_messages(first.raw)
    assert second.raw[:end] == first.raw[:end]
    assert second.raw[end : end + 1] == b","  # more messages follow: the step's own
    assert second.body["messages"][len(first.body["messages"]) :] == [_as_sent(m) for m in step2[-2:]]


def _end_of_messages(raw: bytes) -> int:
    """Where the last message of a request body's ``messages`` array ends (its closing bracket's offset)."""
    text = raw.decode()
    start = text.index("[", text.index('"messages"'))
    _, end = json.JSONDecoder().raw_decode(text, start)
    assert text[end - 1] == "]"
    return len(text[: end - 1].encode())


async def test_a_stateless_client_a_new_session_and_a_retry_see_the_same_windows(setup: Setup):
    """The window is a function of what was sent and stored: not of the session's record, nor of a call before."""
    await _tool_loop(setup, {"X-TDA-Profile": "agent"})  # stateless: nothing kept
    await _tool_loop(setup, {"X-TDA-Profile": "agent", "X-TDA-Session": "long-2"})  # a new session
    await _tool_loop(setup, {"X-TDA-Profile": "agent", "X-TDA-Session": "long-2"})  # the same calls again: retries
    bodies = _answers(setup)
    assert len(bodies) == 6
    windows = [json.dumps(b["messages"]) for b in bodies]
    assert windows[0] == windows[2] == windows[4]
    assert windows[1] == windows[3] == windows[5]


async def test_the_bodies_kept_parsed_for_the_next_call_are_never_changed_by_a_call(setup: Setup):
    """A chat body is kept parsed for the next one (``ParsedBody``): its messages' values are the next body's when it
    sends the same text again, another client's too (the same path, session header and beginning). So no call may
    change them in place: every kept value is still what its text parses to, after calls with and without a
    session, each step sending the first's messages again with a tool call and its result."""
    parsed_bodies.clear()
    await _tool_loop(setup, {"X-TDA-Profile": "agent", "X-TDA-Session": "kept"})
    await _tool_loop(setup, {"X-TDA-Profile": "agent"})
    kept = parsed_bodies.values()
    assert kept and all(body.reused for body in kept)  # the second steps went on from the first ones
    decode = json.JSONDecoder().raw_decode
    for body in kept:
        assert body.items
        for at, (value, end) in body.items.items():
            assert (value, end) == decode(body.text, at)


@pytest.mark.parametrize("session", [None, "long-3"])
async def test_the_responses_api_tells_what_was_cut_too(setup: Setup, session: str | None):
    """The same session through /v1/responses: its input as items (messages, function calls and their outputs)."""
    items: list[dict[str, Any]] = []
    for m in tool_loop(60)[1][1:]:  # the system message goes as instructions
        if m["role"] == "tool":
            items.append({"type": "function_call_output", "call_id": m["tool_call_id"], "output": m["content"]})
        elif m.get("tool_calls"):
            call = m["tool_calls"][0]
            function = call["function"]
            items.append({"type": "function_call", "call_id": call["id"], **function})
        else:
            items.append({"role": m["role"], "content": m["content"]})
    headers = {"X-TDA-Profile": "agent", **({"X-TDA-Session": session} if session else {})}
    tools = [{"type": "function", **TOOLS[0]["function"]}]
    raw = await setup.app.sdk(**headers).responses.with_raw_response.create(
        model="tda",
        instructions=SYSTEM["content"],
        input=items,
        tools=tools,  # type: ignore[arg-type]
    )
    cut = json.loads(raw.text)["usage"]["tda"]
    assert cut["messages_received"] == len(items) + 1 and cut["messages_cut"] > 0
    assert cut["tokens_sent"] < cut["tokens_received"]
    (body,) = _answers(setup)
    assert cut["messages_sent"] == len(body["messages"])
    assert (
        raw.headers["X-TDA-Cut"]
        == f"messages={cut['messages_cut']}; tokens={cut['tokens_received'] - cut['tokens_sent']}"
    )
    _assert_paired(body["messages"])


@pytest.mark.parametrize("setup", ["words"], indirect=True)
@pytest.mark.parametrize("session", [None, "long-streamed"])
@pytest.mark.parametrize("wire", ["chat", "responses", "messages"])
async def test_a_streamed_reply_says_what_was_cut_in_its_headers_too(setup: Setup, wire: str, session: str | None):
    """Issue 32's item 4 on a stream: the window is assembled before the model is called, so ``X-TDA-Cut`` (and a
    session's ``X-TDA-Turn``) go with the stream's first byte, read by the real SDKs; the header agrees with the
    stream's final ``usage.tda``, which agrees with what the upstream received."""
    headers = {"X-TDA-Profile": "agent", **({"X-TDA-Session": session} if session else {})}
    told, cut = await _STREAMED[wire](setup.app, headers, tool_loop(60)[1])
    (body,) = _answers(setup)
    assert body["stream"] is True
    assert cut["messages_sent"] == len(body["messages"]) and cut["messages_cut"] > 0
    assert (
        told.get("X-TDA-Cut") == f"messages={cut['messages_cut']}; tokens={cut['tokens_received'] - cut['tokens_sent']}"
    )
    assert told.get("X-TDA-Turn") == ("1" if session else None)


async def _chat_streamed(app: App, headers: dict[str, str], messages: list[dict[str, Any]]) -> tuple[Any, Any]:
    """The headers and the final ``usage.tda`` of a streamed chat completion (the openai SDK's raw response)."""
    raw = await app.sdk(**headers).chat.completions.with_raw_response.create(
        model="tda",
        messages=messages,  # type: ignore[arg-type]
        tools=TOOLS,  # type: ignore[arg-type]
        stream=True,
        stream_options={"include_usage": True},
    )
    usage = [chunk.usage async for chunk in raw.parse() if chunk.usage is not None]
    return raw.headers, usage[-1].model_extra["tda"]


async def _responses_streamed(app: App, headers: dict[str, str], messages: list[dict[str, Any]]) -> tuple[Any, Any]:
    """The same of a streamed response (the openai SDK's streaming response): its ``response.completed`` usage."""
    instructions, items = as_responses(messages)
    async with app.sdk(**headers).responses.with_streaming_response.create(
        model="tda",
        instructions=instructions,
        input=items,  # type: ignore[arg-type]
        tools=responses_tools(TOOLS),  # type: ignore[arg-type]
        stream=True,
        store="X-TDA-Session" in headers,  # else stored in a session of its own
    ) as response:
        events = [event async for event in await response.parse()]
        done = [e.response.usage for e in events if e.type == "response.completed"]
        return response.headers, done[-1].model_extra["tda"]


async def _messages_streamed(app: App, headers: dict[str, str], messages: list[dict[str, Any]]) -> tuple[Any, Any]:
    """The same of a streamed Anthropic message (the anthropic SDK's message stream): its ``message_delta`` usage."""
    system, blocks = as_anthropic(messages)
    client = anthropic.AsyncAnthropic(
        base_url=app.base_url.removesuffix("/v1"), api_key=app.token, max_retries=0, default_headers=headers
    )
    async with (
        client,
        client.messages.stream(
            model="tda",
            max_tokens=1024,
            system=system or "",
            messages=blocks,
            tools=anthropic_tools(TOOLS),  # type: ignore[arg-type]
        ) as stream,
    ):
        usage = [event.usage async for event in stream if event.type == "message_delta"]
        return stream.response.headers, usage[-1].model_extra["tda"]


_STREAMED = {"chat": _chat_streamed, "responses": _responses_streamed, "messages": _messages_streamed}


def _assert_paired(messages: list[dict[str, Any]]) -> None:
    """Every tool message answers a call of the assistant message just before its run of results."""
    open_calls: set[str] = set()
    for m in messages:
        if m["role"] == "tool":
            assert m["tool_call_id"] in open_calls, f"an orphan tool result: {m['tool_call_id']}"
            open_calls.discard(m["tool_call_id"])
        else:
            assert not open_calls, f"calls without results: {open_calls}"
            open_calls = {c["id"] for c in m.get("tool_calls") or []}


def _assert_told(raw: Any, received: list[dict[str, Any]], body: dict[str, Any]) -> None:
    """The response says what was cut: the header and the ``usage`` extension agree with what was sent."""
    completion = json.loads(raw.text)
    cut = completion["usage"]["tda"]
    sent = [json.dumps(m, sort_keys=True) for m in body["messages"]]
    not_sent = [m for m in received if json.dumps(_as_sent(m), sort_keys=True) not in sent]
    assert cut["messages_received"] == len(received)
    assert cut["messages_sent"] == len(body["messages"])
    assert cut["messages_cut"] == len(not_sent) > 0
    # tda's counts, checked against litellm's tokenizer (the window also carries the client's tools)
    assert abs(cut["tokens_sent"] - _prompt_tokens(body)) <= 0.02 * cut["tokens_sent"]
    received_tokens = _prompt_tokens({"model": PROFILE_MODEL, "messages": [_as_sent(m) for m in received]})
    assert abs(cut["tokens_received"] - received_tokens) <= 0.02 * received_tokens
    assert cut["tokens_sent"] < cut["tokens_received"]
    header = raw.headers["X-TDA-Cut"]
    assert header == f"messages={cut['messages_cut']}; tokens={cut['tokens_received'] - cut['tokens_sent']}"


def _as_sent(m: dict[str, Any]) -> dict[str, Any]:
    return m if m.get("content") is not None else {**m, "content": ""}


class _HangingRecall:
    """A history index that never answers (a starved worker pool, a database that does not reply)."""

    async def ask(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.Event().wait()


async def test_a_history_window_that_times_out_still_sends_the_newest_turns_and_the_system_prompt(live: Settings):
    """Issue 32's session on a server too loaded to make the history's window in time: the history module times out
    (here its recall hangs past the module timeout), and what it falls back to goes out in its place, the newest
    messages that fit: the system prompt, the newest complete turn whole, every result with its call, the window
    full, the snapshot saying what happened."""
    with fake_upstream() as own:
        async with served(dataclasses.replace(live, module_timeout_s=0.3)) as app:
            app.svc.sources.history_recall = _HangingRecall()  # type: ignore[assignment]
            history = app.svc.registry.get("conversation_history")
            assert history is not None
            history.recall_wait_s = 60.0  # type: ignore[attr-defined]  # it waits for the index past the timeout
            await app.profile("agent", model=PROFILE_MODEL, context_limit=LIMIT, upstream={"base_url": own.base_url})
            client = app.sdk(**{"X-TDA-Profile": "agent", "X-TDA-Session": "loaded"})
            step1 = tool_loop(60)[0]
            await client.chat.completions.create(model="tda", messages=step1, tools=TOOLS)  # type: ignore[arg-type]
            (snapshot,) = await _snapshots(app, "loaded")
    usage = next(m for m in snapshot["modules"] if m["module_id"] == "conversation_history")
    assert usage["status"] == "timeout" and "its fallback was sent (sliding_window)" in usage["reason"]
    assert snapshot["total_used"] >= 0.8 * snapshot["available_budget"]
    (answered,) = [r.body for r in own.received if r.body.get("tools")]  # not a summary written ahead
    sent = answered["messages"]
    assert sent[0] == SYSTEM and sent[-1] == step1[-1]
    newest = [m if m.get("content") is not None else {**m, "content": ""} for m in turn_messages(60)]
    assert sent[-1 - len(newest) : -1] == newest
    _assert_paired(sent)
    assert _prompt_tokens(answered) <= LIMIT
