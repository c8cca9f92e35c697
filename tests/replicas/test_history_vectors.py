"""Two apps on one PostgreSQL (and one Chroma server, as replicas run): the vectors of a history one of them indexed,
kept in the shared database, are read by the other, whose first turn on the session embeds only its question."""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from components.context_window.base import Message
from components.context_window.recall.messages import embedded_text, parts_of
from tda.app import create_app
from tda.config import Settings
from tests.replicas.servers import Backing
from tests.service.support import ScriptedModel
from tests.service.test_history_recall import FACT, QUESTION, long_history
from tests.service.test_history_vectors import CountingEmbedder, stored_vectors


@dataclasses.dataclass
class App:
    svc: Any
    client: Any
    model: ScriptedModel
    embedder: CountingEmbedder


@asynccontextmanager
async def replicas(backing: Backing, root: Path, *names: str) -> AsyncIterator[list[App]]:
    """In-process apps on a fresh database of the shared PostgreSQL and the shared Chroma server (minilm-int8)."""
    database = backing.postgres.create_database(f"vectors_{secrets.token_hex(4)}")
    async with AsyncExitStack() as stack:
        apps = []
        for i, name in enumerate(names):
            settings = Settings(
                data_dir=root / name,
                database_url=database,
                chroma_url=backing.chroma.url,
                mock_model=True,
                embedder="minilm-int8",
            )
            model = ScriptedModel()
            app = create_app(settings, llm=model.llm, migrate=i == 0, warm_up_llm=False, warm_up_knowledge=False)
            served = await stack.enter_async_context(app.test_app())
            svc = served.app.extensions["tda"]
            embedder = CountingEmbedder(svc.knowledge)
            svc.sources.history_recall.embedder = embedder
            apps.append(App(svc, served.test_client(), model, embedder))
        yield apps


async def test_a_history_indexed_on_one_replica_is_not_embedded_again_by_the_other(
    backing: Backing, tmp_path: Path
) -> None:
    history = long_history(300)
    parts = {p for m in history for p in parts_of(embedded_text(Message(m["role"], m["content"])))}
    async with replicas(backing, tmp_path, "a", "b") as (a, b):
        token, _ = await a.svc.store.tokens.create("replica-vectors", "admin")
        headers = {"Authorization": f"Bearer {token}"}
        profile = {"id": "chat", "type": "llm_only", "context_window_type_id": "conversation_first"}
        assert (await a.client.post("/v1/profiles", json=profile, headers=headers)).status_code == 201
        session = {"id": "shared", "profile_id": "chat", "context_limit": 4_000}
        assert (await a.client.post("/v1/sessions", json=session, headers=headers)).status_code == 201
        r = await a.client.post("/v1/sessions/shared/messages", json={"messages": history}, headers=headers)
        assert r.status_code == 201
        await a.svc.writer.settle("shared")  # A indexed the import (as the next turn, holding the lock, would wait)
        assert parts <= set(a.embedder.texts)
        assert await stored_vectors(b.svc.store.db, "shared") == len(parts)

        r = await b.client.post("/v1/sessions/shared/turns", json={"query": QUESTION}, headers=headers)
        assert r.status_code == 201, await r.get_json()
        assert FACT in [m["content"] for m in b.model.sent[-1]["messages"]]
        assert parts.isdisjoint(b.embedder.texts)  # B read A's vectors: it embedded its question, not the history

        r = await b.client.delete("/v1/sessions/shared", headers=headers)  # from B, the vectors A stored go too
        assert r.status_code == 204
        assert await stored_vectors(a.svc.store.db, "shared") == 0
