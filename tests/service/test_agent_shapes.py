"""Issue 32's held-out check on agent sessions shaped as real clients send them (session 49): the cheap part of
bench/agent_shapes_bench.py, through the real app and a fake upstream that records what it was sent and answers
by the shape's script (tests/agent_shapes.py). For every model call the upstream receives: the window full when
the conversation exceeds it, the newest turn whole (or, alone larger than the room, cut with nothing older beside
it), the history part the same across the turn's steps (or its beginning), every result with its call and sent as
the client sent it (or its beginning, noted), every auxiliary call at the profile's upstream within its window, and
the cut reported (``usage.tda``, ``X-TDA-Cut``) on chat completions, Responses and Messages."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import pytest

from bench.agent_shapes_bench import CLAUDE, PROFILES, Harness, Run, auxiliary_breaks, check, drive
from tda.config import Settings
from tests.agent_checks import question_at
from tests.agent_shapes import SHAPES, TURN, text_of
from tests.gateway.upstream import FakeUpstream
from tests.service.served_app import served


@pytest.fixture
async def harness(live: Settings) -> AsyncIterator[Harness]:
    async with AsyncExitStack() as stack:
        own = stack.enter_context(FakeUpstream())
        default = stack.enter_context(FakeUpstream())
        settings = dataclasses.replace(
            live, model="gpt-4o-mini", upstream_base_url=default.base_url, module_timeout_s=60.0
        )  # no module may time out under load: the windows are compared
        app = await stack.enter_async_context(served(settings))
        os.environ.setdefault("ANTHROPIC_API_KEY", "sk-fake")  # sent to the fake on 127.0.0.1 only
        for name in ("p8k", "p16k", "claude"):
            model, limit = PROFILES[name]
            upstream = {"base_url": own.base_url}
            if model == CLAUDE:  # litellm adds /v1/messages to the root
                upstream = {"base_url": own.base_url.removesuffix("/v1"), "api_key_env": "ANTHROPIC_API_KEY"}
            await app.profile(name, model=model, context_limit=limit, upstream=upstream, system_prompt="")
        h = Harness(app, own, default)
        try:
            yield h
        finally:
            await h.http.aclose()


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_every_shape_holds_items_1_to_4_through_every_wire(harness: Harness, shape: str):
    """Parallel calls, a 40K-token file read and a 5,000-row query (larger than the window), a 6-step loop, text
    beside calls and results as content parts: through chat completions (stateless and with a session), the
    Responses API and the Messages API, streamed and not (a stream's headers say the cut, as its last event's usage
    does)."""
    runs = [
        Run(shape, "chat", False, False, "p16k"),
        Run(shape, "chat", True, False, "p16k"),
        Run(shape, "chat", True, True, "p16k"),
        Run(shape, "responses", False, False, "p16k"),
        Run(shape, "responses", True, True, "p16k"),
        Run(shape, "messages", False, False, "p16k"),
        Run(shape, "messages", False, True, "p16k"),
    ]
    for run in runs:
        result = check(await drive(harness, run))
        assert result["breaks"] == [], (run.label, result["breaks"])
        assert result["utilisation"] and min(result["utilisation"]) >= 0.8
    assert auxiliary_breaks(harness, PROFILES) == []


async def test_claude_gets_no_placeholder_text_nor_two_questions_in_one_message(harness: Harness):
    """A call-only assistant message (``content: null``) reached Claude with litellm's "[System: Empty message
    content sanitised to satisfy protocol]" as its text; and a later step's history, cut from its end, could end on
    an older question, which Claude then got joined to the turn's own question in one user message."""
    for run in (Run("parallel", "messages", False, False, "claude"), Run("loop", "chat", True, False, "claude")):
        await drive(harness, dataclasses.replace(run, session=False))  # the model's token ratio, learned first
        result = check(await drive(harness, run))
        assert result["breaks"] == [], (run.label, result["breaks"])
    for r in harness.own.requests:
        assert "Empty message content sanitised" not in r.text
        for message in r.body.get("messages") or ():
            content = message.get("content")
            texts = [text_of([b]) for b in content] if isinstance(content, list) else [text_of(content)]
            assert sum(bool(TURN.match(t)) for t in texts) <= 1, texts


async def test_no_step_leaves_an_older_question_without_its_answer(harness: Harness):
    """Each later step of a loop cuts the history's tail from its end to make room for its calls: never so that the
    tail ends on a question (the model would read two questions in a row, Claude one message of both) or on the
    marker that opens the tail. What comes right before the turn's question is an answer or a result (or, with
    nothing older, the system prompt)."""
    for shape in ("parallel", "loop", "mixed"):
        for call in await drive(harness, Run(shape, "chat", False, False, "p16k")):
            asked = question_at(call.received)
            before = call.received[asked - 1]
            assert before["role"] in ("assistant", "tool") or asked == 1, (shape, call.step, before)


async def test_a_later_step_keeps_the_window_full_at_8k(harness: Harness):
    """At 8K, the mixed shape's third step (a loop of ~3,000 tokens, results as content parts) made room by dropping
    whole units from the end of the history's tail: 72% of the budget used. Now the first unit dropped goes too, its
    results cut to the room left: the window full, the part before it still the first step's."""
    for session in (False, True):
        result = check(await drive(harness, Run("mixed", "chat", session, False, "p8k")))
        assert result["breaks"] == [] and min(result["utilisation"]) >= 0.8, result
