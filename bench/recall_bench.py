"""Recall bench (`make bench`): does the window hold what a question about a long chat needs?

Data: bench/recall_data.py generates long multi-session chats offline (three styles, two seeds each) with facts
planted at random depths, distractors, and paraphrased one- and two-fact questions. A message is one unit; a question
is recalled when every evidence message's text is in the window sent to the model.

tda runs through the service: a fresh app (SQLite, the mock model recorded, the embedder of TDA_EMBEDDER, default
minilm-int8), an llm_only profile bound to the shipped Conversation First type; per question and limit a new session
gets the chat imported over HTTP (``POST /v1/sessions/{id}/messages``, with turn numbers) and the question is asked as
a turn (``POST /v1/sessions/{id}/turns``). Baselines get exactly the history tokens tda's conversation_history used
in that window, filled greedily down their ranking (a message that does not fit is passed over for the next):
newest messages, BM25 top, dense top (the same embedder) and hybrid top (RRF of the two).

Run: `python bench/recall_bench.py` (BENCH_RECALL_SEEDS=n chats per style, BENCH_LIMITS=4000,8000,16000);
`python bench/recall_bench.py --speed` measures a turn's overhead on a 10,000-message session, indexing one recorded
message and a what-if preview on 700 messages, with the hashing embedder and TDA_EMBEDDER's.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench.recall_data import Chat, chats  # noqa: E402
from components.context_window.base import Message  # noqa: E402
from components.context_window.relevance import BM25Index, fuse, unit_rows  # noqa: E402
from components.context_window.token_estimator import estimator_for  # noqa: E402
from tda.config import Settings, offline_library_defaults  # noqa: E402
from tda.db import upgrade  # noqa: E402
from tda.llm import LLM, Completion  # noqa: E402

offline_library_defaults()

LIMITS = tuple(int(x) for x in os.environ.get("BENCH_LIMITS", "4000,8000,16000").split(","))
SEEDS = int(os.environ.get("BENCH_RECALL_SEEDS", "2"))
EMBEDDER = os.environ.get("TDA_EMBEDDER", "minilm-int8")
TARGETS = {4000: 75.0, 8000: 85.0, 16000: 95.0}
BASELINES = ("newest", "bm25", "dense", "hybrid")


class RecordingLLM(LLM):
    """The mock model, keeping the messages of the last call (the window as sent)."""

    def __init__(self) -> None:
        super().__init__(mock=True)
        self.last: list[dict[str, Any]] = []

    async def complete(self, model: str, messages: list[dict[str, Any]], tools: Any, **kw: Any) -> Completion:
        self.last = messages
        return Completion("Noted.", 10, 2, [])


@dataclass
class Tally:
    asked: int = 0
    recalled: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("tda", *BASELINES), 0))
    history_tokens: list[int] = field(default_factory=list)


class Baselines:
    """Rankings of one chat's messages for a question, packed into a token budget."""

    def __init__(self, chat: Chat, embed: Any) -> None:
        self.texts = [str(m["content"]) for m in chat.messages]
        tokens = estimator_for("gpt-4o")
        self.costs = [
            tokens.count_message(Message(str(m["role"]), t)) for m, t in zip(chat.messages, self.texts, strict=True)
        ]
        self.bm25 = BM25Index(self.texts)
        self.vectors = unit_rows(embed(self.texts))
        self.embed = embed

    def rankings(self, query: str) -> dict[str, list[int]]:
        n = len(self.texts)
        lexical = self.bm25.scores(query)
        dense = self.vectors @ unit_rows(self.embed([query]))[0]
        return {
            "newest": list(range(n - 1, -1, -1)),
            "bm25": fuse(lexical=lexical).positions.tolist(),
            "dense": fuse(dense=dense.astype(np.float64)).positions.tolist(),
            "hybrid": fuse(lexical=lexical, dense=dense.astype(np.float64)).positions.tolist(),
        }

    def packed(self, ranking: list[int], budget: int) -> set[int]:
        return packed_in_rank_order(ranking, self.costs, budget)


def packed_in_rank_order(ranking: list[int], costs: list[int], budget: int) -> set[int]:
    """The baselines' packing: down the ranking, each message that still fits (no fixed k)."""
    chosen, left = set(), budget
    for i in ranking:
        if costs[i] <= left:
            chosen.add(i)
            left -= costs[i]
    return chosen


def in_window(window: list[dict[str, Any]], text: str) -> bool:
    return any(isinstance(m.get("content"), str) and text in m["content"] for m in window)


