"""A turn's query is embedded ahead, from its request (``LiveKnowledge.embed_ahead``): the modules that ask for its
vector while the model runs wait for it on the event loop, not each in a worker thread of its own (a thread woken by
the vector, then a hop back to the loop, on the turn's critical path), and the model runs once."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from chromadb.utils.embedding_functions import register_embedding_function

from tda.knowledge import embeddings
from tda.knowledge.cases import CaseRecord, CaseScope, ChampionCaseStore
from tda.knowledge.embeddings import MiniLMEmbedding, _RecentVectors
from tda.knowledge.providers import LiveKnowledge, _Opened
from tda.knowledge.retrieval import ChromaKnowledgeRetriever
from tda.knowledge.store import KnowledgeStore, open_client

SCOPE = CaseScope("p1", "s1@2026-01-01T00:00:00+00:00", "alice")


@register_embedding_function
class Held(MiniLMEmbedding):
    """A model embedder (vectors kept by text, as minilm's) whose runs wait until ``release`` is set."""

    _recent = _RecentVectors()
    release = threading.Event()
    runs: ClassVar[list[list[str]]] = []

    @staticmethod
    def name() -> str:
        return "tests-held"

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> Held:
        return Held()

    def _encode(self, texts: list[str]) -> Any:
        Held.runs.append(list(texts))
        assert Held.release.wait(10)
        return [np.full(384, 1.0 + len(t) % 7, dtype=np.float32) / np.sqrt(384) for t in texts]


@pytest.fixture
def knowledge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LiveKnowledge:
    monkeypatch.setitem(embeddings.EMBEDDERS, "held", Held)
    Held._recent, Held.runs = _RecentVectors(), []
    Held.release.set()
    store = KnowledgeStore(open_client(tmp_path / "data"), embedder="held")
    live = LiveKnowledge(tmp_path, embedder="held")
    live._opened = _Opened(store, ChromaKnowledgeRetriever(store), ChampionCaseStore(store))
    return live


def _hops(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The functions handed to a worker thread from now on."""
    hops: list[Any] = []
    to_thread = asyncio.to_thread
    monkeypatch.setattr(asyncio, "to_thread", lambda work, *a, **k: hops.append(work) or to_thread(work, *a, **k))
    return hops


async def _ahead(knowledge: LiveKnowledge, query: str) -> None:
    """``query``'s embedding started ahead and under way (its run held)."""
    Held.release.clear()
    knowledge.embed_ahead(query)
    while not Held.runs or Held.runs[-1] != [query]:
        await asyncio.sleep(0.001)


async def test_a_query_embedded_ahead_is_waited_for_on_the_loop(
    knowledge: LiveKnowledge, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _ahead(knowledge, "the query")
    hops = _hops(monkeypatch)
    waiting = asyncio.ensure_future(knowledge.embed(["the query"]))
    await asyncio.sleep(0.02)
    assert not waiting.done()
    Held.release.set()
    [vector] = await waiting
    assert hops == [] and Held.runs == [["the query"]]
    assert [vector] == await knowledge.embed(["the query"])  # kept: no run, no thread


async def test_a_champion_case_search_waits_for_the_query_s_vector_on_the_loop(
    knowledge: LiveKnowledge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search itself then runs on the loop (the written cases' mirror in memory: ~0.2-0.4 ms at 2,000 cases);
    a scope that sees no case does not wait for the vector at all."""
    assert knowledge._opened is not None
    knowledge._opened.cases.record(CaseRecord("monthly revenue by region", "a table", scope=SCOPE))
    await knowledge.retrieve_cases("warm", scope=SCOPE)  # the mirror loaded
    await _ahead(knowledge, "revenue by region")
    hops = _hops(monkeypatch)
    nobody = CaseScope("p2", "s9@2026-01-01T00:00:00+00:00", "bob")
    assert await knowledge.retrieve_cases("revenue by region", scope=nobody) == []  # no wait for the vector
    searching = asyncio.ensure_future(knowledge.retrieve_cases("revenue by region", scope=SCOPE))
    await asyncio.sleep(0.02)
    assert not searching.done()
    Held.release.set()
    [case] = await searching
    assert case.query == "monthly revenue by region"
    assert hops == [] and Held.runs[-1] == ["revenue by region"]
