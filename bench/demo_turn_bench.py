"""Demo turn bench: what one turn of the demo session costs the server, with the default embedder.

Issue 31's targets: "a demo turn costs at most 20 ms of server time with the default embedder, and no module holds
the event loop more than 5 ms". The demo as `make run` seeds it (tda/demo.py: the Returns-analysis session under
the Balanced type, the user-facing docs as its knowledge collection) in a fresh data folder; the app runs in this
process (the mock model) and turns are posted to the demo session through Quart's test client. Per turn:

* server time: the ``Server-Timing`` turn time minus its model time (what the server spends, the mock model aside);
* the time each module held the event loop (the snapshot's ``blocked_ms``: the sum of its synchronous steps);
* CPU time: the process's (every thread: the query's embedding in a worker thread, Chroma) and the event loop
  thread's alone, from the request's start to its response (steady where wall times swing with the machine's load;
  work the turn leaves to the background after its response is not in it);
* the CPU each module's synchronous steps took on the event loop's thread (``thread_time`` around each step, as
  isolation.py times ``blocked_ms`` in wall time): what a module holds the loop for on a machine with a core to
  spare, where ``blocked_ms`` also counts the waits for a core and for the GIL on a loaded one;
* the longest the event loop went without running a 1 ms ticker while the turn was in flight (any stall, from any
  code: a module's, the store's, the snapshot's, the client's own request handling);
* the tokens each module sent, and whether knowledge and recall abstained;
* the SQL statements run from the request's start to its response (the turn's own, and the first of the indexing
  it leaves to run after its response, when that starts before the response is read) through the pool, and the reads
  and transactions of the loop's own SQLite connections, and each step's time (``Server-Timing``: load, assemble,
  snapshot, record).

Each turn is posted once the previous one's work after its response (its turn and history indexed for recall,
``svc.writer``) is done, as when a person reads the answer before asking again; ``BENCH_BACK_TO_BACK=1`` posts the
next turn at once, so that its assembly also waits for that indexing (``vectors_ready``: cold = warm).

The first WARMUP turns warm caches (the query embeddings of repeated questions are cached too: each question is
asked once per round with its round number, so none is a repeat). Run: ``python bench/demo_turn_bench.py``
(BENCH_ROUNDS=n, TDA_EMBEDDER=name; BENCH_DEMO_DIR=folder keeps the embedded docs between runs: unchanged files are
not embedded again; BENCH_PROFILE=file profiles the loop's thread's CPU during the measured turns;
BENCH_DEMO_CHUNKS=n adds the knowledge bench's corpora, file by file, until the demo collection holds n chunks: what a
turn costs as the collection grows, in a folder of its own per size).
"""

from __future__ import annotations

import asyncio
import cProfile
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.loop_stalls import FullPasses, freeze_as_served  # noqa: E402
from tda.config import Settings, offline_library_defaults  # noqa: E402
from tda.db import upgrade  # noqa: E402

offline_library_defaults()

EMBEDDER = os.environ.get("TDA_EMBEDDER", "minilm-int8")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "4"))
WARMUP = 3
QUESTIONS = (
    "What does the output reserve do?",
    "Which region had the most returns, and why might that be?",
    "How do I install a module pack?",
    "What is the capital of Mongolia?",
    "Plot weekly returns for the South since September.",
    "How does recall decide what older messages to bring back?",
)
CHUNKS = int(os.environ.get("BENCH_DEMO_CHUNKS", "0"))
PADDING = ROOT / "bench" / "data"
BACK_TO_BACK = bool(os.environ.get("BENCH_BACK_TO_BACK"))
TICK_S = 0.001
FULL = FullPasses()
"""The cycle collector's full passes: the app is frozen once started, as `tda serve` freezes it."""
PROFILE = cProfile.Profile(time.thread_time) if os.environ.get("BENCH_PROFILE") else None
"""BENCH_PROFILE=file: the event loop's thread profiled during the measured turns (cProfile stats to ``file``), in
its CPU time (wall time would charge the waits for the GIL to whatever the loop was running)."""


def server_timing(header: str) -> dict[str, float]:
    out = {}
    for part in header.split(","):
        name, _, rest = part.strip().partition(";dur=")
        if rest:
            out[name] = float(rest.split(";")[0])
    return out


def server_ms(timing: dict[str, float]) -> float:
    """The turn's server time without the model's: its ``turn`` time when given, else the sum of its other steps."""
    if "turn" in timing:
        return timing["turn"] - timing.get("model", 0.0)
    return sum(ms for step, ms in timing.items() if step != "model")


