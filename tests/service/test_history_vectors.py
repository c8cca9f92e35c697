"""Recall's part vectors kept in the application's database (default embedder, minilm-int8): a restart reads them
instead of embedding the history again; deleting a session or purging its memory deletes them; a session never gets
another's; a store that fails costs embeddings, never a turn."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text

from components.context_window.base import Message
from components.context_window.recall.messages import embedded_text, part_key, parts_of
from tda.app import create_app
from tda.config import Settings
from tda.db import upgrade
from tda.demo import seed_demo
from tda.recall.vectors import write_now
from tda.store import Store
from tda.store.vectors import BY_KEYS, HistoryVectorStore
from tests.service.support import ScriptedModel
from tests.service.test_history_recall import FACT, QUESTION, long_history

HISTORY = long_history(160)
PARTS = {p for m in HISTORY for p in parts_of(embedded_text(Message(m["role"], m["content"])))}


class CountingEmbedder:
    """The service's embedder, remembering every text it was asked to embed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts: list[str] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return await self.inner.embed(texts)

    def history_parts(self) -> set[str]:
        return PARTS & set(self.texts)


@dataclasses.dataclass
class Chat:
    svc: Any
    client: Any
    headers: dict[str, str]
    model: ScriptedModel
    embedder: CountingEmbedder

    async def post(self, path: str, body: Any = None, status: int = 201) -> Any:
        r = await self.client.post(path, json=body, headers=self.headers)
        assert r.status_code == status, await r.get_json()
        return await r.get_json()

    async def new_session(self, session_id: str, history: list[dict[str, Any]] = HISTORY) -> None:
        await self.post("/v1/sessions", {"id": session_id, "profile_id": "chat", "context_limit": 4_000})
        await self.post(f"/v1/sessions/{session_id}/messages", {"messages": history})
        await self.svc.writer.settle(session_id)  # indexed (and its vectors written) after the response

    async def ask(self, session_id: str) -> list[dict[str, Any]]:
        await self.post(f"/v1/sessions/{session_id}/turns", {"query": QUESTION})
        return self.model.sent[-1]["messages"]

    async def stored(self, session_id: str) -> int:
        """How many vectors the database holds for the session."""
        return await stored_vectors(self.svc.store.db, session_id)


async def stored_vectors(db: Any, session_id: str) -> int:
    async with db.read_rows() as c:
        query = text("SELECT count(*) FROM history_vectors WHERE session_id = :s")
        return int((await c.execute(query, {"s": session_id})).scalar_one())


class FailingVectors(HistoryVectorStore):
    """The history vectors' table as a database that stopped answering."""

    async def get(self, *_: Any) -> Any:
        raise ConnectionError("the database is unreachable")

    add = delete = get


@pytest.fixture
def minilm(settings: Settings) -> Settings:
    return dataclasses.replace(settings, embedder="minilm-int8")


@asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[Chat]:
    """One app on ``settings`` (its embedded Chroma under data_dir) with an llm_only profile ``chat``; stopping it
    closes the store, as a restart does."""
    model = ScriptedModel()
    app = create_app(settings, llm=model.llm, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with app.test_app() as served:
        svc = served.app.extensions["tda"]
        embedder = CountingEmbedder(svc.knowledge)
        svc.sources.history_recall.embedder = embedder
        token, _ = await svc.store.tokens.create("test-admin", "admin")
        chat = Chat(svc, served.test_client(), {"Authorization": f"Bearer {token}"}, model, embedder)
        if (await chat.client.get("/v1/profiles/chat", headers=chat.headers)).status_code != 200:
            profile = {"id": "chat", "type": "llm_only", "context_window_type_id": "conversation_first"}
            await chat.post("/v1/profiles", profile)
        yield chat


async def test_a_restarted_service_reads_the_vectors_instead_of_embedding_the_history_again(minilm: Settings):
    earlier = "Which kettle did we pick for the office kitchen in the end?"
    async with running(minilm) as first:
        await first.new_session("s")
        assert first.embedder.history_parts() == PARTS  # embedded once, when imported
        assert await first.stored("s") == len(PARTS)
        await first.post("/v1/sessions/s/turns", {"query": earlier})  # its vectors wait to be written with others
    async with running(minilm) as restarted:  # ... and were written when the service stopped
        sent = await restarted.ask("s")
        assert restarted.embedder.history_parts() == set() and earlier not in restarted.embedder.texts
        # only the new turn's texts: its question, and its reply (embedded ahead for the next call, when it gets to)
        assert set(restarted.embedder.texts) <= {QUESTION, "Done."} and QUESTION in restarted.embedder.texts
    assert FACT in [m["content"] for m in sent]


async def test_deleting_a_session_deletes_its_vectors(minilm: Settings):
    async with running(minilm) as chat:
        await chat.new_session("gone")
        await chat.new_session("kept")
        assert await chat.stored("gone") == len(PARTS)
        r = await chat.client.delete("/v1/sessions/gone", headers=chat.headers)
        assert r.status_code == 204
        assert await chat.stored("gone") == 0
        assert await chat.stored("kept") == len(PARTS)  # another session's, with the same texts, stay


async def test_a_memory_purge_deletes_the_vectors_and_none_come_back(minilm: Settings):
    async with running(minilm) as chat:
        await chat.new_session("purged")
        body = await chat.post("/v1/sessions/purged/purge-memory", status=200)
        assert body["vectors_deleted"] == len(PARTS)
        embedded = len(chat.embedder.texts)
        await chat.ask("purged")  # the purged history is indexed again, as invalid: nothing of it is embedded
        await chat.svc.writer.settle("purged")
        await chat.svc.history_vectors.flush()  # a recorded turn's vectors are written with others, within 1 s
        assert PARTS.isdisjoint(chat.embedder.texts[embedded:])
        assert await chat.svc.history_vectors.get("purged", {part_key(p) for p in PARTS}) == {}
        assert 0 < await chat.stored("purged") <= 4  # the new turn's question and reply only
    assert FACT not in [m["content"] for m in chat.model.sent[-1]["messages"]]


async def test_a_session_never_reads_another_sessions_vectors_even_for_the_same_text(minilm: Settings):
    async with running(minilm) as first:
        await first.new_session("a")
        keys = {part_key(p) for p in PARTS}
        assert set(await first.svc.history_vectors.get("a", keys)) == keys
        assert await first.svc.history_vectors.get("b", keys) == {}
    async with running(minilm) as restarted:  # b imports a's very texts: it embeds them, a's vectors are not its own
        await restarted.new_session("b")
        assert restarted.embedder.history_parts() == PARTS


async def test_a_failing_vectors_table_costs_embeddings_never_a_turn(
    minilm: Settings, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.WARNING)
    async with running(minilm) as chat:
        chat.svc.history_vectors.store = FailingVectors(chat.svc.store.db)
        await chat.new_session("s")
        sent = await chat.ask("s")
        await chat.ask("s")
    assert FACT in [m["content"] for m in sent]
    assert chat.embedder.history_parts() == PARTS
    warnings = [r for r in caplog.records if "history vectors" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]


async def test_vectors_waiting_for_a_session_another_replica_deleted_are_not_kept(minilm: Settings):
    async with running(minilm) as chat:
        await chat.new_session("gone")
        await chat.new_session("kept")
        late = {part_key(f"a late part {n}"): np.full(384, 0.1, dtype=np.float32) for n in range(3)}
        with write_now():  # a recorded turn's vectors, waiting to be written with others
            await chat.svc.history_vectors.put("gone", late)
            await chat.svc.history_vectors.put("kept", late)
        await chat.svc.store.sessions.delete("gone", "another replica")  # its recall index and queue are not here
        await chat.svc.history_vectors.flush()
        assert await chat.stored("gone") == 0
        assert await chat.stored("kept") == len(PARTS) + len(late)


async def check_the_vector_table(url: str) -> None:
    """The table's own contract, on the database at ``url`` (tests/replicas/test_postgres.py runs it on PostgreSQL):
    vectors read back bit for bit, per session and embedder; a part already stored is kept; a session that is gone
    gets none; deleting the session deletes them."""
    await asyncio.to_thread(upgrade, url)
    store = Store.connect(url)
    try:
        await _check_the_vector_table(store)
    finally:
        await store.close()


async def _check_the_vector_table(store: Store) -> None:
    await seed_demo(store)
    for session_id in ("a", "b"):
        await store.sessions.create({"id": session_id, "profile_id": "demo-tools"}, "test")
    rng = np.random.default_rng(1)
    vectors = {f"k{n}": rng.standard_normal(384).astype(np.float32) for n in range(BY_KEYS + 20)}
    table = store.history_vectors
    assert await table.add("minilm", {"a": vectors, "b": {"k0": vectors["k1"]}, "gone": vectors}) == len(vectors) + 1
    await table.add("minilm", {"a": {"k0": vectors["k1"], "new": vectors["k2"]}})  # k0 is stored: it stays

    few = await table.get("a", "minilm", ["k0", "k3", "new", "missing"])
    assert set(few) == {"k0", "k3", "new"}
    assert few["k0"].tobytes() == vectors["k0"].tobytes() and few["new"].tobytes() == vectors["k2"].tobytes()
    every = await table.get("a", "minilm", [*vectors, "missing"])  # more than BY_KEYS: the session's whole set
    assert {k: v.tobytes() for k, v in every.items()} == {k: v.tobytes() for k, v in vectors.items()}
    assert (await table.get("b", "minilm", vectors))["k0"].tobytes() == vectors["k1"].tobytes()
    assert await table.get("a", "another-embedder", vectors) == {}
    assert await table.get("gone", "minilm", vectors) == {}

    await store.sessions.delete("a", "test")
    assert await table.get("a", "minilm", vectors) == {}
    assert await table.delete("b") == 1


async def test_the_vector_table_on_sqlite(tmp_path: Path) -> None:
    await check_the_vector_table(f"sqlite+aiosqlite:///{tmp_path / 'tda.db'}")
