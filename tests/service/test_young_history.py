"""A young history is indexed by words only (``tda.recall.messages.YOUNG_MESSAGES``): a session's calls embed
nothing until a window could recall from its history, and every window, the first that recalls included, is the one
a service embedding each message as it comes sends."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

import tda.recall.messages as service_recall
from components.context_window.base import Embedder
from components.context_window.recall.messages import SessionRecall
from tda.config import Settings
from tests.agent_session import TOOLS, customer, turn_messages
from tests.service.fake_upstream import FakeUpstream, fake_upstream
from tests.service.served_app import served

LIMIT = 4_000
"""Small enough that a few agent turns overflow the history's room and it recalls."""


class Counting:
    """An embedder that counts the texts it embeds."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.texts = inner, 0

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += len(texts)
        return await self.inner.embed(texts)


def conversations() -> list[list[dict[str, Any]]]:
    """What a client sends, call by call: a greeting, a short exchange, then agent turns (question, tool call, a
    ~950-token tool result, answer) until the history is far past the window, and last a question about the first
    customer, whose turn only recall can bring back."""
    short = [{"role": "user", "content": "Hello there."}, {"role": "assistant", "content": "Hi! How can I help?"}]
    calls = [short[:1], [*short, {"role": "user", "content": "Can you look up orders?"}]]
    chat = [*short, {"role": "user", "content": "Can you look up orders?"}, {"role": "assistant", "content": "Yes."}]
    for turn in range(1, 6):
        chat = [*chat, *turn_messages(turn)]
        calls.append([*chat, {"role": "user", "content": f"And customer {customer(turn + 1)}'s open orders?"}])
    calls.append([*chat, {"role": "user", "content": f"Back to customer {customer(1)}: which orders were open?"}])
    return calls


async def windows(
    live: Settings, data_dir: Path, template_db: Path, calls: list[list[dict[str, Any]]]
) -> tuple[list[str], list[int], list[dict]]:
    """Each call's window as the provider got it, the texts embedded by the end of each call (its work after the
    response included), and each window's history facts, from a service of its own (a case another session made
    would be recalled too) on a database of its own under ``data_dir``."""
    data_dir.mkdir()
    shutil.copy(template_db, data_dir / "tda.db")
    async with AsyncExitStack() as stack:
        upstream = stack.enter_context(fake_upstream())
        settings = dataclasses.replace(
            live, data_dir=data_dir, upstream_base_url=upstream.base_url, module_timeout_s=60.0
        )
        app = await stack.enter_async_context(served(settings))  # no module may time out under load
        await app.profile("agent", model="gpt-4o", context_limit=LIMIT, upstream={"base_url": upstream.base_url})
        assert app.svc.sources.embedder is not None
        embedder = Counting(app.svc.sources.embedder)
        recall = app.svc.sources.history_recall = SessionRecall(embedder)
        client = app.sdk(**{"X-TDA-Profile": "agent", "X-TDA-Session": "s"})
        embedded = []
        for conversation in calls:
            await client.chat.completions.create(model="tda", messages=conversation, tools=TOOLS)  # type: ignore[arg-type]
            await app.svc.writer.drain()
            await asyncio.gather(*recall._background.jobs)
            embedded.append(embedder.texts)
        r = await app.http("GET", "/v1/sessions/s/snapshots")
    sent = [json.dumps(r.body["messages"]) for r in upstream.received if r.body.get("tools")]
    facts = [
        next(m["metadata"] for m in row["snapshot"]["modules"] if m["module_id"] == "conversation_history")
        for row in r.json()["snapshots"]
    ]
    return sent, embedded, facts


async def test_a_young_sessions_calls_embed_nothing_and_every_window_is_the_eager_ones(
    live: Settings, tmp_path: Path, template_db: Path, monkeypatch: pytest.MonkeyPatch
):
    young, embedded, facts = await windows(live, tmp_path / "young", template_db, conversations())
    assert embedded[:2] == [0, 0]  # a greeting, a short exchange: no window recalls from them, nothing embedded
    assert embedded[-1] > 0
    assert facts[-1].get("recall") == "lexical+dense", facts[-1]  # the last window recalled, by meaning
    monkeypatch.setattr(service_recall, "YOUNG_MESSAGES", -1)  # no history is young: every message embedded
    eager, eager_embedded, eager_facts = await windows(live, tmp_path / "eager", template_db, conversations())
    assert 0 < eager_embedded[0] < eager_embedded[1]  # each message embedded as it came
    assert len(young) == len(eager) == len(conversations())
    assert young == eager  # byte for byte, the first window that recalls included
    assert facts == eager_facts


async def test_a_young_history_its_window_cuts_below_its_room_is_recalled_from_as_an_eager_one(
    live: Settings, tmp_path: Path, template_db: Path, monkeypatch: pytest.MonkeyPatch
):
    """A question filling most of the window cuts a young history's share below the smallest room it is allocated:
    its module asks recall, which gives the history its vectors in the turn, and the window is the eager one's."""
    said = [
        f"Note {i}: the {w} shipment left the north depot on time, packed in {i + 2} crates, and the driver "
        "signed for it at the gate before noon."
        for i, w in enumerate(["tea", "salt", "rope"] * 2)
    ]
    chat = [{"role": "user" if i % 2 == 0 else "assistant", "content": text} for i, text in enumerate(said)]
    chat.append({"role": "user", "content": "Thanks. Anything else?"})
    long = " ".join(f"Line {i} of the pasted report says the tea shipment was weighed again." for i in range(222))
    answered = {"role": "assistant", "content": FakeUpstream().answer("gpt-4o")}  # the reply to the first call
    calls = [chat, [*chat, answered, {"role": "user", "content": f"{long} When did the tea shipment leave?"}]]
    young, embedded, facts = await windows(live, tmp_path / "young", template_db, calls)
    assert embedded[0] == 0  # young: nothing embedded
    assert embedded[1] > 0 and facts[-1].get("recall") == "lexical+dense", facts  # recall asked: its vectors came
    monkeypatch.setattr(service_recall, "YOUNG_MESSAGES", -1)
    eager, _, eager_facts = await windows(live, tmp_path / "eager", template_db, calls)
    assert young == eager
    assert facts == eager_facts