class ModuleCPU:
    """The event loop thread's CPU in each module call's steps, by module (the bench wraps isolation's step)."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}

    def install(self) -> None:
        from components.context_window import isolation

        driven = isolation._Driver.step
        spent = self.ms

        def step(driver: Any, value: Any = None, exc: BaseException | None = None) -> Any:
            frame = driver.coro.cr_frame
            module = getattr(frame.f_locals.get("self"), "module_id", "?") if frame is not None else "?"
            started = time.thread_time()
            try:
                return driven(driver, value, exc)
            finally:
                spent[module] = spent.get(module, 0.0) + (time.thread_time() - started) * 1000

        isolation._Driver.step = step  # type: ignore[method-assign]


MODULE_CPU = ModuleCPU()


class Statements:
    """The SQL statements the database ran through its pool (every connection of the engine's: the turn's, and any
    work the turn left to run after its response that ran before it was measured), and the reads and transactions
    of the loop's own SQLite connections (``LoopReader``, ``LoopWriter``: tda/inline_sqlite.py), which the engine
    does not see."""

    def __init__(self) -> None:
        self.count = 0
        self._db: Any = None

    def install(self, db: Any) -> None:
        from sqlalchemy import event

        def counted(*_: Any) -> None:
            self.count += 1

        event.listen(db.engine.sync_engine, "before_cursor_execute", counted)
        self._db = db

    def own(self) -> tuple[int, int]:
        """Reads and transactions of the loop's own connections so far."""
        reader, writer = self._db.reader, self._db.single_writes
        return (reader.reads if reader else 0, writer.writes if writer else 0)


STATEMENTS = Statements()


