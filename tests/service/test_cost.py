"""Cost: windows whose prefix stays byte-identical from turn to turn, so a provider's prompt cache hits."""

from __future__ import annotations

import dataclasses
import json
import statistics
from itertools import pairwise
from typing import Any

import litellm
import pytest

from tda.llm import with_cache_breakpoints
from tests.service.served_app import served

PARAMETERS = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
WORDS = "the order for customer shipping invoice warehouse delivery status refund account payment label".split()


def question(turn: int) -> str:
    """About 70 tokens, different every turn."""
    return f"Question {turn}: " + " ".join(WORDS[(turn * 7 + i) % len(WORDS)] for i in range(62)) + "?"


def sent(trace: dict[str, Any]) -> list[dict[str, str]]:
    return [{"role": m["role"], "content": m["content"]} for m in trace["messages"]]


def shared_prefix(now: list[dict[str, str]], before: list[dict[str, str]]) -> list[dict[str, str]]:
    same = 0
    for a, b in zip(now, before, strict=False):
        if a != b:
            break
        same += 1
    return now[:same]


def tokens(messages: list[dict[str, str]]) -> int:
    """The oracle: litellm's count, less its reply priming (3) so a prefix is counted as a part of a window."""
    return litellm.token_counter(model="gpt-4o", messages=messages) - 3 if messages else 0


async def test_a_long_chat_keeps_a_byte_stable_prefix_while_history_stays_full(client, admin, viewer, svc):
    """The issue's held-out check over HTTP: Conversation First, a 3,000-token limit, 45 turns of ~70-token
    questions. Once history overflows (turns 21-45), the exact messages sent share a median >= 70% of the
    previous window from the start, history fills >= 50% of its allocation on average, and the snapshot's
    ``prefix_stable_tokens`` is within 5% of the measured prefix. Before cache blocks: 2% and 43%."""
    svc.llm.mock_answer = "Here is what I found about that order. " * 8
    profile = {"id": "chat", "type": "llm_only", "context_window_type_id": "conversation_first", "model": "gpt-4o"}
    profile["system_prompt"] = "You are a helpful support assistant for a long chat."
    assert (await client.post("/v1/profiles", json=profile, headers=admin)).status_code == 201
    body = {"id": "long", "profile_id": "chat", "context_limit": 3000}
    assert (await client.post("/v1/sessions", json=body, headers=admin)).status_code == 201
    previous: list[dict[str, str]] = []
    ratios, fills, honesty = [], [], []
    for turn in range(1, 46):
        r = await client.post("/v1/sessions/long/turns", json={"query": question(turn)}, headers=admin)
        assert r.status_code == 201, await r.get_json()
        done = await r.get_json()
        trace = await (await client.get(f"/v1/snapshots/{done['snapshot_id']}/trace", headers=viewer)).get_json()
        window = sent(trace)
        if turn >= 21:
            prefix = tokens(shared_prefix(window, previous))
            ratios.append(prefix / tokens(previous))
            honesty.append((done["snapshot"]["prefix_stable_tokens"], prefix))
            history = next(m for m in done["snapshot"]["modules"] if m["module_id"] == "conversation_history")
            fills.append(history["used"] / history["allocated"])
            assert history["metadata"]["cache_block"] >= 2  # the snapshot shows the choice
        previous = window
    assert history["metadata"]["first_kept_index"] > 0  # history did overflow
    print(f"median prefix {statistics.median(ratios):.0%}, history fill {statistics.mean(fills):.0%}", honesty[:6])
    print(f"chat client: median prefix {statistics.median(ratios):.0%}")
    assert statistics.median(ratios) >= 0.70, ratios
    assert statistics.mean(fills) >= 0.50, fills
    assert all(abs(reported - measured) <= 0.05 * measured for reported, measured in honesty if measured), honesty


