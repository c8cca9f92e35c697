"""What a profile's model calls cost, read on PostgreSQL: only each snapshot's ``model_call`` is selected (a JSON
path), and it comes back as the dict that was stored, a missing one as None."""

from __future__ import annotations

import asyncio
import itertools

from tda.db import upgrade
from tda.store import Store
from tda.store.sessions import Priced
from tests.replicas.servers import Backing

_names = itertools.count()
CALL = {"model": "gpt-4o", "prompt_tokens": 2048, "cache_read_tokens": 1536, "cost": {"total_usd": 0.004}}


async def test_a_profile_s_model_calls_are_read_by_json_path(backing: Backing) -> None:
    url = backing.postgres.create_database(f"cost{next(_names)}")
    await asyncio.to_thread(upgrade, url)
    store = Store.connect(url)
    try:
        await store.types.seed_defaults()
        await store.profiles.create("p", {"type": "llm_only", "model": "gpt-4o"}, "test")
        await store.profiles.create("other", {"type": "llm_only", "model": "gpt-4o"}, "test")
        for session_id, profile_id in (("a", "p"), ("b", "p"), ("c", "other")):
            await store.sessions.create({"id": session_id, "profile_id": profile_id}, "test")
        rows = [("a", CALL), ("b", None), ("a", {**CALL, "cost": None}), ("c", CALL)]
        for turn, (session_id, call) in enumerate(rows, start=1):
            row = {"session_id": session_id, "turn": turn, "type_id": "balanced", "type_version": 1, "model": "gpt-4o"}
            snapshot_id, _ = await store.sessions.record_snapshot({**row, "data": {"turn": turn}, "inputs": {}})
            if call is not None and turn == 1:  # as a turn records it: with its record, in one transaction
                fields = {"turn": turn, "query": "q", "snapshot_id": snapshot_id}
                priced = Priced(snapshot_id, {"turn": turn}, call, {"load": 1.5})
                await store.sessions.record_turn(session_id, fields, [{"role": "user", "content": "q"}], priced=priced)
            elif call is not None:
                await store.sessions.record_model_call(snapshot_id, {"turn": turn}, call)
        calls = await store.sessions.model_calls_of_profile("p")
        first = (await store.sessions.snapshot(1)).data
    finally:
        await store.close()
    assert calls == [("a", CALL), ("b", None), ("a", {**CALL, "cost": None})]
    assert first == {"turn": 1, "model_call": CALL, "timings_ms": {"load": 1.5}}