@asynccontextmanager
async def chat_service(app: Any) -> AsyncIterator[tuple[Any, Any, dict[str, str]]]:
    """The running app with an admin token and an llm_only profile ``chat`` on Conversation First."""
    from quart.testing import TestApp

    async with TestApp(app, startup_timeout=600) as running:  # starting on a busy machine takes a while
        svc = running.app.extensions["tda"]
        token, _ = await svc.store.tokens.create("bench", "admin")
        headers = {"Authorization": f"Bearer {token}"}
        client = running.test_client()
        profile = {"id": "chat", "type": "llm_only", "context_window_type_id": "conversation_first"}
        assert (await client.post("/v1/profiles", json=profile, headers=headers)).status_code == 201
        yield svc, client, headers


async def run(data: list[tuple[str, Chat]], folder: Path) -> dict[int, Tally]:
    from tda.app import create_app
    from tda.knowledge.embeddings import make_embedder

    embed_fn = make_embedder(EMBEDDER)
    embed = lambda texts: np.asarray(embed_fn(list(texts)), dtype=np.float32)  # noqa: E731
    tally = {limit: Tally() for limit in LIMITS}
    llm = RecordingLLM()
    settings = Settings(data_dir=folder, mock_model=True, embedder=EMBEDDER)
    app = create_app(settings, llm=llm, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with chat_service(app) as (_, client, headers):
        n = 0
        for name, chat in data:
            baselines = Baselines(chat, embed)
            imported = [{**m, "turn": i // 2 + 1} for i, m in enumerate(chat.messages)]
            for question in chat.questions:
                evidence = [baselines.texts[i] for i in question.evidence]
                rankings = baselines.rankings(question.text)
                for limit in LIMITS:
                    n += 1
                    sid = f"q{n}"
                    body = {"id": sid, "profile_id": "chat", "context_limit": limit}
                    assert (await client.post("/v1/sessions", json=body, headers=headers)).status_code == 201
                    r = await client.post(f"/v1/sessions/{sid}/messages", json={"messages": imported}, headers=headers)
                    assert r.status_code == 201, await r.get_json()
                    r = await client.post(f"/v1/sessions/{sid}/turns", json={"query": question.text}, headers=headers)
                    assert r.status_code == 201, await r.get_json()
                    snapshot = (await r.get_json())["snapshot"]
                    used = next(m["used"] for m in snapshot["modules"] if m["module_id"] == "conversation_history")
                    t = tally[limit]
                    t.asked += 1
                    t.history_tokens.append(used)
                    t.recalled["tda"] += all(in_window(llm.last, e) for e in evidence)
                    for base in BASELINES:
                        chosen = baselines.packed(rankings[base], used)
                        t.recalled[base] += all(i in chosen for i in question.evidence)
            print(f"  {name}: {len(chat.messages)} messages, {len(chat.questions)} questions", file=sys.stderr)
    return tally


def report(tally: dict[int, Tally], seconds: float) -> None:
    print(f"Recall bench: {len(STYLES_USED)} styles x {SEEDS} chats, embedder {EMBEDDER}, {seconds:.0f} s\n")
    print("| limit | questions | history tokens (mean) | tda | newest | BM25 top | dense top | hybrid top | target |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for limit, t in tally.items():
        pct = {k: 100 * v / max(1, t.asked) for k, v in t.recalled.items()}
        best = max(pct[b] for b in BASELINES)
        target = TARGETS.get(limit)
        met = "" if target is None else ("met" if pct["tda"] >= target and pct["tda"] >= best + 5 else "missed")
        print(
            f"| {limit:,} | {t.asked} | {np.mean(t.history_tokens):,.0f} | {pct['tda']:.1f}% | {pct['newest']:.1f}% | "
            f"{pct['bm25']:.1f}% | {pct['dense']:.1f}% | {pct['hybrid']:.1f}% | "
            f"{'' if target is None else f'>= {target:.0f}%, +5 over {best:.1f}%: {met}'} |"
        )


STYLES_USED: list[str] = []


SPEED_MESSAGES = int(os.environ.get("BENCH_SPEED_MESSAGES", "10000"))
PREVIEW_MESSAGES = 700


def _timing(header: str, step: str) -> float:
    return next(float(p.split("dur=")[1]) for p in header.split(", ") if p.startswith(f"{step};"))


async def speed(embedder: str, folder: Path) -> dict[str, float]:
    """Medians through the service, recall on: a turn's overhead (Server-Timing turn minus model) on a 10,000-message
    session, the CPU of indexing one recorded message, and a what-if preview on a 700-message session."""
    from components.context_window.recall.messages import HistoryIndex, SessionRecall
    from tda.app import create_app

    settings = Settings(data_dir=folder, mock_model=True, embedder=embedder)
    app = create_app(settings, migrate=False, warm_up_llm=False, warm_up_knowledge=True)
    data = chats(1)[0][1]
    texts = [str(m["content"]) for m in data.messages]
    history = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": texts[i % len(texts)] + f" ({i})",
            "turn": i // 2 + 1,
        }
        for i in range(SPEED_MESSAGES)
    ]
    out: dict[str, float] = {}
    async with chat_service(app) as (svc, client, headers):
        for sid, messages in (("long", history), ("preview", history[:PREVIEW_MESSAGES])):
            body = {"id": sid, "profile_id": "chat", "context_limit": 16_000}
            assert (await client.post("/v1/sessions", json=body, headers=headers)).status_code == 201
            r = await client.post(f"/v1/sessions/{sid}/messages", json={"messages": messages}, headers=headers)
            assert r.status_code == 201
            await svc.writer.settle(sid)  # indexed after the import, as a turn would wait for it
        overheads: list[float] = []
        assembly: list[float] = []
        for n in range(21):
            r = await client.post(
                "/v1/sessions/long/turns", json={"query": f"What did we say about {n}?"}, headers=headers
            )
            assert r.status_code == 201, await r.get_json()
            await svc.writer.settle("long")
            header = r.headers["Server-Timing"]
            if n:  # the first turn warms caches up
                overheads.append(_timing(header, "turn") - _timing(header, "model"))
                assembly.append(_timing(header, "assemble"))
        out["turn overhead, ms (10,000 messages)"] = statistics.median(overheads)
        out["of which assembly, ms"] = statistics.median(assembly)
        previews = []
        for n in range(11):
            body = {"type_id": "conversation_first", "session_id": "preview", "query": f"What about {n}?"}
            started = time.perf_counter()
            r = await client.post("/v1/context-window-types/preview", json=body, headers=headers)
            assert r.status_code == 200, await r.get_json()
            if n:
                previews.append((time.perf_counter() - started) * 1000)
        out["what-if preview, ms (700 messages)"] = statistics.median(previews)
        recall = svc.sources.history_recall
        assert isinstance(recall, SessionRecall)
        from components.context_window.base import Message as M
        from tda.recall.vectors import write_now

        for per_call in (1, 2):  # one message per indexing call, and a turn's question and reply (as the service does)
            index = HistoryIndex(session_id=f"indexing-{per_call}")
            await svc.store.sessions.create({"id": index.session_id, "profile_id": "chat"}, "bench")  # (its vectors)
            started = time.process_time()
            for i in range(200):
                roles = ("user", "assistant")[:per_call]
                messages = [M(role, f"{texts[(i + n) % len(texts)]} [{i}.{n}]") for n, role in enumerate(roles)]
                with write_now():  # as the indexing job does: the store's writes (if any) are counted
                    await recall.add(index, messages)
            if svc.history_vectors is not None:
                await svc.history_vectors.flush()  # what still waits to be written with others
            what = "one message per call" if per_call == 1 else "a turn's two messages per call"
            out[f"indexing a recorded message ({what}), ms of CPU"] = (
                (time.process_time() - started) * 1000 / (200 * per_call)
            )
        out["a write of three parts to the history store, ms of CPU"] = await _store_write_cpu(svc, texts)
    return out


async def _store_write_cpu(svc: Any, texts: list[str]) -> float:
    """The median CPU of one write of three part vectors to the history store (0: none is used)."""
    from components.context_window.recall.messages import part_key
    from tda.recall.vectors import write_now

    if svc.history_vectors is None:
        return 0.0
    vector = np.full(len((await svc.knowledge.embed(["x"]))[0]), 0.1, dtype=np.float32)
    await svc.store.sessions.create({"id": "store-write", "profile_id": "chat"}, "bench")  # vectors need a session
    cpu = []
    for i in range(51):
        rows = {part_key(f"{texts[i % len(texts)]} <{i}> {n}"): vector for n in range(3)}
        started = time.process_time()
        with write_now():
            await svc.history_vectors.put("store-write", rows)
            await svc.history_vectors.flush()
        if i:
            cpu.append((time.process_time() - started) * 1000)
    return statistics.median(cpu)


def main() -> None:
    if "--speed" in sys.argv:
        for embedder in os.environ.get("BENCH_SPEED_EMBEDDERS", f"hashing,{EMBEDDER}").split(","):
            folder = Path(tempfile.mkdtemp(prefix="recall-speed-"))
            upgrade(f"sqlite+aiosqlite:///{folder / 'tda.db'}")
            for what, ms in asyncio.run(speed(embedder, folder)).items():
                print(f"{embedder}: {what}: {ms:.2f}")
        return
    data = chats(SEEDS)
    STYLES_USED.extend(sorted({name.split("-")[0] for name, _ in data}))
    started = time.perf_counter()
    folder = Path(tempfile.mkdtemp(prefix="recall-bench-"))
    upgrade(f"sqlite+aiosqlite:///{folder / 'tda.db'}")
    tally = asyncio.run(run(data, folder))
    report(tally, time.perf_counter() - started)


if __name__ == "__main__":
    main()