TOOLS = [
    {"type": "function", "function": {"name": name, "description": f"{name} an order", "parameters": PARAMETERS}}
    for name in ("find", "refund")
]
CHAT = [
    {"role": "system", "content": "You help with orders."},
    {"role": "user", "content": "Where is order 7?"},
    {"role": "assistant", "content": "It shipped on Monday."},
    {"role": "user", "content": "And order 8?"},
]


def marked(block: Any) -> bool:
    """Whether an Anthropic content block (or a list of them) carries a cache breakpoint."""
    if isinstance(block, list):
        return any(marked(b) for b in block)
    return isinstance(block, dict) and block.get("cache_control") == {"type": "ephemeral"}


async def test_an_anthropic_call_marks_the_end_of_the_stable_prefix_and_the_tools(live, upstream):
    """Anthropic caches only what a request marks: the tools block, the system text and the end of the history
    carry ``cache_control`` as Anthropic's API receives them (litellm's anthropic provider, at a fake that records
    the body); the question does not (it changes every turn). An OpenAI model gets no marks (it caches unasked)."""
    async with served(live) as app:
        await app.profile(
            "claude", model="anthropic/claude-3-5-sonnet-20241022", upstream={"base_url": upstream.base_url}
        )
        await app.profile("gpt", model="gpt-4o", upstream={"base_url": upstream.base_url})
        for profile in ("claude", "gpt"):
            client = app.sdk(**{"X-TDA-Profile": profile})
            await client.chat.completions.create(model="tda", messages=CHAT, tools=TOOLS)  # type: ignore[arg-type]
    to_anthropic, to_openai = upstream.received
    assert to_anthropic.path.endswith("/messages") and to_openai.path.endswith("/chat/completions")
    body = to_anthropic.body
    assert [t["name"] for t in body["tools"]] == ["find", "refund"]
    assert [marked(t) for t in body["tools"]] == [False, True]
    assert marked(body["system"][-1]) and "You help with orders." in body["system"][-1]["text"]
    contents = [(m["role"], m["content"]) for m in body["messages"]]
    assert [role for role, _ in contents] == ["user", "assistant", "user"]
    assert [marked(content) for _, content in contents] == [False, True, False]  # the history's end, not the query
    assert "cache_control" not in json.dumps(to_openai.body)


async def test_claude_at_openrouter_is_marked_too_and_other_models_there_are_not(live, upstream):
    """Claude caches only what is marked wherever it is served: at OpenRouter (an OpenAI-shaped API) its chat body
    carries the same breakpoints; another model there gets none (issue 34)."""
    async with served(live) as app:
        at = {"base_url": upstream.base_url}
        await app.profile("claude", model="openrouter/anthropic/claude-sonnet-4.5", upstream=at)
        await app.profile("gpt", model="openrouter/openai/gpt-4o", upstream=at)
        for profile in ("claude", "gpt"):
            client = app.sdk(**{"X-TDA-Profile": profile})
            await client.chat.completions.create(model="tda", messages=CHAT, tools=TOOLS)  # type: ignore[arg-type]
    to_claude, to_gpt = upstream.received
    assert [marked(t) for t in to_claude.body["tools"]] == [False, True]
    assert [marked(m["content"]) for m in to_claude.body["messages"]] == [True, False, True, False]
    assert "cache_control" not in json.dumps(to_gpt.body)


async def test_a_session_whose_calls_come_minutes_apart_gets_claude_s_hour(live, upstream):
    """Calls ten minutes apart would find a 5-minute cache gone: from the second gap on, the marks ask for an hour
    (``ttl: 1h``); a session whose calls come seconds apart keeps the 5-minute default (tda/cache_ttl.py)."""
    clock = [0.0]
    async with served(live) as app:
        app.svc.cache_ttl.clock = lambda: clock[0]
        await app.profile("claude", model="anthropic/claude-sonnet-4-5", upstream={"base_url": upstream.base_url})
        for session, gap in (("slow", 600.0), ("brisk", 20.0)):
            client = app.sdk(**{"X-TDA-Profile": "claude", "X-TDA-Session": session})
            chat: list[Any] = []
            for n in range(3):
                clock[0] += gap
                chat.append({"role": "user", "content": f"Question {n} about orders"})
                reply = await client.chat.completions.create(model="tda", messages=chat, tools=TOOLS)  # type: ignore[arg-type]
                chat.append({"role": "assistant", "content": reply.choices[0].message.content})
    ttls = [{b["cache_control"].get("ttl") for b in r.body["tools"] if "cache_control" in b} for r in upstream.received]
    assert ttls == [{None}, {"1h"}, {"1h"}, {None}, {None}, {None}]
    slow_last = upstream.received[2].body
    assert all(b["cache_control"] == {"type": "ephemeral", "ttl": "1h"} for b in _marks(slow_last))


