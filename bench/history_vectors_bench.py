"""What keeping recall's part vectors in Chroma saves: the first turn of a replica (or a restarted service) whose
in-memory index lacks a long imported session.

Per history length (BENCH_VECTOR_MESSAGES, default 2000,10000; messages as `recall_bench.py --speed` builds them, from
the bench's generated chats): service A imports the history and indexes it (the background writer, which also writes
the vectors), then stops. Service B, on the same database and Chroma (TDA_CHROMA_URL: a server, as replicas share it;
unset: the embedded store under the same data folder, as after a restart), takes one turn: "after" with the store,
"before" without it (as on main: the history is embedded inside the turn; the module timeout is lifted so the figure
is the whole cost, not the 2 s after which conversation_history gives up and the window loses the history).

Run: `python bench/history_vectors_bench.py` (TDA_EMBEDDER, default minilm-int8).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.recall_bench import _timing, chat_service  # noqa: E402
from bench.recall_data import chats  # noqa: E402
from components.context_window.base import Message  # noqa: E402
from components.context_window.recall.messages import embedded_text, parts_of  # noqa: E402
from tda.config import Settings, offline_library_defaults  # noqa: E402
from tda.db import upgrade  # noqa: E402

offline_library_defaults()

LENGTHS = tuple(int(x) for x in os.environ.get("BENCH_VECTOR_MESSAGES", "2000,10000").split(","))
EMBEDDER = os.environ.get("TDA_EMBEDDER", "minilm-int8")
CHROMA_URL = os.environ.get("TDA_CHROMA_URL") or None
RUN = uuid.uuid4().hex[:8]
"""Session ids are unique per run and length: a shared Chroma server keeps what earlier runs stored."""


class Counting:
    def __init__(self, inner: Any) -> None:
        self.inner, self.texts = inner, 0

    async def embed(self, texts: Any) -> Any:
        self.texts += len(texts)
        return await self.inner.embed(texts)


def history(n: int) -> list[dict[str, Any]]:
    texts = [str(m["content"]) for m in chats(1)[0][1].messages]
    return [
        {"role": ("user", "assistant")[i % 2], "content": f"{texts[i % len(texts)]} ({i})", "turn": i // 2 + 1}
        for i in range(n)
    ]


async def index_on_a(settings: Settings, session: str, messages: list[dict[str, Any]]) -> float:
    from tda.app import create_app

    app = create_app(settings, migrate=False, warm_up_llm=False, warm_up_knowledge=True)
    async with chat_service(app) as (svc, client, headers):
        body = {"id": session, "profile_id": "chat", "context_limit": 16_000}
        assert (await client.post("/v1/sessions", json=body, headers=headers)).status_code == 201
        started = time.perf_counter()
        r = await client.post(f"/v1/sessions/{session}/messages", json={"messages": messages}, headers=headers)
        assert r.status_code == 201
        await svc.writer.settle(session)
        return time.perf_counter() - started


async def first_turn_on_b(settings: Settings, session: str, *, stored: bool) -> tuple[float, float, int, str]:
    """B's first turn: its assembly (ms, Server-Timing), the CPU ms of the whole turn, how many texts it embedded
    (the model and the tokenizers are warmed up first, as `tda serve` does) and conversation_history's status."""
    from tda.app import create_app

    app = create_app(settings, migrate=False, warm_up_llm=True, warm_up_knowledge=True)
    # the turn's indexing job gives a long history its vectors after the response: shutdown waits for it
    async with app.test_app_class(app, shutdown_timeout=900) as running:
        svc = running.app.extensions["tda"]
        recall = svc.sources.history_recall
        counting = recall.embedder = Counting(recall.embedder)
        if not stored:
            recall.stored = None
        token, _ = await svc.store.tokens.create("bench-b", "admin")
        client = running.test_client()
        cpu = time.process_time()
        r = await client.post(
            f"/v1/sessions/{session}/turns",
            json={"query": "What did we say about the boiler?"},
            headers={"Authorization": f"Bearer {token}"},
        )
        cpu = (time.process_time() - cpu) * 1000
        assert r.status_code == 201, await r.get_json()
        modules = (await r.get_json())["snapshot"]["modules"]
        status = next(m["status"] for m in modules if m["module_id"] == "conversation_history")
        return _timing(r.headers["Server-Timing"], "assemble"), cpu, counting.texts, status


def main() -> None:
    where = CHROMA_URL or "embedded Chroma (a restart)"
    print(f"History vectors bench: embedder {EMBEDDER}, {where}\n")
    head = "B's first turn before: assembly ms, turn CPU ms, texts embedded (history module)"
    print(f"| messages | parts | A: import + indexing, s | {head} | after |")
    print("|---:|---:|---:|---|---|")
    for n in LENGTHS:
        folder = Path(tempfile.mkdtemp(prefix="vectors-bench-"))
        upgrade(f"sqlite+aiosqlite:///{folder / 'tda.db'}")
        settings = Settings(data_dir=folder, mock_model=True, embedder=EMBEDDER, chroma_url=CHROMA_URL)
        messages = history(n)
        parts = len({p for m in messages for p in parts_of(embedded_text(Message(m["role"], m["content"])))})
        session = f"long-{n}-{RUN}"
        indexing = asyncio.run(index_on_a(settings, session, messages))
        after = asyncio.run(first_turn_on_b(settings, session, stored=True))
        unbounded = dataclasses.replace(settings, module_timeout_s=600.0)
        before = asyncio.run(first_turn_on_b(unbounded, session, stored=False))
        row = " | ".join(f"{w:,.0f}, {c:,.0f}, {t:,} ({status})" for w, c, t, status in (before, after))
        print(f"| {n:,} | {parts:,} | {indexing:,.1f} | {row} |", flush=True)


if __name__ == "__main__":
    main()
