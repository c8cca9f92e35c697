"""Issue 32, item 5: a session call never waits for a history summary the turn before could have made. An agent
session through /v1/chat/completions (user -> tool call -> tool result -> answer, the fake upstream calling the tool
and answering), its 16K profile at an upstream of its own: once a turn is answered (and while its tool loop's step is),
the summary the next call's window needs is made meanwhile, by the profile's model at the profile's upstream within
its window (item 3); the call finds it made and asks for none itself. Each snapshot says which summaries were made
ahead (``auxiliary_calls``: ``ahead``)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import litellm

from tda.config import Settings
from tests.agent_session import SYSTEM, TOOLS, orders, question
from tests.gateway.upstream import FakeUpstream
from tests.service.served_app import App, served

LIMIT = 16_000
PROFILE_MODEL = "gpt-4.1"


def _prompt_tokens(body: dict[str, Any]) -> int:
    return litellm.token_counter(model=body["model"], messages=body["messages"])


async def _settled(app: App) -> None:
    """The work started ahead of the session's next call, done (the call would otherwise wait for what is under way)."""
    await asyncio.gather(*app.svc.handler.background.jobs)


async def test_the_next_calls_summaries_are_made_ahead_at_the_profiles_upstream(live: Settings):
    with FakeUpstream() as own, FakeUpstream() as default:
        settings = dataclasses.replace(live, upstream_base_url=default.base_url, module_timeout_s=60.0)
        async with served(settings) as app:
            upstream = {"base_url": own.base_url}
            await app.profile("agent", model=PROFILE_MODEL, context_limit=LIMIT, upstream=upstream)
            client = app.sdk(**{"X-TDA-Profile": "agent", "X-TDA-Session": "ahead"})
            chat: list[dict[str, Any]] = [SYSTEM]
            for turn in range(1, 17):
                chat.append({"role": "user", "content": question(turn)})
                called = (await client.chat.completions.create(model="tda", messages=chat, tools=TOOLS)).choices[0]  # type: ignore[arg-type]
                assert called.message.tool_calls
                call = called.message.tool_calls[0]
                chat.append({"role": "assistant", "content": None, "tool_calls": [call.model_dump()]})
                chat.append({"role": "tool", "tool_call_id": call.id, "content": orders(turn, 20)})
                await _settled(app)
                answer = (await client.chat.completions.create(model="tda", messages=chat, tools=TOOLS)).choices[0]  # type: ignore[arg-type]
                chat.append({"role": "assistant", "content": answer.message.content})
                await _settled(app)
            r = await app.http("GET", "/v1/sessions/ahead/snapshots")
            snapshots = [row["snapshot"] for row in r.json()["snapshots"]]

    summaries = [c for s in snapshots for c in s["auxiliary_calls"] if c["purpose"] == "history_summary"]
    assert len(summaries) >= 3  # the session dropped block after block
    assert all(c["ahead"] for c in summaries)  # each made before the call that shows it: none inside a call
    asked = [r.body for r in own.calls() if not r.body.get("tools")]
    assert len(asked) - len(summaries) in (0, 1)  # all reported, but the one made for a next call that never came
    assert not default.requests  # every model call went to the profile's upstream, for its model, within its window
    assert all(body["model"] == PROFILE_MODEL and _prompt_tokens(body) <= LIMIT for body in asked)
