"""What keeping recall's part vectors in Chroma saves: the first turn of a replica (or a restarted service) whose
in-memory index lacks a long imported session.

Per history length (BENCH_VECTOR_MESSAGES, default 2000,10000; messages as `recall_bench.py --speed` builds them, from
the bench's generated chats): service A imports the history and indexes it (the background writer, which also writes
the vectors), then stops. Service B, on the same database and Chroma (TDA_CHROMA_URL: a server, as replicas share it;
unset: the embedded store under the same data folder, as after a restart), takes one turn: "after" with the store,
"before" without it (as on main: the history is embedded inside the turn; the module timeout is lifted so the figure
is the whole cost, not the 2 s after which conversation_history gives up and the window loses the history).

Run: `python bench/history_vectors_bench.py` (TDA_EMBEDDER, default minilm-int8).

`--per-turn`: the store's own cost per turn as it fills (no model: random float32 vectors of BENCH_VECTOR_DIMS, 384 as
minilm's): with BENCH_VECTOR_STORED (default 0,1000,10000,50000) vectors of other sessions stored (100 parts a
session), the medians of a turn's read of its 5 new parts (missing, as recall asks before it writes), its write of
them (one flush), and a cold replica's read of a 2,000-part session; CPU of the whole process and wall, ms. It goes
through ``svc.history_vectors`` only, so the same file measures any version of the store.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import resource
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

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


STORED = tuple(int(x) for x in os.environ.get("BENCH_VECTOR_STORED", "0,1000,10000,50000").split(","))
DIMS = int(os.environ.get("BENCH_VECTOR_DIMS", "384"))
TURNS = 40
TURN_PARTS = 5
COLD_PARTS = 2_000
PARTS_PER_SESSION = 100


def _vectors(keys: list[str], rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {key: rng.standard_normal(DIMS).astype(np.float32) for key in keys}


async def _timed(call: Any) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    await call()
    return (time.process_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000


async def per_turn(folder: Path) -> tuple[str, list[tuple[int, dict[str, tuple[float, float]]]]]:
    """The store's class, and per stored level: op -> (median CPU ms, median wall ms)."""
    from components.context_window.recall.messages import part_key
    from tda.app import create_app
    from tda.recall.vectors import write_now

    rng = np.random.default_rng(7)
    settings = Settings(data_dir=folder, mock_model=True, embedder=EMBEDDER, chroma_url=CHROMA_URL)
    app = create_app(settings, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    out = []
    async with chat_service(app) as (svc, _, _headers):
        store = svc.history_vectors
        assert store is not None, f"{EMBEDDER} keeps no vectors"

        async def session(name: str, parts: int) -> list[str]:
            await svc.store.sessions.create({"id": name, "profile_id": "chat"}, "bench")
            keys = [part_key(f"{name} part {n}") for n in range(parts)]
            with write_now():
                for start in range(0, parts, 1_000):
                    await store.put(name, _vectors(keys[start : start + 1_000], rng))
                await store.flush()
            return keys

        cold_session = f"cold-{RUN}"
        cold = await session(cold_session, COLD_PARTS)
        filled = 0
        for level in STORED:
            while filled < level:
                await session(f"other-{RUN}-{filled}", PARTS_PER_SESSION)
                filled += PARTS_PER_SESSION
            turn_session = f"turn-{RUN}-{level}"
            await svc.store.sessions.create({"id": turn_session, "profile_id": "chat"}, "bench")
            costs: dict[str, list[tuple[float, float]]] = {"read 5 new": [], "write 5": [], "read 2,000 cold": []}
            for t in range(TURNS):
                keys = [part_key(f"{turn_session} turn {t} part {n}") for n in range(TURN_PARTS)]
                fresh = _vectors(keys, rng)
                costs["read 5 new"].append(await _timed(lambda: store.get(turn_session, keys)))  # noqa: B023

                async def write() -> None:
                    with write_now():
                        await store.put(turn_session, fresh)  # noqa: B023
                        await store.flush()

                costs["write 5"].append(await _timed(write))
            for _ in range(5):
                costs["read 2,000 cold"].append(await _timed(lambda: store.get(cold_session, cold)))
            out.append((level, {op: _medians(values) for op, values in costs.items()}))
            print(f"  {level:,} stored: {out[-1][1]}", file=sys.stderr, flush=True)
    return type(store).__name__, out


def _medians(values: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(v[0] for v in values), statistics.median(v[1] for v in values)


def main_per_turn() -> None:
    folder = Path(tempfile.mkdtemp(prefix="vectors-turn-bench-"))
    upgrade(f"sqlite+aiosqlite:///{folder / 'tda.db'}")
    store, rows = asyncio.run(per_turn(folder))
    print(f"History vectors per turn: {store}, {EMBEDDER}, {DIMS} dims; CPU ms of the process / wall ms\n")
    ops = list(rows[0][1])
    print("| stored vectors (other sessions) | " + " | ".join(ops) + " |")
    print("|---:|" + "---:|" * len(ops))
    for level, medians in rows:
        print(f"| {level:,} | " + " | ".join(f"{c:.2f} / {w:.2f}" for c, w in medians.values()) + " |")
    print(f"\nmax RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


def main() -> None:
    if "--per-turn" in sys.argv:
        main_per_turn()
        return
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
