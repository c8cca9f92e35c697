"""What a native turn does before its response (on its critical path) and what after: its session read and its record
by the loop's own SQLite connections, and the next turn's work ahead started once the answer is on its way."""

from __future__ import annotations

import asyncio
from typing import Any

from tda.service import TDAService
from tda.turns import run_turn


async def test_a_turn_reads_its_session_and_writes_its_record_by_the_loop_s_own_connections(
    svc: TDAService, session_id: str
) -> None:
    """No ORM session and no pooled connection for what every turn reads and writes: its session, profile and newest
    turns (two reads), which versions of the window types are current (one read, made once a second), its snapshot
    and its record (two transactions)."""
    svc.store.types.cache_ttl_s = 0.0  # the types' versions read by every turn, not once a second
    await run_turn(svc, session_id, "What is a token?")  # caches warm (the parsed type, the history)
    await svc.writer.drain()
    reader, writer = svc.store.db.reader, svc.store.db.single_writes
    assert reader is not None and writer is not None
    reads, writes = reader.reads, writer.writes
    pooled: list[Any] = []
    opened = svc.store.db.engine.sync_engine.pool.connect
    svc.store.db.engine.sync_engine.pool.connect = lambda: pooled.append(1) or opened()  # type: ignore[method-assign]
    try:
        result = await run_turn(svc, session_id, "And what is a context window?")
    finally:
        svc.store.db.engine.sync_engine.pool.connect = opened  # type: ignore[method-assign]
    assert (reader.reads - reads, writer.writes - writes) == (3, 2)
    assert pooled == []
    turns = await svc.store.sessions.turns(session_id)
    assert [t.turn for t in turns][-1] == result["turn"] and turns[-1].snapshot_id == result["snapshot_id"]


async def test_the_next_turn_s_work_ahead_starts_after_the_response(svc: TDAService, session_id: str) -> None:
    """Summaries and vectors for the session's next turn are no part of this turn's answer: started once it is
    answered (the loop's next round), with the reply as history."""
    order: list[str] = []
    ahead = svc.handler.ahead

    def recorded(ctx: Any, window_type: Any, joining: Any) -> None:
        order.append(f"ahead: {[m.content for m in joining]}")
        ahead(ctx, window_type, joining)

    svc.handler.ahead = recorded  # type: ignore[method-assign]
    result = await run_turn(svc, session_id, "What is a token?")
    order.append("answered")
    await asyncio.sleep(0)
    assert order == ["answered", f"ahead: {['What is a token?', result['answer']]}"]
