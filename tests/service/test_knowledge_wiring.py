"""The service on a real (embedded) Chroma store with the hashing embedder: knowledge in turns and
previews, successful turns kept as champion cases, and feedback that stops a wrong case being served."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tda.app import create_app
from tda.config import Settings
from tda.demo import DEMO_SESSION, seed_demo, seed_demo_knowledge
from tda.knowledge import case_table
from tda.knowledge.ingest import ingest_paths
from tda.knowledge.store import KnowledgeStore
from tda.llm import LLM, Completion

HANDBOOK = """# Field handbook

## Refunds

Refunds for heliotrope kettles are granted within forty-five days of delivery, after an inspection
at the Ostrava depot. Keep the original receipt.

## Shipping

Orders leave the warehouse every Tuesday and Friday by rail freight.
"""
QUERY = "How many days do customers have to get a refund for a heliotrope kettle?"


class RecordingLLM(LLM):
    """Answers every call with a fixed text and keeps the messages it was sent (no litellm import)."""

    def __init__(self) -> None:
        super().__init__(mock=True)
        self.calls: list[list[dict[str, Any]]] = []
        self.tool_calls: list[dict[str, Any]] = []

    async def complete(
        self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **_: Any
    ) -> Completion:
        self.calls.append(messages)
        return Completion("Forty-five days, after an inspection at the depot.", 900, 12, self.tool_calls)


@pytest.fixture
def handbook(settings: Settings, tmp_path: Path) -> str:
    """One document ingested into the 'handbook' collection before the app opens the store."""
    path = tmp_path / "handbook.md"
    path.write_text(HANDBOOK)
    store = KnowledgeStore.open(settings.data_dir, embedder="hashing")
    try:
        report = ingest_paths(store, [path], "handbook", base=tmp_path)
    finally:
        store.close()
    assert report.chunks > 0 and not report.errors
    return "handbook"


@pytest.fixture
def llm() -> RecordingLLM:
    return RecordingLLM()


@pytest.fixture
async def wired(handbook: str, settings: Settings, llm: RecordingLLM) -> AsyncIterator[Any]:
    app = create_app(settings, llm=llm, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with app.test_app() as running:
        client = running.test_client()
        token, _ = await running.app.extensions["tda"].store.tokens.create("test-admin", "admin")
        headers = {"Authorization": f"Bearer {token}"}
        profile = {
            "id": "librarian",
            "type": "tool_enabled",  # champion cases (rag_context) serve tool-enabled profiles only
            "context_window_type_id": "knowledge_heavy",  # a shipped type: knowledge 40%, RAG cases 20%
            "knowledge_collections": [handbook],
            "system_prompt": "Answer from the knowledge base.",
        }
        for url, body in [("/v1/profiles", profile), ("/v1/sessions", {"id": "s1", "profile_id": "librarian"})]:
            r = await client.post(url, json=body, headers=headers)
            assert r.status_code == 201, await r.get_json()
        yield client, headers


def _module(snapshot: dict[str, Any], module_id: str) -> dict[str, Any]:
    return next(m for m in snapshot["modules"] if m["module_id"] == module_id)


async def _turn(client: Any, headers: dict[str, str], query: str = QUERY) -> dict[str, Any]:
    r = await client.post("/v1/sessions/s1/turns", json={"query": query}, headers=headers)
    assert r.status_code == 201, await r.get_json()
    return await r.get_json()


async def test_a_turn_is_assembled_with_passages_from_the_profiles_collection(wired, llm):
    client, headers = wired
    body = await _turn(client, headers)
    knowledge = _module(body["snapshot"], "knowledge_context")
    assert knowledge["status"] == "ok" and knowledge["used"] > 0
    sent = "\n".join(str(m["content"]) for m in llm.calls[0])
    assert "forty-five days of delivery" in sent and "Ostrava depot" in sent


async def test_a_preview_reads_the_same_knowledge(wired):
    client, headers = wired
    r = await client.post(
        "/v1/context-window-types/preview",
        json={"type_id": "knowledge_heavy", "session_id": "s1", "query": QUERY},
        headers=headers,
    )
    assert r.status_code == 200, await r.get_json()
    assert _module((await r.get_json())["snapshot"], "knowledge_context")["used"] > 0


async def test_a_profile_without_collections_gets_no_passages(wired):
    client, headers = wired
    r = await client.patch("/v1/profiles/librarian", json={"knowledge_collections": []}, headers=headers)
    assert r.status_code == 200, await r.get_json()
    assert _module((await _turn(client, headers))["snapshot"], "knowledge_context")["used"] == 0


async def test_an_answered_turn_is_served_to_later_turns_until_rated_wrong(wired, llm):
    client, headers = wired
    first = await _turn(client, headers)
    assert first["champion_case_id"]
    assert _module(first["snapshot"], "rag_context")["used"] == 0  # nothing recorded before it

    second = await _turn(client, headers)  # the same question: the first turn is the best case
    rag = _module(second["snapshot"], "rag_context")
    assert rag["used"] > 0 and rag["metadata"]["cases_used"] == 1
    assert "## Champion cases" in "\n".join(str(m["content"]) for m in llm.calls[1])

    r = await client.post("/v1/sessions/s1/turns/1/feedback", json={"feedback": -1}, headers=headers)
    assert r.status_code == 200, await r.get_json()
    assert await r.get_json() == {
        "session_id": "s1",
        "turn": 1,
        "feedback": -1,
        "champion_case_id": first["champion_case_id"],
    }
    third = await _turn(client, headers)
    assert _module(third["snapshot"], "rag_context")["used"] == 0
    assert "## Champion cases" not in "\n".join(str(m["content"]) for m in llm.calls[2])


async def test_a_turn_names_its_champion_case_only_once_it_is_written(wired, monkeypatch):
    """The 201 waits for the case's write (a SIGKILL right after it loses nothing it named); a case that cannot be
    written costs the case, never the turn: the 201 then names none."""
    client, headers = wired
    svc = client.app.extensions["tda"]
    recorder, recorded = svc.sources.case_recorder, asyncio.Event()
    record_case = recorder.record_case

    async def slow_record_case(*args: Any, **kwargs: Any) -> str:
        await asyncio.sleep(0.5)
        case_id = await record_case(*args, **kwargs)
        recorded.set()
        return case_id

    monkeypatch.setattr(recorder, "record_case", slow_record_case)
    first = await _turn(client, headers)
    assert recorded.is_set() and first["champion_case_id"]

    async def broken_record_case(*args: Any, **kwargs: Any) -> str:
        raise OSError("disk full")

    monkeypatch.setattr(recorder, "record_case", broken_record_case)
    second = await _turn(client, headers)
    assert second["turn"] == 2 and second["champion_case_id"] is None
    turns = (await (await client.get("/v1/sessions/s1/turns", headers=headers)).get_json())["turns"]
    assert [t["turn"] for t in turns] == [1, 2]


async def test_the_tool_calls_of_a_turn_are_its_cases_plan(wired, llm):
    client, headers = wired
    call = {"id": "c1", "type": "function", "function": {"name": "lookup_policy", "arguments": '{"item": "kettle"}'}}
    llm.tool_calls = [call]
    first = await _turn(client, headers)
    assert first["champion_case_id"] is None  # the turn waits for its tool result: not finished, not a case
    llm.tool_calls = []
    results = {"results": [{"tool_call_id": "c1", "content": "45 days"}]}
    r = await client.post("/v1/sessions/s1/turns/1/tool-results", json=results, headers=headers)
    assert r.status_code == 201, await r.get_json()
    assert (await r.get_json())["champion_case_id"]
    turns = (await (await client.get("/v1/sessions/s1/turns", headers=headers)).get_json())["turns"]
    assert turns[0]["plan"] == 'lookup_policy({"item": "kettle"})'
    await _turn(client, headers)
    assert 'lookup_policy({"item": "kettle"})' in "\n".join(str(m["content"]) for m in llm.calls[2])


async def test_feedback_errors_follow_the_api_conventions(wired):
    client, headers = wired
    await _turn(client, headers)
    r = await client.post("/v1/sessions/s1/turns/7/feedback", json={"feedback": 1}, headers=headers)
    assert r.status_code == 404 and "no turn 7" in (await r.get_json())["message"]
    r = await client.post("/v1/sessions/nope/turns/1/feedback", json={"feedback": 1}, headers=headers)
    assert r.status_code == 404
    r = await client.post("/v1/sessions/s1/turns/1/feedback", json={"feedback": 2}, headers=headers)
    assert r.status_code == 422
    assert [e["loc"] for e in (await r.get_json())["errors"]] == ["feedback"]
    r = await client.post("/v1/sessions/s1/turns/1/feedback", json={"feedback": 1})
    assert r.status_code == 401


async def test_a_demo_turn_reads_the_demo_collection(settings: Settings, llm: RecordingLLM):
    assert seed_demo_knowledge(settings).chunks > 0
    # warmed up as `tda serve` is: loading the embedder inside the turn can pass the module timeout on a busy machine
    app = create_app(settings, llm=llm, migrate=False, warm_up_llm=False, warm_up_knowledge=True)
    async with app.test_app() as running:
        svc = running.app.extensions["tda"]
        await seed_demo(svc.store)
        token, _ = await svc.store.tokens.create("test-admin", "admin")
        r = await running.test_client().post(
            f"/v1/sessions/{DEMO_SESSION}/turns",
            json={"query": "How are champion cases served and rated?"},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert r.status_code == 201, await r.get_json()
        snapshot = (await r.get_json())["snapshot"]
        knowledge = _module(snapshot, "knowledge_context")
        assert await seed_demo(svc.store) == {"types_created": 0, "profiles_created": 0, "session": DEMO_SESSION}
    assert knowledge["used"] > 0
    components = _module(snapshot, "component_instructions")  # the demo's texts, seeded through the store
    assert components["used"] > 0 and components["metadata"]["intensities"] == {"charting": "full", "tables": "full"}
    assert "[SOURCE 1]" in "\n".join(str(m["content"]) for m in llm.calls[0])


async def test_a_replay_sees_only_the_cases_recorded_before_its_turn(wired):
    """Turn 1's own case, and turn 2's record of the same case, are not inputs either turn had when assembled."""
    client, headers = wired
    svc = client.app.extensions["tda"]
    first = await _turn(client, headers)
    await svc.writer.settle("s1")  # turn 1's champion case is in the store now
    second = await _turn(client, headers)  # the same question: served turn 1's case, and records it again
    await svc.writer.settle("s1")
    assert _module(first["snapshot"], "rag_context")["used"] == 0
    assert _module(second["snapshot"], "rag_context")["metadata"]["cases_used"] == 1

    for body in (first, second):
        r = await client.post(f"/v1/snapshots/{body['snapshot_id']}/replay", headers=headers)
        replay = await r.get_json()
        assert r.status_code == 200 and replay["identical"], replay["differences"]
        r = await client.get(f"/v1/snapshots/{body['snapshot_id']}/trace", headers=headers)
        assert r.status_code == 200 and (await r.get_json())["identical"]

    # a preview is not a replay: it serves every case recorded so far
    r = await client.post(
        "/v1/context-window-types/preview",
        json={"type_id": "knowledge_heavy", "session_id": "s1", "query": QUERY},
        headers=headers,
    )
    assert _module((await r.get_json())["snapshot"], "rag_context")["metadata"]["cases_used"] == 1


async def _turns_then_shutdown(
    settings: Settings, llm: RecordingLLM, queries: list[str]
) -> tuple[list[str], list[str]]:
    """Turns on a new session of a service that then stops: the turns' champion-case ids, and the records written."""
    app = create_app(settings, llm=llm, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with app.test_app() as running:
        client = running.test_client()
        svc = running.app.extensions["tda"]
        token, _ = await svc.store.tokens.create("test-admin", "admin")
        headers = {"Authorization": f"Bearer {token}"}
        await client.post("/v1/profiles", json={"id": "p", "type": "tool_enabled"}, headers=headers)
        await client.post("/v1/sessions", json={"id": "s1", "profile_id": "p"}, headers=headers)
        ids = [(await _turn(client, headers, query))["champion_case_id"] for query in queries]
    with contextlib.closing(sqlite3.connect(settings.data_dir / case_table.FILE_NAME)) as db:
        return ids, [rid for (rid,) in db.execute("SELECT record_id FROM cases")]


async def test_champion_cases_held_in_memory_are_written_at_shutdown(handbook, settings, llm):
    """Cases are written in batches; those not written yet when the service stops are written by its shutdown."""
    ids, written = await _turns_then_shutdown(settings, llm, [f"question {i}" for i in range(3)])
    assert set(written) == set(ids) and len(set(ids)) == 3


async def test_the_champion_case_cap_is_a_setting(handbook, settings, llm):
    """TDA_MAX_CHAMPION_CASES bounds the case store: past it, new turns take the places of older unrated cases."""
    cap = Settings.from_env({"TDA_MAX_CHAMPION_CASES": "2"}).max_champion_cases
    settings = dataclasses.replace(settings, max_champion_cases=cap)
    _, written = await _turns_then_shutdown(settings, llm, [f"question {i}" for i in range(4)])
    assert len(written) == 2


def test_a_case_cap_below_one_is_refused_with_what_to_write() -> None:
    with pytest.raises(ValueError, match="TDA_MAX_CHAMPION_CASES='0' is not a whole number of at least 1"):
        Settings.from_env({"TDA_MAX_CHAMPION_CASES": "0"})


async def test_a_turns_query_is_embedded_while_its_session_is_read(wired, monkeypatch):
    """With a model embedder, the query's run starts from the request, before the turn reads its session: the
    modules that ask for its vector later (knowledge retrieval, the champion cases) find it made or under way, and
    the model runs on it once."""
    from tda.knowledge.embeddings import HashingEmbedding, MiniLMInt8Embedding, _RecentVectors

    client, headers = wired
    svc = client.app.extensions["tda"]
    await _turn(client, headers)  # the store is open
    query, runs, ran = "Is a kettle refunded after ninety days?", [], threading.Event()

    class CountingModel(MiniLMInt8Embedding):  # a model's vectors come from a run; these are the hashing ones
        _recent = _RecentVectors()

        def _encode(self, texts: list[str]) -> Any:
            runs.append(list(texts))
            if query in texts:
                ran.set()
            return HashingEmbedding()(texts)

    monkeypatch.setattr(svc.knowledge, "_embed_fn", CountingModel())
    load, embedded_before_load = svc.store.sessions.load, []  # whether the query's run had started, at each read

    async def observed_load(*args: Any, **kwargs: Any) -> Any:
        embedded_before_load.append(await asyncio.to_thread(ran.wait, 5))
        return await load(*args, **kwargs)

    monkeypatch.setattr(svc.store.sessions, "load", observed_load)
    await _turn(client, headers, query)
    assert embedded_before_load[0] is True
    assert await svc.knowledge.embed([query]) == await asyncio.to_thread(svc.knowledge._embed, [query])
    assert [run for run in runs if query in run] == [[query]]  # the turn's later asks ran no model on it
