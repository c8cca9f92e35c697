"""workflow_history's turn recall (``TurnRecall.match``) at n earlier turns, in process: the CPU ms of a match, as a
native session's turn calls it (issue 32 item 5: a turn's cost the same at turn 10,000 as at 100).

The earlier turns are native_memory_bench.py's questions (``tests/agent_session.question``), described as the service
keeps them (``turn_described``) in a list that only grows, joined with the newest 40 handed (as workflow_history
hands them); the newest 10 are shown, the rest are candidates. Vectors: a fake embedder, 384 dimensions, each text's
its own (seeded by its digest) around one shared direction (the questions are alike); every part is embedded before
the measured turns. Printed per n: the median CPU ms of ``BENCH_MATCH_TURNS`` matches (default 40) and the reason.

Run: ``PYTHONPATH=. python bench/turn_match_bench.py 1000 5000 10000``.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from components.context_window.base import TurnRecord
from components.context_window.grown import Joined, Prefix
from components.context_window.recall.turns import TurnRecall
from modules.workflow_history.handler import turn_described
from tests.agent_session import question

TURNS = int(os.environ.get("BENCH_MATCH_TURNS", "40"))
HANDED, SHOWN = 40, 10


class AlikeVectors:
    vector_space = "bench-alike"

    async def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            out.append((np.random.default_rng(seed).standard_normal(384) + 3.0).tolist())
        return out


async def median_ms(n: int) -> tuple[float, str]:
    recall, embedder = TurnRecall(), AlikeVectors()
    records = [TurnRecord(turn=i, query=question(i), plan="") for i in range(1, n + TURNS + 1)]
    described = [turn_described(r) for r in records]
    await TurnRecall.embed_parts([d[2] for d in described] + [question(i) for i in range(n + TURNS + 2)], embedder)
    earlier: Prefix = Prefix([])
    spent, reason = [], ""
    for turn in range(n - 60, n + TURNS):
        earlier = earlier.appended(described[len(earlier) : max(0, turn - HANDED)])
        texts = Joined(earlier, map(turn_described, records[max(0, turn - HANDED) : turn]))
        older = len(texts) - SHOWN
        started = time.process_time()
        found = await recall.match(
            "s",
            texts,
            question(turn + 1),
            shown=range(older, len(texts)),
            candidates=range(older),
            embedder=embedder,
            limit=3,
        )
        if turn >= n:
            spent.append(time.process_time() - started)
            reason = found.reason or f"matched {[m.position for m in found.matches]}"
    return statistics.median(spent) * 1000, reason


def main() -> None:
    for n in map(int, sys.argv[1:] or ["1000", "10000"]):
        ms, reason = asyncio.run(median_ms(n))
        print(f"{n:,} earlier turns: {ms:.2f} ms a match ({reason[:90]})")


if __name__ == "__main__":
    main()