def _marks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every block of an Anthropic request that carries a cache mark."""
    blocks = [*body["tools"], *body["system"]]
    blocks += [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    return [b for b in blocks if "cache_control" in b]


async def test_what_the_provider_cached_and_the_turn_s_dollars_are_read_back(live, upstream):
    """Anthropic's ``cache_read_input_tokens`` / ``cache_creation_input_tokens`` reach the turn, its trace and
    /metrics; the turn's dollars match litellm's own ``cost_per_token`` (the oracle) for the reported usage, the input
    split by module in proportion to the tokens each sent (the query's part under ``query``)."""
    upstream.usage = {"cache_read_input_tokens": 1200, "cache_creation_input_tokens": 300}
    model = "anthropic/claude-sonnet-4-5"
    async with served(live) as app:
        profile = {"model": model, "upstream": {"base_url": upstream.base_url}, "system_prompt": "You help."}
        await app.profile("claude", type="llm_only", **profile)
        assert (await app.http("POST", "/v1/sessions", json={"id": "c1", "profile_id": "claude"})).status_code == 201
        r = await app.http("POST", "/v1/sessions/c1/turns", json={"query": "Where is order 7?"})
        assert r.status_code == 201, r.text
        done = r.json()
        trace = (await app.http("GET", f"/v1/snapshots/{done['snapshot_id']}/trace")).json()
        exposed = (await app.http("GET", "/metrics")).text  # this model is called by no other test
    call = done["model_call"]
    assert call["cache_read_tokens"] == 1200 and call["cache_write_tokens"] == 300
    assert trace["model_call"] == call
    assert f'tda_prompt_cache_tokens_total{{cache="read",model="{model}"}} 1200.0' in exposed
    assert f'tda_prompt_cache_tokens_total{{cache="written",model="{model}"}} 300.0' in exposed
    # litellm counts Anthropic's prompt as the uncached input plus what was read and written
    expected_in, expected_out = litellm.cost_per_token(
        model=model,
        prompt_tokens=call["prompt_tokens"],
        completion_tokens=call["completion_tokens"],
        cache_read_input_tokens=1200,
        cache_creation_input_tokens=300,
    )
    cost = call["cost"]
    assert cost["input_usd"] == pytest.approx(expected_in) and cost["output_usd"] == pytest.approx(expected_out)
    shares = cost["input_by_module_usd"]
    assert sum(shares.values()) == pytest.approx(cost["input_usd"]) and {"system_prompt", "query"} <= set(shares)
    assert cost["saved_by_cache_usd"] > 0  # 1,200 read at a tenth of the price outweighs 300 written at 1.25x


async def test_an_openai_cache_hit_reaches_the_chat_client_and_metrics(live, upstream):
    """OpenAI's ``prompt_tokens_details.cached_tokens`` comes back to a chat client (the real ``openai`` SDK) as
    OpenAI would report it, and is counted in /metrics with the call's dollars at the cached-input price."""
    upstream.usage = {"prompt_tokens": 2048, "prompt_tokens_details": {"cached_tokens": 1536}}
    async with served(live) as app:
        await app.profile("gpt", model="gpt-4o", upstream={"base_url": upstream.base_url})
        client = app.sdk(**{"X-TDA-Profile": "gpt"})
        before = (await app.http("GET", "/metrics")).text  # counters are per process: other tests add to them
        reply = await client.chat.completions.create(model="tda", messages=CHAT)  # type: ignore[arg-type]
        after = (await app.http("GET", "/metrics")).text
    assert reply.usage is not None and reply.usage.prompt_tokens_details is not None
    assert reply.usage.prompt_tokens_details.cached_tokens == 1536 and reply.usage.prompt_tokens == 2048

    def added(series: str) -> float:
        return metric(after, series) - metric(before, series)

    assert added('tda_prompt_cache_tokens_total{cache="read",model="gpt-4o"}') == 1536
    assert added('tda_prompt_cache_tokens_total{cache="uncached",model="gpt-4o"}') == 512
    # OpenAI's list price for gpt-4o: $2.50 per million input tokens, $1.25 cached
    input_usd = added('tda_model_cost_usd_total{model="gpt-4o",part="input"}')
    assert input_usd == pytest.approx(512 * 2.5e-6 + 1536 * 1.25e-6)


def metric(exposition: str, series: str) -> float:
    line = next((line for line in exposition.splitlines() if line.startswith(series + " ")), None)
    return float(line.split()[-1]) if line else 0.0


def test_breakpoints_skip_messages_without_text_and_mark_the_last_part_of_a_list():
    """A call-only assistant message has no text to mark: the breakpoint goes on the message before it; content in
    parts gets the mark on its last part; the inputs are left as they were (they are the trace's window)."""
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    call = {"id": "c1", "type": "function", "function": {"name": "find", "arguments": "{}"}}
    messages = [
        {"role": "system", "content": "You help."},
        {"role": "user", "content": [{"type": "text", "text": "This one?"}, image]},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "user", "content": "And now?"},
    ]
    original = json.dumps(messages)
    marked, tools = with_cache_breakpoints(messages, [], stable=3)
    assert json.dumps(messages) == original and tools == []
    assert marked[0]["content"] == [{"type": "text", "text": "You help.", "cache_control": {"type": "ephemeral"}}]
    assert marked[1]["content"] == [messages[1]["content"][0], {**image, "cache_control": {"type": "ephemeral"}}]
    assert marked[2:] == messages[2:]


