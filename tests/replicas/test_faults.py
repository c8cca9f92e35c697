"""Faults: the database, Redis and the Chroma server each go down and come back under two replicas. While one is
gone the service answers 503 with Retry-After where it needs it (never 500) and goes on where it does not; once it
is back both replicas recover by themselves (no restart), and no write that got a 2xx is lost."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from tests.replicas.conftest import Cluster, SSEClient, new_session, streaming

RECOVERY_S = 60


async def _turn(client: httpx.AsyncClient, session_id: str, query: str) -> httpx.Response:
    return await client.post(f"/v1/sessions/{session_id}/turns", json={"query": query})


def _no_500(r: httpx.Response) -> None:
    assert r.status_code < 500 or r.status_code == 503, f"{r.request.method} {r.request.url}: {r.status_code} {r.text}"
    if r.status_code == 503 and r.request.url.path != "/readyz":
        assert int(r.headers["Retry-After"]) > 0, r.headers


async def _until_ok(client: httpx.AsyncClient, path: str) -> float:
    """Seconds until ``path`` answers 200 again, every answer meanwhile a 503 at worst."""
    start = time.monotonic()
    while time.monotonic() - start < RECOVERY_S:
        r = await client.get(path)
        _no_500(r)
        if r.status_code == 200:
            return time.monotonic() - start
        await asyncio.sleep(0.2)
    raise AssertionError(f"{client.base_url}{path} did not recover within {RECOVERY_S} s: {r.status_code} {r.text}")


async def _stored_queries(client: httpx.AsyncClient, session_id: str) -> set[str]:
    r = await client.get(f"/v1/sessions/{session_id}/turns")
    assert r.status_code == 200, r.text
    return {t["query"] for t in r.json()["turns"]}


async def test_the_database_down_and_up_is_503_then_recovers_losing_nothing(live: Cluster) -> None:
    async with live.client(live.a) as a, live.client(live.b) as b:
        session_id = await new_session(a, "db-fault")
        acknowledged = set()
        for i in range(3):
            r = await _turn(a if i % 2 else b, session_id, f"before {i}")
            assert r.status_code == 201, r.text
            acknowledged.add(f"before {i}")
        live.backing.postgres.stop()
        try:
            await asyncio.sleep(1.5)  # past the token cache: authentication needs the database too
            for client in (a, b):
                answers = [
                    await client.get("/v1/profiles"),
                    await client.get(f"/v1/sessions/{session_id}/turns"),
                    await client.post("/v1/profiles", json={"id": "p-while-down", "type": "llm_only"}),
                    await _turn(client, session_id, "while down"),
                    await client.get("/readyz"),
                ]
                for r in answers:
                    _no_500(r)
                assert [r.status_code for r in answers] == [503] * 5, [(r.status_code, r.text) for r in answers]
                assert "database" in answers[0].json()["message"]
                assert (await client.get("/healthz")).status_code == 200  # the process itself is fine
        finally:
            live.backing.postgres.run()
        for client in (a, b):
            waited = await _until_ok(client, "/v1/profiles")
            print(f"\n{client.base_url} answered again {waited:.1f} s after the database restarted")
        for i, client in enumerate((a, b)):
            r = await _turn(client, session_id, f"after {i}")
            assert r.status_code == 201, r.text
            acknowledged.add(f"after {i}")
        stored = await _stored_queries(b, session_id)
        assert acknowledged <= stored and "while down" not in stored


async def test_redis_down_and_up_under_two_replicas(live: Cluster) -> None:
    async with live.client(live.a) as a, live.client(live.b) as b:
        session_id = await new_session(a, "redis-fault")
        live.backing.redis.stop()
        acknowledged = set()
        try:
            await asyncio.sleep(1.0)
            for i, client in enumerate((a, b)):
                r = await _turn(client, session_id, f"while down {i}")  # Redis is not the record: turns go on
                _no_500(r)
                if r.status_code == 201:
                    acknowledged.add(f"while down {i}")
                ready = await client.get("/readyz")
                _no_500(ready)
                assert ready.status_code == 503 and not ready.json()["checks"]["bus"]["ok"], ready.text
        finally:
            live.backing.redis.start()
        for client in (a, b):
            await _until_ok(client, "/readyz")
        # Live snapshots cross replicas again: a stream on b sees a turn taken on a.
        async with streaming(SSEClient(live.b, live.token, session_id)) as stream:
            deadline = time.monotonic() + RECOVERY_S
            while not stream.events and time.monotonic() < deadline:
                r = await _turn(a, session_id, f"after {len(acknowledged)}")
                assert r.status_code == 201, r.text
                acknowledged.add(f"after {len(acknowledged)}")
                await asyncio.sleep(0.5)
            await stream.wait_for(1, timeout=5)
        assert acknowledged <= await _stored_queries(b, session_id)


async def test_a_chroma_server_down_costs_champion_cases_never_turns(live: Cluster) -> None:
    async with live.client(live.a) as a, live.client(live.b) as b:
        session_id = await new_session(a, "chroma-fault")
        live.backing.chroma.stop()
        acknowledged: dict[str, Any] = {}
        try:
            for i, client in enumerate((a, b)):
                r = await _turn(client, session_id, f"while down {i}")
                _no_500(r)
                assert r.status_code == 201, r.text
                assert r.json()["champion_case_id"] is None  # not written, so not named
                acknowledged[f"while down {i}"] = None
                ready = await client.get("/readyz")
                assert ready.status_code == 503 and not ready.json()["checks"]["knowledge"]["ok"], ready.text
        finally:
            live.backing.chroma.launch().wait_ready()
        for client in (a, b):
            await _until_ok(client, "/readyz")
        for i, client in enumerate((a, b)):
            r = await _turn(client, session_id, f"after {i}")
            assert r.status_code == 201 and r.json()["champion_case_id"], r.text
            acknowledged[f"after {i}"] = r.json()["champion_case_id"]
        assert set(acknowledged) <= await _stored_queries(b, session_id)
