"""Turn recall's words are matched while the question is being embedded (issue 31: a demo turn's loop sat idle ~6 ms
waiting for the query's vector, then ran workflow_history's and plan_hydration's searches after it). Their signals
step searches, while the other modules' signals wait for the same vector; their contributions reuse that search. The
order of the work is counted here (which came before the vector was given), never its time."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from components.context_window.base import AssemblyContext, ChampionCase, Profile, Session, TurnRecord
from components.context_window.handler import ContextWindowHandler
from components.context_window.recall import turns as turn_recall
from tda.builtins import DEFAULT_TYPES

QUESTION = "What was the revenue of the orders by region we ran at the start?"
LOOP_TURNS = 20
"""How many times the event loop runs its ready callbacks before the query's vector is given (a model run)."""


class GatedEmbedder:
    """Vectors at once for every text but the question's, which waits until ``give`` (as a turn's query embedded
    ahead in a worker thread is waited for on the loop)."""

    vector_space = "test-gated"

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.given = asyncio.Event()

    async def give(self) -> None:
        for _ in range(LOOP_TURNS):
            await asyncio.sleep(0)
        self.events.append("vector")
        self.given.set()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if QUESTION in texts:
            await self.given.wait()
        return [np.random.default_rng(len(t)).standard_normal(8).tolist() for t in texts]


class Cases:
    """Champion cases searched by the question's vector (rag_context's signal waits for it, as in the service)."""

    def __init__(self, embedder: GatedEmbedder) -> None:
        self.embedder = embedder

    async def retrieve_cases(self, query: str, *, k: int = 3) -> list[ChampionCase]:
        await self.embedder.embed([query])
        return []


def session(turns: int = 30) -> Session:
    """Turns enough for workflow_history to search beyond its newest 10, each with a result plan_hydration searches;
    turn 2 ran the orders query."""
    records = [
        TurnRecord(
            turn=n,
            query="Total revenue of the orders by region" if n == 2 else f"Inventory levels of warehouse {n}",
            plan="1. query run_sql\n2. summarise",
            results=({"tool": "run_sql", "columns": ["region", "revenue"], "rows": [[f"r{i}", i] for i in range(40)]},),
        )
        for n in range(1, turns + 1)
    ]
    return Session(id="gated", turns=records)


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """ "words" each time turn recall scores the question's words against a session's turns."""
    seen: list[str] = []
    coverage = turn_recall._coverage

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append("words")
        return coverage(*args, **kwargs)

    monkeypatch.setattr(turn_recall, "_coverage", counted)
    return seen


async def test_turn_recall_matches_words_before_the_vector_once_per_module(builtin_registry, events):
    embedder = GatedEmbedder(events)
    ctx = AssemblyContext(
        query=QUESTION,
        profile=Profile("p", "tool_enabled"),
        session=session(),
        model="gpt-4o",
        model_limit=16_000,
        embedder=embedder,
        cases=Cases(embedder),
    )
    giving = asyncio.ensure_future(embedder.give())
    out = await ContextWindowHandler(builtin_registry).assemble(ctx, DEFAULT_TYPES["balanced"])
    await giving
    # workflow_history's and plan_hydration's searches, each once (contribute reuses it), both before the vector
    assert events == ["words", "words", "vector"]
    for module in ("workflow_history", "plan_hydration"):  # each search still ends in its match, vector and all
        recall = out.snapshot.module(module).metadata["recall"]
        assert recall["method"] == "lexical+dense" and recall["recalled_turns"] == [2]