async def test_a_chat_client_s_own_growing_history_keeps_a_stable_prefix(live, upstream):
    """At the chat endpoint the client sends its whole history each call; what reaches the provider still begins
    with the previous call's window for most calls once the history overflows (cache blocks over the client's
    positions), measured on the bodies the fake upstream received. (History summaries are model calls: they go to
    the service's default upstream, the same fake here.)"""
    async with served(dataclasses.replace(live, upstream_base_url=upstream.base_url)) as app:
        at = {"base_url": upstream.base_url}
        await app.profile("chat", model="gpt-4o", upstream=at, context_window_type_id="conversation_first")
        assert (await app.http("PATCH", "/v1/profiles/chat", json={"context_limit": 3000})).status_code == 200
        client = app.sdk(**{"X-TDA-Profile": "chat", "X-TDA-Session": "gw"})
        chat: list[dict[str, str]] = [{"role": "system", "content": "You are a helpful support assistant."}]
        for turn in range(1, 36):
            chat.append({"role": "user", "content": question(turn)})
            reply = await client.chat.completions.create(model="tda", messages=chat)  # type: ignore[arg-type]
            chat.append({"role": "assistant", "content": reply.choices[0].message.content or ""})
    bodies = [r.body["messages"] for r in upstream.received if r.body["messages"][0]["content"] == chat[0]["content"]]
    windows = [[{"role": m["role"], "content": m["content"]} for m in body] for body in bodies]
    assert len(windows[-1]) < len(chat) - 1  # the history overflowed: tda trimmed it
    ratios = [tokens(shared_prefix(now, before)) / tokens(before) for before, now in pairwise(windows[20:])]
    print(f"chat client: median prefix {statistics.median(ratios):.0%}")
    assert statistics.median(ratios) >= 0.70, ratios
