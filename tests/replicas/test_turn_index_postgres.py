"""The turn index's reads on PostgreSQL (64-bit turn bounds, a list of turn numbers, the validity flags): a session
met for the first time is read from the database, a recalled turn is read whole by number, and an invalidated one is
dropped once the session's history version moves."""

from __future__ import annotations

import asyncio
from typing import Any

from tda.db import upgrade
from tda.demo import seed_demo
from tda.recall.turns import TurnIndex
from tda.store import Store
from tests.replicas.servers import Backing
from tests.replicas.test_postgres import fresh_database


def queried(record: Any) -> str:
    return record.query


async def test_earlier_turns_are_read_described_and_filtered_on_postgresql(backing: Backing) -> None:
    url = fresh_database(backing)
    await asyncio.to_thread(upgrade, url)
    store = Store.connect(url)
    try:
        await seed_demo(store)
        await store.sessions.create({"id": "long", "profile_id": "demo-tools"}, "test")
        for turn in range(1, 8):
            fields = {"turn": turn, "query": f"q{turn}", "results": [{"tool": "t", "rows": [{"n": turn}]}]}
            await store.sessions.record_turn("long", fields, [{"role": "user", "content": f"q{turn}"}])
        index = TurnIndex(store.db, lambda: None)
        session = await store.sessions.get("long")
        earlier = index.bound(session, session.phase)
        assert await earlier.described("k", queried, before=6) == [(n, f"q{n}") for n in range(1, 6)]
        [third] = await earlier.records([3])
        assert third.results == ({"tool": "t", "rows": [{"n": 3}]},)
        await store.sessions.set_turn_validity("long", 3, False, "test")
        session = await store.sessions.get("long")
        moved = index.bound(session, session.phase)  # the next turn's window: a newer history version
        assert [n for n, _ in await moved.described("k", queried, before=8)] == [1, 2, 4, 5, 6, 7]
        assert await moved.records([3]) == []
    finally:
        await store.close()
