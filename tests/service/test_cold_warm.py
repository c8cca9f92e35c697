"""Cold = warm (issue 32, item 2): the same stored state gives the same window whether recall's background indexing
(the history's vectors) has finished or not. A fresh recall index (a replica that never saw the session, a restart)
meets a long history cold, with the hashing embedder as it is and slowed down (each embedding call waits); its first
window is compared byte for byte with the one assembled once the index is warm, through /v1/chat/completions (what
the provider is sent) and through the what-if preview of a stored session (the messages a turn would send)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from typing import Any

import pytest

from components.context_window.base import Embedder
from components.context_window.recall.messages import SessionRecall
from tda.config import Settings
from tests.agent_session import SYSTEM, TOOLS, history, turn_messages
from tests.service.fake_upstream import FakeUpstream, fake_upstream
from tests.service.served_app import App, served

LIMIT = 16_000
QUERY = "Back to customer CUST-007: which of its orders were still open, and in which regions?"
"""Asks about a turn long gone from the newest part of the window: recall ranks the older history for it."""


class Slowed:
    """An embedder whose every call waits ``delay`` seconds first (a busy CPU, a remote model)."""

    def __init__(self, inner: Embedder, delay: float) -> None:
        self.inner, self.delay, self.calls = inner, delay, 0

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        await asyncio.sleep(self.delay)
        return await self.inner.embed(texts)


@dataclasses.dataclass
class Setup:
    app: App
    upstream: FakeUpstream


@pytest.fixture
async def setup(live: Settings) -> AsyncIterator[Setup]:
    async with AsyncExitStack() as stack:
        upstream = stack.enter_context(fake_upstream())
        settings = dataclasses.replace(live, upstream_base_url=upstream.base_url, module_timeout_s=60.0)
        app = await stack.enter_async_context(served(settings))  # no module may time out under load
        await app.profile("agent", model="gpt-4o", context_limit=LIMIT, upstream={"base_url": upstream.base_url})
        yield Setup(app, upstream)


def cold_recall(app: App, delay: float) -> Slowed:
    """A recall index that has seen nothing (as on a fresh replica), its embedder slowed by ``delay``."""
    assert app.svc.sources.embedder is not None
    slowed = Slowed(app.svc.sources.embedder, delay)
    app.svc.sources.history_recall = SessionRecall(slowed)
    return slowed


def recall_facts(snapshot: dict[str, Any]) -> dict[str, Any]:
    (history,) = [m for m in snapshot["modules"] if m["module_id"] == "conversation_history"]
    return history["metadata"]


@pytest.mark.parametrize("delay", [0.0, 0.3])
async def test_a_session_met_cold_gets_the_window_it_gets_warm_through_the_gateway(setup: Setup, delay: float):
    slowed = cold_recall(setup.app, delay)
    client = setup.app.sdk(**{"X-TDA-Profile": "agent", "X-TDA-Session": f"cold-{delay}"})
    conversation = [*history(60), {"role": "user", "content": QUERY}]
    for _ in range(2):  # cold, then the same call again (a retry of the turn) with the index warm
        await client.chat.completions.create(model="tda", messages=conversation, tools=TOOLS)  # type: ignore[arg-type]
    answered = [r for r in setup.upstream.received if r.body.get("tools")]  # not a summary made ahead: it has none
    cold, warm = (json.dumps(r.body["messages"]) for r in answered)
    assert slowed.calls > 1  # the history was embedded, not only the query
    assert cold == warm
    r = await setup.app.http("GET", f"/v1/sessions/cold-{delay}/snapshots")
    for row in r.json()["snapshots"]:
        facts = recall_facts(row["snapshot"])
        assert "recall_vectors_pending" not in facts, facts  # ranked with every message's vectors, cold as warm


@pytest.mark.parametrize("delay", [0.0, 0.3])
async def test_a_stored_session_met_cold_gets_the_window_it_gets_warm(setup: Setup, delay: float):
    app = setup.app
    r = await app.http("POST", "/v1/sessions", json={"id": "stored", "profile_id": "agent"})
    assert r.status_code == 201, r.text
    messages = [
        {**{k: v for k, v in m.items() if v is not None}, "turn": t} for t in range(1, 61) for m in turn_messages(t)
    ]
    r = await app.http("POST", "/v1/sessions/stored/messages", json={"messages": [SYSTEM | {"turn": 0}, *messages]})
    assert r.status_code == 201, r.text
    cold_recall(app, delay)  # what the import indexed is not there: as on a replica that did not import it

    async def preview() -> dict[str, Any]:
        body = {"type_id": "balanced", "session_id": "stored", "query": QUERY}
        r = await app.http("POST", "/v1/context-window-types/preview", json=body)
        assert r.status_code == 200, r.text
        return r.json()

    cold, warm = await preview(), await preview()
    assert json.dumps(cold["messages"]) == json.dumps(warm["messages"])
    assert recall_facts(cold["snapshot"]) == recall_facts(warm["snapshot"])
    assert "recall_vectors_pending" not in recall_facts(cold["snapshot"])


async def test_a_stateless_conversation_never_recalls_another_ones_messages(setup: Setup):
    """Stateless calls share no index: the second conversation (as long, about something else) asks about what only
    the first said, and its window holds none of it."""
    secret = "The locker code of the night shift is 4417-ZEBRA."
    first = [
        {"role": "user", "content": secret},
        {"role": "assistant", "content": "Noted."},
        *history(30)[1:],
        {"role": "user", "content": "Thanks."},
    ]
    second = [*history(31)[1:], {"role": "user", "content": "What is the locker code of the night shift?"}]
    client = setup.app.sdk(**{"X-TDA-Profile": "agent"})
    for conversation in (first, second):
        await client.chat.completions.create(model="tda", messages=conversation, tools=TOOLS)  # type: ignore[arg-type]
    assert "4417" not in json.dumps(setup.upstream.received[1].body["messages"])


async def test_a_stateless_client_resending_its_conversation_gets_the_windows_a_fresh_index_gives(setup: Setup):
    """A stateless client sends its whole conversation every call, longer each time, and once with an earlier
    message edited: each call goes on from the recall index the last one built (only what it added is indexed), and
    every window is byte for byte the one a server that kept no index sends."""
    app, slowed = setup.app, cold_recall(setup.app, 0.0)
    client = app.sdk(**{"X-TDA-Profile": "agent"})
    chat = history(40)
    edited = [*chat[:9], {**chat[9], "content": chat[9]["content"] + " Also CUST-007's regions, please."}, *chat[10:]]
    calls = [[*chat[: 4 * n + 1], {"role": "user", "content": QUERY}] for n in (30, 34, 38)]
    calls += [[*edited, {"role": "user", "content": QUERY}], [*chat, {"role": "user", "content": QUERY}]]
    kept = app.svc.sources.history_recall
    assert isinstance(kept, SessionRecall)
    for fresh in (False, True):
        for conversation in calls:
            await client.chat.completions.create(model="tda", messages=conversation, tools=TOOLS)  # type: ignore[arg-type]
        assert len(kept.call_indexes) == (0 if fresh else 2)  # the longest and the edited conversation's
        kept.call_indexes.max_entries = 0  # now nothing is kept: each call indexes its conversation afresh
    bodies = [json.dumps(r.body["messages"]) for r in setup.upstream.received]
    assert bodies[: len(calls)] == bodies[len(calls) :]
    assert slowed.calls > 1 and any("recalled because" in b for b in bodies)
