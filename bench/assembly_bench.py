"""Assembly benchmark (`make bench`): warm and cold assembly time by history length, and counting throughput.

Workload (issue 2): histories of 200 / 2,000 / 10,000 messages of ~480 characters, 40 tools with 4
arguments each, 10 knowledge passages of ~1,950 characters, 3 RAG cases, 20 workflow turns, the
Balanced type, a tool_enabled profile, model limits of 128K and 16K.

A warm turn is a new turn on the same session: one new message, everything else rebuilt with the same
content. Its history comes two ways (both tables are printed):
* rebuilt: every message read is built anew from its stored row each turn (what a replica does whose
  history cache does not hold the session: the stricter figure);
* service: tda's own path, tda/history.py's HistoryCache over a SQLite store holding the history; a turn
  records its message through the store, loads the session header and reads only what is new, as
  `tda serve` does. The database work before assembly is not timed; assembly is.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tiktoken

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from components.context_window import token_estimator as te
from components.context_window.base import (
    AssemblyContext,
    ChampionCase,
    Message,
    MessagePage,
    Passage,
    Profile,
    Session,
    ToolSchema,
    TurnRecord,
)
from components.context_window.handler import ContextWindowHandler
from components.context_window.module_registry import ModuleRegistry
from components.context_window.providers import StaticCases, StaticKnowledge
from tda.builtins import DEFAULT_TYPES, module_registry
from tda.config import offline_library_defaults
from tda.db import upgrade_async
from tda.demo import seed_demo
from tda.history import HistoryCache
from tda.store import Store

WARM_RUNS = 20
ROUNDS = 5
HISTORY_SIZES = (200, 2_000, 10_000)
LIMITS = (128_000, 16_000)
MODEL = "gpt-4o"
_WORDS = (
    "revenue quarter customer order region forecast table query column average growth margin product "
    "report pipeline schema index latency budget analysis trend segment churn cohort metric dashboard "
    "the a of to and in for with on by from is was are were this that which as at be it"
).split()

offline_library_defaults()  # tiktoken loads litellm's bundled encodings, as in the service


def prose(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 16))).capitalize() + "."
        out.append(sentence)
        size += len(sentence) + 1
    return " ".join(out)[:chars]


def workload(history: int, seed: int = 7) -> AssemblyContext:
    rng = random.Random(seed)
    messages = [
        Message("user" if i % 2 == 0 else "assistant", prose(rng, 480), turn=i // 2 + 1) for i in range(history)
    ]
    tools = [
        ToolSchema(
            f"tool_{i}",
            prose(rng, 160),
            {
                "type": "object",
                "properties": {f"arg_{j}": {"type": "string", "description": prose(rng, 60)} for j in range(4)},
                "required": ["arg_0"],
            },
        )
        for i in range(40)
    ]
    passages = [
        Passage(prose(rng, 1950), 0.9 - i * 0.03, f"doc{i // 3}", f"Document {i // 3}", "Section", chunk_index=i % 3)
        for i in range(10)
    ]
    cases = [
        ChampionCase(f"case{i}", prose(rng, 80), 0.8 - i * 0.1, prose(rng, 300), prose(rng, 200)) for i in range(3)
    ]
    turns = [
        TurnRecord(
            turn=t, query=prose(rng, 80), plan=prose(rng, 120), answer=prose(rng, 200), tokens_in=900, tokens_out=120
        )
        for t in range(max(1, history // 2 - 19), history // 2 + 1)
    ]
    return AssemblyContext(
        query="Which regions grew fastest last quarter, and why?",
        profile=Profile("bench", "tool_enabled", "Bench analyst", "You are a data analyst. {tools_context}"),
        session=Session("bench", messages=messages, turns=turns[-20:]),
        model=MODEL,
        tools=tools,
        knowledge=StaticKnowledge(passages),
        cases=StaticCases(cases),
    )


def fresh_estimators() -> None:
    te._estimators.clear()


def run(handler: ContextWindowHandler, ctx: AssemblyContext, loop: asyncio.AbstractEventLoop) -> tuple[float, object]:
    """CPU milliseconds of one assembly (it never waits: every provider here answers at once). CPU time, not
    wall time, so that other processes on a shared machine do not inflate the figure."""
    start = time.process_time()
    result = loop.run_until_complete(handler.assemble(ctx, DEFAULT_TYPES["balanced"]))
    return (time.process_time() - start) * 1000, result


@dataclass
class PagedHistory:
    """The store's history as the service reads it (tda/sources.py StoredHistory): pages newest first, each
    message built anew from its stored row, with the token counts stored when it was written."""

    rows: list[tuple[str, str, int, dict[str, int]]]
    pages: dict[tuple[Any, int], MessagePage] = field(default_factory=dict)
    """Pages read this turn (StoredHistory keeps them too: a second walk in the same turn reads no rows)."""

    @property
    def total(self) -> int:
        return len(self.rows)

    @property
    def last_turn(self) -> int:
        return self.rows[-1][2] if self.rows else 0

    async def page(self, cursor: Any, limit: int) -> MessagePage:
        if (cursor, limit) in self.pages:
            return self.pages[cursor, limit]
        end = len(self.rows) if cursor is None else cursor
        start = max(0, end - limit)
        built = tuple(
            Message(role, content, turn=turn, tokens=counts) for role, content, turn, counts in self.rows[start:end]
        )
        page = self.pages[cursor, limit] = MessagePage(built[::-1], start or None)
        return page


def stored_rows(messages: list[Message]) -> list[tuple[str, str, int, dict[str, int]]]:
    return [(m.role, m.content, m.turn, te.counts_to_store(m)) for m in messages]


def follow_up(turn: int) -> str:
    return f"Follow-up {turn}: and how does the forecast change next quarter?"


def rebuilt_history(rows: list[Any], turn: int) -> PagedHistory:
    """The history read from the store as new objects, with each turn's new message so far (it grows by one a turn,
    as a session's does: a history that stayed the same length would find recall's ranking of it cached)."""
    new = [Message("user", follow_up(n), turn=10**6 + n) for n in range(turn + 1)]
    return PagedHistory([*rows, *stored_rows(new)])


def next_turn(base: AssemblyContext, history: Any, limit: int) -> AssemblyContext:
    """What the service assembles on a new turn over ``history``: the profile's tools are the same objects (the
    service caches them per profile version), and everything else is rebuilt with the same content. Only
    content-keyed caches can help."""
    fresh = workload(0)  # passages, cases, profile: new objects, same content
    turns = tuple(dataclasses.replace(t) for t in base.session.turns)
    session = Session(base.session.id, turns=turns, history=history)
    return dataclasses.replace(base, session=session, knowledge=fresh.knowledge, cases=fresh.cases, model_limit=limit)


class ServiceHistory:
    """A session's history in a SQLite store, read through the service's HistoryCache (tda/history.py)."""

    SESSION = "bench"

    def __init__(self, store: Store, messages: list[Message]) -> None:
        self.store = store
        self.messages = messages
        self.cache = HistoryCache(store.sessions)
        self.recorded = 0

    @classmethod
    async def create(cls, folder: Path, messages: list[Message]) -> ServiceHistory:
        url = f"sqlite+aiosqlite:///{folder / 'bench.db'}"
        await upgrade_async(url)
        store = Store.connect(url)
        await seed_demo(store)
        await store.sessions.create({"id": cls.SESSION, "profile_id": "demo-tools"}, "bench")
        await store.sessions.add_messages(cls.SESSION, [dict(m.to_chat(), turn=m.turn) for m in messages], "bench")
        return cls(store, messages)

    def restart(self) -> None:
        """A fresh cache, as after a restart: the next turn reads the history from the database."""
        self.cache = HistoryCache(self.store.sessions)

    async def next_turn(self, turn: int) -> Any:
        """Record this turn's question as the service does, then the turn's view of the history."""
        self.recorded += 1
        number = self.messages[-1].turn + self.recorded
        question = follow_up(turn)
        await self.store.sessions.record_turn(
            self.SESSION, {"turn": number, "query": question}, [{"role": "user", "content": question}]
        )
        return await self.cache.source(await self.store.sessions.load(self.SESSION))


def measure(
    registry: ModuleRegistry,
    loop: asyncio.AbstractEventLoop,
    base: AssemblyContext,
    limit: int,
    service: ServiceHistory | None,
) -> tuple[float, float, Any]:
    """One round with a fresh token cache (and a fresh history cache): (cold ms, warm median ms, snapshot)."""
    fresh_estimators()
    rows = stored_rows(list(base.session.messages))
    if service is not None:
        service.restart()

    def turn(n: int) -> AssemblyContext:
        if service is None:
            return next_turn(base, rebuilt_history(rows, n), limit)
        return next_turn(base, loop.run_until_complete(service.next_turn(n)), limit)

    gc.collect()
    gc.freeze()  # as `tda serve` does after start-up: long-lived data is not re-scanned by every collection
    handler = ContextWindowHandler(registry)
    cold, result = run(handler, turn(0), loop)
    warm = [run(handler, turn(n), loop)[0] for n in range(1, WARM_RUNS + 1)]
    return cold, statistics.median(warm), result.snapshot  # type: ignore[attr-defined]


def bench_assembly(registry: ModuleRegistry, loop: asyncio.AbstractEventLoop, mode: str) -> None:
    """Each figure is the median of ROUNDS rounds (this VM runs some rounds ~2x slower, whole-round)."""
    print(
        f"\n{mode} history: warm = median of {WARM_RUNS} turns per round, each with one new message; "
        f"median of {ROUNDS} rounds [fastest-slowest round]"
    )
    print(f"{'limit':>8} {'messages':>9} {'cold ms':>9} {'warm ms':>8} {'rounds':>15} {'used/available':>18}  method")
    bases = {size: workload(size) for size in HISTORY_SIZES}
    with tempfile.TemporaryDirectory() as tmp:
        services: dict[int, ServiceHistory | None] = {size: None for size in HISTORY_SIZES}
        if mode == "service":
            for size in HISTORY_SIZES:
                folder = Path(tmp, str(size))
                folder.mkdir()
                messages = list(bases[size].session.messages)
                services[size] = loop.run_until_complete(ServiceHistory.create(folder, messages))
        try:
            for limit in LIMITS:
                medians: dict[int, float] = {}
                for size in HISTORY_SIZES:
                    rounds = [measure(registry, loop, bases[size], limit, services[size]) for _ in range(ROUNDS)]
                    warm = sorted(r[1] for r in rounds)
                    medians[size] = statistics.median(warm)
                    cold, snap = rounds[0][0], rounds[0][2]
                    print(
                        f"{limit:>8,} {size:>9,} {cold:>9.2f} {medians[size]:>8.3f} "
                        f"{f'[{warm[0]:.2f}-{warm[-1]:.2f}]':>15} "
                        f"{snap.total_used:>8,}/{snap.available_budget:<9,}  {snap.token_method}"
                    )
                ratio = medians[HISTORY_SIZES[-1]] / medians[HISTORY_SIZES[0]]
                print(f"{'':>8} t({HISTORY_SIZES[-1]:,})/t({HISTORY_SIZES[0]:,}) = {ratio:.2f}  (target <= 2)")
        finally:
            for service in services.values():
                if service is not None:
                    loop.run_until_complete(service.store.close())


def bench_counting() -> None:
    """Cold counting through TokenEstimator vs raw tiktoken encode on the same texts, single thread."""
    texts = [m.content for m in workload(10_000, seed=11).session.messages]
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    encoding = tiktoken.get_encoding(te.encoding_name_for(MODEL))
    raw, ours = [], []
    for _ in range(3):
        start = time.perf_counter()
        for t in texts:
            len(encoding.encode_ordinary(t))
        raw.append(time.perf_counter() - start)
        est = te.TokenEstimator(te.encoding_name_for(MODEL))
        start = time.perf_counter()
        for t in texts:
            est.count(t)
        ours.append(time.perf_counter() - start)
    raw_mbs, ours_mbs = (megabytes / statistics.median(x) for x in (raw, ours))
    print(f"\ncold counting of {len(texts):,} messages ({megabytes:.1f} MB), median of 3:")
    print(f"  raw tiktoken encode_ordinary   {raw_mbs:6.2f} MB/s")
    print(f"  TokenEstimator.count           {ours_mbs:6.2f} MB/s  ({ours_mbs / raw_mbs:.0%} of raw; target >= 80%)")


def main() -> None:
    registry = module_registry(entry_point_group=None).load()
    print(f"modules: {', '.join(sorted(registry.modules))}")
    loop = asyncio.new_event_loop()
    try:
        for mode in ("rebuilt", "service"):
            bench_assembly(registry, loop, mode)
    finally:
        loop.close()
    bench_counting()


if __name__ == "__main__":
    main()
