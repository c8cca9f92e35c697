"""Calibrated counts: for a model without an offline tokenizer, the provider's reported prompt tokens tune tda's
estimate, conservatively (never below what the provider counted on a request seen), persisted and shared through
the database, and named in the snapshot's ``token_method``. The oracle is the fake upstream's reported usage (its
own "tokenizer": litellm's cl100k count scaled per request) and ``litellm.token_counter``."""

from __future__ import annotations

import math
from typing import Any

import litellm
import pytest

from components.context_window.base import Message, ToolSchema
from components.context_window.token_estimator import (
    SAFETY_MARGIN,
    TokenEstimator,
    Tokenizer,
    calibrate,
    calibration_for,
    estimator_for,
    provider_ratio,
)
from tests.service.served_app import served

MODEL = "openai/llama-3.1-70b-instruct"
"""Served by an OpenAI-compatible server (vLLM and the like): no offline tokenizer, so tda estimates."""


def provider_count(body: dict[str, Any]) -> int:
    """The fake provider's tokenizer: cl100k (litellm's count) times 1.08 to 1.14, depending on the request."""
    base = litellm.token_counter(model="gpt-4", messages=body["messages"], tools=body.get("tools"))
    return math.ceil(base * (1.08 + 0.02 * (len(str(body["messages"])) % 4)))


def question(turn: int) -> str:
    return f"Turn {turn}: where is order {turn * 17}, and why did the refund for invoice {turn * 31} stall? " * 3


@pytest.fixture(autouse=True)
def uncalibrated():
    calibrate(MODEL, None)
    yield
    calibrate(MODEL, None)


def test_the_ratio_a_provider_counting_like_cl100k_implies_is_one():
    """litellm.token_counter counts a gpt-4 request by cl100k with the cookbook's overheads: a provider reporting that
    count needs no scaling (the overheads are not scaled)."""
    messages = [
        {"role": "system", "content": "You answer briefly."},
        {"role": "user", "content": "Where is order 7? " * 60, "name": "ann"},
    ]
    tools = [{"type": "function", "function": {"name": "find", "description": "Find an order", "parameters": {}}}]
    exact = litellm.token_counter(model="gpt-4", messages=messages)
    assert provider_ratio(messages, [], exact) == pytest.approx(1.0)
    assert provider_ratio(messages, [], exact * 2) > 2  # the overheads stay: the text alone doubles and more
    assert provider_ratio(messages, [], 11) == 0.0  # a made-up count (a fake's fixed usage) teaches nothing
    assert provider_ratio(messages[:1], [], 40) == 0.0  # too short: mostly overheads
    with_tools = litellm.token_counter(model="gpt-4", messages=messages, tools=tools)
    # tda counts a tool as the larger of its JSON and litellm's rendering: at least litellm's count, so below 1
    assert 0 < provider_ratio(messages, [ToolSchema.from_openai(t) for t in tools], with_tools) <= 1.0


async def test_provider_counts_calibrate_the_estimate_persisted_across_a_restart(live, upstream):
    upstream.prompt_tokens = provider_count
    async with served(live) as app:
        await app.profile("llama", type="llm_only", model=MODEL, upstream={"base_url": upstream.base_url})
        assert (await app.http("POST", "/v1/sessions", json={"id": "s", "profile_id": "llama"})).status_code == 201
        turns = []
        for turn in range(1, 9):
            r = await app.http("POST", "/v1/sessions/s/turns", json={"query": question(turn)})
            assert r.status_code == 201, r.text
            turns.append(r.json())
    first, last = turns[0]["snapshot"], turns[-1]["snapshot"]
    assert f"+{SAFETY_MARGIN:.0%}" in first["token_method"] and "calibrated" not in first["token_method"]
    assert "calibrated on" in last["token_method"] and MODEL in last["token_method"]
    seen = [(r.body, provider_count(r.body)) for r in upstream.received]
    tokens = estimator_for(MODEL)
    for body, reported in seen:  # never below the provider on what was seen
        sent = [Message.from_chat(m) for m in body["messages"]]
        assert tokens.count_request(sent) >= reported, (tokens.count_request(sent), reported)
    # and tighter than the fixed +25% (the provider counts 8-14% above cl100k)
    assert last["total_used"] >= seen[-1][1]
    fixed = TokenEstimator(tokenizer=Tokenizer("tiktoken", "cl100k_base", SAFETY_MARGIN, MODEL))
    assert last["total_used"] < fixed.count_request([Message.from_chat(m) for m in seen[-1][0]["messages"]])
    learned = calibration_for(MODEL)
    assert learned is not None and learned.samples >= 3

    calibrate(MODEL, None)  # forget it in memory: the restarted service reads it back from the database
    async with served(live) as app:
        assert calibration_for(MODEL) == learned
        r = await app.http("POST", "/v1/sessions/s/turns", json={"query": question(9)})
        assert r.status_code == 201, r.text
        again = r.json()["snapshot"]
    assert f"calibrated on {learned.samples}" in again["token_method"] or "calibrated on" in again["token_method"]
    assert again["total_used"] >= provider_count(upstream.received[-1].body)


async def test_a_chat_clients_calls_calibrate_too(live, upstream):
    """Through /v1/chat/completions (the real openai SDK, no session): the provider's counts tune the model too."""
    upstream.prompt_tokens = provider_count
    async with served(live) as app:
        await app.profile("llama", type="llm_only", model=MODEL, upstream={"base_url": upstream.base_url})
        client = app.sdk(**{"X-TDA-Profile": "llama"})
        for turn in range(1, 5):
            messages = [{"role": "user", "content": question(turn) * 5}]
            await client.chat.completions.create(model="tda", messages=messages)  # type: ignore[arg-type]
    learned = calibration_for(MODEL)
    assert learned is not None and learned.samples == 4
    tokens = estimator_for(MODEL)
    for r in upstream.received:
        sent = [Message.from_chat(m) for m in r.body["messages"]]
        assert tokens.count_request(sent) >= provider_count(r.body)
