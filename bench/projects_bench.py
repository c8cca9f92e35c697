"""What the project filter costs: the store reads a turn makes (a session's header with its newest turns, a profile,
a snapshot by id, a session list), timed in one process on SQLite, acting in every project (no filter) and in one
project (``project_id = ...`` added to each statement by tda/store/projects.py), rounds alternating so the machine's
load cancels out. Prints the median microseconds per read of each and the difference.

Run: ``python bench/projects_bench.py`` (READS=n reads per round, ROUNDS=n rounds).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from tda import scope
from tda.db import upgrade_async
from tda.store import Store

READS = int(os.environ.get("READS", "2000"))
ROUNDS = int(os.environ.get("ROUNDS", "7"))


async def _seed(store: Store) -> int:
    await store.projects.create("alpha", "bench")
    scope.act_as(scope.Acting("alpha", shared=False))
    await store.profiles.create("p", {"type": "llm_only"}, "bench")
    for n in range(20):
        await store.sessions.create({"id": f"s{n}", "profile_id": "p"}, "bench")
    for turn in range(1, 41):
        messages = [{"role": "user", "content": f"q{turn}"}, {"role": "assistant", "content": f"a{turn}"}]
        await store.sessions.record_turn("s0", {"turn": turn, "query": f"q{turn}"}, messages)
    fields = {"session_id": "s0", "turn": 1, "type_id": "t", "type_version": 1, "model": "m", "data": {}, "inputs": {}}
    return (await store.sessions.record_snapshot(fields))[0]


async def _per_read(read: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    for _ in range(READS):
        await read()
    return (time.perf_counter() - started) / READS * 1e6


async def main() -> None:
    folder = Path(tempfile.mkdtemp())
    url = f"sqlite+aiosqlite:///{folder / 'bench.db'}"
    await upgrade_async(url)
    store = Store.connect(url)
    snapshot_id = await _seed(store)
    reads: dict[str, Callable[[], Awaitable[object]]] = {
        "session load (header + 40 turns)": lambda: store.sessions.load("s0"),
        "profile get": lambda: store.profiles.get("p"),
        "snapshot by id": lambda: store.sessions.snapshot(snapshot_id),
        "session list (20)": lambda: store.sessions.all(),
    }
    for name, read in reads.items():
        timings: dict[str, list[float]] = {"every project": [], "one project": []}
        for _ in range(ROUNDS):
            for label, acting in (("every project", scope.EVERYWHERE), ("one project", scope.Acting("alpha", False))):
                scope.act_as(acting)
                timings[label].append(await _per_read(read))
        every, one = (statistics.median(timings[k]) for k in ("every project", "one project"))
        print(f"{name:<36} every project {every:7.1f} us   one project {one:7.1f} us   filter {one - every:+6.1f} us")
    await store.close()


if __name__ == "__main__":
    asyncio.run(main())