class Ticker:
    """A task sleeping 1 ms at a time: the longest gap between its wake-ups is the longest the loop was held."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._running = True

    async def run(self) -> None:
        last = time.perf_counter()
        while self._running:
            await asyncio.sleep(TICK_S)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last - TICK_S)
            last = now

    def stop(self) -> None:
        self._running = False


def padded(settings: Settings, chunks: int) -> int:
    """The demo collection with the knowledge bench's corpora added, file by file in name order, until it holds
    ``chunks`` chunks (unrelated documents: the demo's questions find their answers where they did); its count."""
    from tda.demo import DEMO_COLLECTION
    from tda.knowledge.ingest import ingest_paths
    from tda.knowledge.store import KnowledgeStore

    store = KnowledgeStore.open(settings.data_dir, settings.chroma_url, embedder=settings.embedder, sentences=False)
    try:
        files = sorted(PADDING.glob("*/corpus/*"))
        held = store.collection(DEMO_COLLECTION).count()
        while held < chunks and files:
            ingest_paths(store, [files.pop(0)], DEMO_COLLECTION, base=PADDING)
            held = store.collection(DEMO_COLLECTION).count()
        return held
    finally:
        store.close()


async def run(folder: Path) -> list[dict[str, Any]]:
    from quart.testing import TestApp

    from tda.app import create_app
    from tda.demo import DEMO_SESSION, seed_demo, seed_demo_knowledge
    from tda.store import Store

    MODULE_CPU.install()
    settings = Settings(data_dir=folder, mock_model=True, embedder=EMBEDDER)
    started = time.perf_counter()
    report = seed_demo_knowledge(settings)
    chunks = padded(settings, CHUNKS) if CHUNKS else report.chunks
    print(f"demo knowledge: {chunks} chunks in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    app = create_app(settings, migrate=False, warm_up_llm=False, warm_up_knowledge=True)
    turns: list[dict[str, Any]] = []
    async with TestApp(app, startup_timeout=600) as running:
        svc = running.app.extensions["tda"]
        store: Store = svc.store
        STATEMENTS.install(store.db)
        await seed_demo(store)
        token, _ = await store.tokens.create("bench", "admin")
        freeze_as_served()
        client = running.test_client()
        headers = {"Authorization": f"Bearer {token}"}
        number = 0
        for round_ in range(ROUNDS):
            for question in QUESTIONS:
                query = question if round_ == 0 else f"{question} (round {round_ + 1})"
                if not BACK_TO_BACK:
                    await svc.writer.drain()  # the previous turn's indexing, as a reader's pause would let it end
                if number == WARMUP:
                    FULL.passes.clear()  # the measured turns' own
                ticker = Ticker()
                ticking = asyncio.create_task(ticker.run())
                await asyncio.sleep(TICK_S * 2)
                MODULE_CPU.ms.clear()
                STATEMENTS.count = 0
                own = STATEMENTS.own()
                cpu, loop_cpu = time.process_time(), time.thread_time()
                if PROFILE is not None and number >= WARMUP:
                    PROFILE.enable()
                r = await client.post(f"/v1/sessions/{DEMO_SESSION}/turns", json={"query": query}, headers=headers)
                if PROFILE is not None:
                    PROFILE.disable()
                cpu, loop_cpu = time.process_time() - cpu, time.thread_time() - loop_cpu
                statements = STATEMENTS.count
                own = tuple(b - a for a, b in zip(own, STATEMENTS.own(), strict=True))
                ticker.stop()
                await ticking
                assert r.status_code == 201, await r.get_json()
                number += 1
                if number <= WARMUP:
                    continue
                timing = server_timing(r.headers.get("Server-Timing", ""))
                snapshot = (await r.get_json())["snapshot"]
                modules = {m["module_id"]: m for m in snapshot["modules"]}
                turns.append(
                    {
                        "query": question,
                        "server_ms": server_ms(timing),
                        "steps_ms": timing,
                        "stall_ms": ticker.longest * 1000,
                        "cpu_ms": cpu * 1000,
                        "loop_cpu_ms": loop_cpu * 1000,
                        "statements": statements,
                        "own": own,
                        "blocked_ms": {k: float(m.get("blocked_ms") or 0.0) for k, m in modules.items()},
                        "module_cpu_ms": dict(MODULE_CPU.ms),
                        "used": {k: int(m.get("used") or 0) for k, m in modules.items()},
                        "knowledge_reason": (modules.get("knowledge_context", {}).get("metadata") or {}).get("reason"),
                        "total": int(snapshot["total_used"]),
                    }
                )
    return turns


def report(turns: list[dict[str, Any]]) -> None:
    def p(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    server = [t["server_ms"] for t in turns]
    stall = [t["stall_ms"] for t in turns]
    pacing = "back to back" if BACK_TO_BACK else "each after the previous turn's indexing"
    print(f"Demo turn bench: embedder {EMBEDDER}; {len(turns)} turns after {WARMUP} warm-up, {pacing}\n")
    print(f"server time per turn (turn - model): p50 {statistics.median(server):.1f} ms, p90 {p(server, 0.9):.1f} ms")
    steps = [step for step in turns[0]["steps_ms"] if step not in ("turn", "model")]
    by_step = (f"{step} {statistics.median(t['steps_ms'].get(step, 0.0) for t in turns):.1f}" for step in steps)
    print("  by step (p50 ms): " + ", ".join(by_step))
    cpu, loop_cpu = [t["cpu_ms"] for t in turns], [t["loop_cpu_ms"] for t in turns]
    print(
        f"CPU per turn (this process, every thread): p50 {statistics.median(cpu):.1f} ms; on the event loop's thread: "
        f"p50 {statistics.median(loop_cpu):.1f} ms, p90 {p(loop_cpu, 0.9):.1f} ms"
    )
    statements = [t["statements"] for t in turns]
    reads, writes = ([t["own"][n] for t in turns] for n in (0, 1))
    print(
        f"SQL statements per turn through the pool: p50 {statistics.median(statements):.0f}, max {max(statements)}; "
        f"by the loop's own connections: reads p50 {statistics.median(reads):.0f}, "
        f"transactions p50 {statistics.median(writes):.0f}"
    )
    print(
        f"longest event-loop stall during a turn (1 ms ticker): p50 {statistics.median(stall):.1f} ms, "
        f"max {max(stall):.1f} ms"
    )
    print(f"the cycle collector from the first measured turn on: {FULL.longest()}\n")
    print("| module | held the loop p50 (ms) | max (ms) | loop CPU p50 (ms) | max (ms) | tokens sent p50 | max |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for module in sorted({m for t in turns for m in t["blocked_ms"]}):
        held = [t["blocked_ms"].get(module, 0.0) for t in turns]
        spent = [t["module_cpu_ms"].get(module, 0.0) for t in turns]
        used = [t["used"].get(module, 0) for t in turns]
        print(
            f"| {module} | {statistics.median(held):.2f} | {max(held):.2f} | {statistics.median(spent):.2f} | "
            f"{max(spent):.2f} | {statistics.median(used):,.0f} | {max(used):,} |"
        )
    print(
        "\n| question | server ms (p50) | knowledge loop CPU ms (p50, max) | knowledge tokens | window tokens | says |"
    )
    print("|---|---:|---:|---:|---:|---|")
    for question in QUESTIONS:
        mine = [t for t in turns if t["query"] == question]
        if not mine:
            continue
        reason = mine[-1]["knowledge_reason"] or ""
        spent = [t["module_cpu_ms"].get("knowledge_context", 0.0) for t in mine]
        knowledge_cpu = f"{statistics.median(spent):.1f}, {max(spent):.1f}"
        print(
            f"| {question} | {statistics.median(t['server_ms'] for t in mine):.1f} | {knowledge_cpu} | "
            f"{mine[-1]['used'].get('knowledge_context', 0):,} | {mine[-1]['total']:,} | {reason[:70]} |"
        )
    worst = max(max(t["blocked_ms"].values(), default=0.0) for t in turns)
    worst_cpu = max(max(t["module_cpu_ms"].values(), default=0.0) for t in turns)
    print(
        f"\ntargets: server time p50 <= 20 ms: {'PASS' if statistics.median(server) <= 20 else 'MISS'}; "
        f"no module holds the loop > 5 ms: {'PASS' if worst <= 5 else 'MISS'} (worst {worst:.1f} ms wall, "
        f"{worst_cpu:.1f} ms of the loop thread's CPU)"
    )


def main() -> None:
    kept = os.environ.get("BENCH_DEMO_DIR")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(kept or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "tda.db").unlink(missing_ok=True)  # a fresh demo session each run; the embedded docs stay
        upgrade(f"sqlite+aiosqlite:///{folder / 'tda.db'}")
        turns = asyncio.run(run(folder))
    report(turns)
    if PROFILE is not None:
        PROFILE.dump_stats(os.environ["BENCH_PROFILE"])


if __name__ == "__main__":
    main()
