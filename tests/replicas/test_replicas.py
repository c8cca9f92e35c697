"""Two replicas behave as one service: events cross replicas, turns are serialised per session, types keep
optimistic locking, and a client of a killed replica resumes on the other with nothing missed."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from pathlib import Path
from typing import Any

import httpx

from tda.knowledge.ingest import ingest_paths
from tda.knowledge.store import KnowledgeStore
from tests.replicas.conftest import Cluster, SSEClient, new_session, streaming


async def test_a_turn_on_a_reaches_an_sse_subscriber_on_b(live: Cluster) -> None:
    async with live.client(live.a) as a:
        session_id = await new_session(a, "crossing")
        async with streaming(SSEClient(live.b, live.token, session_id)) as on_b:
            r = await a.post(f"/v1/sessions/{session_id}/turns", json={"query": "What is a context window?"})
            assert r.status_code == 201, r.text
            turn = r.json()
            [event_id] = await on_b.wait_for(1)
    assert event_id == turn["snapshot_id"]
    _, data = on_b.events[0]
    assert data["snapshot_id"] == turn["snapshot_id"]
    assert data["total_used"] == turn["snapshot"]["total_used"]


async def test_concurrent_turns_on_one_session_across_replicas_get_dense_turn_numbers(live: Cluster) -> None:
    async with live.client(live.a) as a, live.client(live.b) as b:
        session_id = await new_session(a, "dense")
        replies = await asyncio.gather(
            *(
                (a if i % 2 else b).post(f"/v1/sessions/{session_id}/turns", json={"query": f"question {i}"})
                for i in range(20)
            )
        )
        assert [r.status_code for r in replies] == [201] * 20, [r.text for r in replies if r.status_code != 201]
        turns = sorted((r.json()["turn"], r.json()["snapshot_id"]) for r in replies)
        stored = (await b.get(f"/v1/sessions/{session_id}/turns")).json()["turns"]
    numbers = [t for t, _ in turns]
    assert numbers == list(range(numbers[0], numbers[0] + 20)), numbers  # distinct and dense
    snapshot_ids = [s for _, s in turns]
    assert snapshot_ids == sorted(snapshot_ids)  # one after another: each turn's snapshot after the previous one's
    assert [t["turn"] for t in stored] == numbers
    # Each turn read the history of every turn before it, whichever replica recorded them: the input grows.
    tokens_in = [r.json()["snapshot"]["total_used"] for r in sorted(replies, key=lambda r: r.json()["turn"])]
    assert all(later > earlier for earlier, later in itertools.pairwise(tokens_in)), tokens_in


async def test_the_all_sessions_stream_sends_turns_from_both_replicas_in_id_order(live: Cluster) -> None:
    async with live.client(live.a) as a, live.client(live.b) as b:
        sessions = [await new_session(a, f"everything-{i}") for i in range(6)]
        clients = [SSEClient(replica, live.token, None) for replica in (live.a, live.b)]
        async with contextlib.AsyncExitStack() as stack:
            for c in clients:
                await stack.enter_async_context(streaming(c))
            for round_ in range(3):  # turns on six sessions at once, half through each replica
                replies = await asyncio.gather(
                    *(
                        (a if i % 2 else b).post(f"/v1/sessions/{s}/turns", json={"query": f"q{round_}"})
                        for i, s in enumerate(sessions)
                    )
                )
                assert [r.status_code for r in replies] == [201] * 6
            for c in clients:
                await c.wait_for(18)
        stored = []
        for s in sessions:
            stored += [row["id"] for row in (await b.get(f"/v1/sessions/{s}/snapshots")).json()["snapshots"]]
        stored.sort()
    assert len(stored) == 18
    for c in clients:
        ids = [i for i, _ in c.events]
        assert ids == sorted(set(ids))  # strictly increasing: a reconnect's Last-Event-ID skips nothing
        assert [i for i in ids if i in set(stored)] == stored


async def test_a_stale_if_match_on_a_after_a_save_through_b_is_refused(live: Cluster) -> None:
    async with live.client(live.a) as a, live.client(live.b) as b:
        body = {"id": "shared", "name": "Shared", "modules": {"system_prompt": {"target_pct": 40}}}
        r = await a.post("/v1/context-window-types", json=body)
        assert r.status_code == 201, r.text
        seen_on_a = (await a.get("/v1/context-window-types/shared")).headers["ETag"]
        seen_on_b = (await b.get("/v1/context-window-types/shared")).headers["ETag"]
        assert seen_on_a == seen_on_b
        saved = await b.put(
            "/v1/context-window-types/shared", json={**body, "name": "Saved on B"}, headers={"If-Match": seen_on_b}
        )
        assert saved.status_code == 200, saved.text
        stale = await a.put(
            "/v1/context-window-types/shared", json={**body, "name": "Stale on A"}, headers={"If-Match": seen_on_a}
        )
        assert stale.status_code == 412, stale.text
        now = await a.get("/v1/context-window-types/shared")
    assert now.json()["name"] == "Saved on B"
    assert now.headers["ETag"] == saved.headers["ETag"] != seen_on_a


async def test_deactivating_a_module_through_a_applies_on_b(live: Cluster) -> None:
    async def active_on(client: httpx.AsyncClient) -> bool:
        modules = (await client.get("/v1/context-window/modules")).json()["modules"]
        return next(m for m in modules if m["module_id"] == "workflow_history")["active"]

    async with live.client(live.a) as a, live.client(live.b) as b:
        assert await active_on(b)
        r = await a.post("/v1/context-window/modules/workflow_history/deactivate")
        assert r.status_code == 200, r.text
        try:
            for _ in range(50):
                if not await active_on(b):
                    break
                await asyncio.sleep(0.1)
            assert not await active_on(b)
        finally:
            assert (await a.post("/v1/context-window/modules/workflow_history/activate")).status_code == 200
        for _ in range(50):
            if await active_on(b):
                break
            await asyncio.sleep(0.1)
        assert await active_on(b)


async def test_knowledge_and_champion_cases_live_in_the_chroma_server_for_every_replica(
    live: Cluster, tmp_path: Path
) -> None:
    (tmp_path / "handbook.md").write_text(
        "# Field handbook\n\n## Refunds\n\nRefunds for heliotrope kettles are granted within forty-five days "
        "of delivery, after an inspection at the Ostrava depot.\n"
    )
    store = KnowledgeStore.open(tmp_path / "unused", live.backing.chroma.url, embedder="hashing")
    try:
        assert ingest_paths(store, [tmp_path / "handbook.md"], "handbook", base=tmp_path).chunks > 0
    finally:
        store.close()
    query = {"query": "How many days do customers have to get a refund for a heliotrope kettle?"}
    async with live.client(live.a) as a, live.client(live.b) as b:
        profile = {
            "id": "p-librarian",
            "type": "tool_enabled",  # champion cases serve tool-enabled profiles
            "context_window_type_id": "knowledge_heavy",
            "knowledge_collections": ["handbook"],
        }
        assert (await a.post("/v1/profiles", json=profile)).status_code == 201
        assert (
            await a.post("/v1/sessions", json={"id": "s-librarian", "profile_id": "p-librarian"})
        ).status_code == 201
        first = (await a.post("/v1/sessions/s-librarian/turns", json=query)).json()
        second = (await b.post("/v1/sessions/s-librarian/turns", json=query)).json()
    for turn in (first, second):
        knowledge = _module(turn["snapshot"], "knowledge_context")
        assert knowledge["status"] == "ok" and knowledge["used"] > 0
    assert first["champion_case_id"]  # recorded by A in the Chroma server ...
    assert _module(second["snapshot"], "rag_context")["metadata"]["cases_used"] >= 1  # ... and served by B


def _module(snapshot: dict[str, Any], module_id: str) -> dict[str, Any]:
    return next(m for m in snapshot["modules"] if m["module_id"] == module_id)


async def test_clients_of_a_killed_replica_resume_on_the_other_with_nothing_missed(live: Cluster) -> None:
    """Last in this file: it kills A (a later test that needs A starts it again, which takes seconds)."""
    async with live.client(live.b) as b:
        session_id = await new_session(b, "killed")

        async def turn(i: int) -> int:
            r = await b.post(f"/v1/sessions/{session_id}/turns", json={"query": f"question {i}"})
            assert r.status_code == 201, r.text
            return int(r.json()["snapshot_id"])

        clients = [SSEClient(live.a, live.token, session_id) for _ in range(5)]
        tasks = [asyncio.create_task(c.run()) for c in clients]
        await asyncio.wait_for(asyncio.gather(*(c.opened.wait() for c in clients)), 60)
        before = [await turn(i) for i in range(3)]
        for c in clients:
            assert await c.wait_for(3) == before
        live.a.kill()  # mid-stream: no shutdown code runs on A
        await asyncio.wait_for(asyncio.gather(*(c.ended.wait() for c in clients)), 30)
        await asyncio.gather(*tasks)
        while_away = [await turn(i) for i in range(3, 6)]  # published while the clients are disconnected

        resumed = [SSEClient(live.b, live.token, session_id, last_event_id=c.last_id) for c in clients]
        async with contextlib.AsyncExitStack() as stack:
            for c in resumed:
                await stack.enter_async_context(streaming(c))
            after = [await turn(i) for i in range(6, 8)]
            for c in resumed:
                assert await c.wait_for(5) == while_away + after
        stored = (await b.get(f"/v1/sessions/{session_id}/snapshots")).json()["snapshots"]
    every = [s["id"] for s in stored]
    assert every == before + while_away + after
    for old, new in zip(clients, resumed, strict=True):
        seen = [i for i, _ in old.events] + [i for i, _ in new.events]
        assert seen == every  # nothing missed, nothing twice


async def test_signing_out_on_a_ends_the_cookie_on_b(live: Cluster) -> None:
    """Browser sessions live in the shared database: a sign-out on one replica ends the cookie on every one."""
    async with httpx.AsyncClient(base_url=live.a.url) as a, httpx.AsyncClient(base_url=live.b.url) as b:
        r = await a.post("/v1/auth/session", json={"token": live.token})
        assert r.status_code == 200, r.text
        cookie = {"Cookie": f"tda_session={r.cookies['tda_session']}"}
        assert (await b.get("/v1/auth/session", headers=cookie)).status_code == 200  # one secret, one session
        assert (await a.delete("/v1/auth/session", headers=cookie)).status_code == 204
        assert (await b.get("/v1/auth/session", headers=cookie)).status_code == 401
        assert (await a.get("/v1/auth/session", headers=cookie)).status_code == 401


async def test_history_imported_through_a_is_recalled_by_a_turn_on_b(live: Cluster) -> None:
    """Recall's index is built from the history every replica shares: a fact far back in a history imported through
    one replica reaches the window a turn on the other sends."""
    from tests.service.test_history_recall import FACT, QUESTION, long_history

    async with live.client(live.a) as a, live.client(live.b) as b:
        profile = {"id": "p-recall", "type": "llm_only", "context_window_type_id": "conversation_first"}
        assert (await a.post("/v1/profiles", json=profile)).status_code == 201
        session = {"id": "s-recall", "profile_id": "p-recall", "context_limit": 4000}
        assert (await a.post("/v1/sessions", json=session)).status_code == 201
        r = await a.post("/v1/sessions/s-recall/messages", json={"messages": long_history(300)})
        assert r.status_code == 201, r.text
        r = await b.post("/v1/sessions/s-recall/turns", json={"query": QUESTION})
        assert r.status_code == 201, r.text
        trace = (await b.get(f"/v1/snapshots/{r.json()['snapshot_id']}/trace")).json()
    assert FACT in str(trace)
