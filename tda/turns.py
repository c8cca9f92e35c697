"""One turn: load from storage, assemble, store and publish the snapshot, call the model, record the turn.
And the what-if preview, which assembles the same way but persists nothing."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from components.context_window.window_type import ContextWindowType

from .errors import UpstreamFailed
from .sources import build_context, input_hashes
from .store.types import StoredType

if TYPE_CHECKING:
    from .api.schemas import PreviewIn
    from .models import ProfileRow
    from .service import TDAService


async def resolve_type(svc: TDAService, profile: ProfileRow) -> StoredType:
    """The profile's bound type, or the default when it binds none."""
    if profile.context_window_type_id:
        return await svc.store.types.get(profile.context_window_type_id)
    return await svc.store.types.default()


async def run_turn(svc: TDAService, session_id: str, query: str) -> dict[str, Any]:
    async with svc.session_lock(session_id):  # one turn at a time per session: turn numbers stay dense
        data = await svc.store.sessions.load(session_id)
        stored = await resolve_type(svc, data.profile)
        ctx = build_context(data, query, default_model=svc.settings.model, sources=svc.sources)
        assembled = await svc.handler.assemble(ctx, stored.type)
        snapshot = assembled.snapshot.to_dict()
        turn = ctx.session.turn_number
        row = await svc.store.sessions.record_snapshot(
            {
                "session_id": session_id,
                "turn": turn,
                "type_id": stored.id,
                "type_version": stored.version,
                "model": ctx.model,
                "data": snapshot,
                "inputs": {
                    "query": query,
                    "model": ctx.model,
                    "hashes": input_hashes(ctx),
                    "profile_context_limit": ctx.profile.context_limit,
                    "session_context_limit": ctx.session.context_limit,
                    "phase": ctx.session.phase,
                },
            }
        )
        svc.bus.publish_snapshot(row.id, session_id, snapshot)
        await asyncio.sleep(0)  # every woken stream writes its frame now, before this turn's model call runs
        try:
            done = await svc.llm.complete(ctx.model, assembled.messages, assembled.tools)
        except Exception as exc:  # provider errors are many and untyped; the caller needs the reason
            raise UpstreamFailed(
                f"the model call failed ({type(exc).__name__}: {exc}); snapshot {row.id} was kept", snapshot_id=row.id
            ) from None
        tokens_in = done.tokens_in or assembled.snapshot.total_used
        await svc.store.sessions.record_turn(
            session_id,
            {
                "turn": turn,
                "query": query,
                "answer": done.text,
                "tokens_in": tokens_in,
                "tokens_out": done.tokens_out,
                "model": ctx.model,
                "snapshot_id": row.id,
                "phase": ctx.session.phase,
            },
            [
                {
                    "role": "user",
                    "content": query,
                    "tokens": assembled.snapshot.query_tokens,
                    "phase": ctx.session.phase,
                },
                {
                    "role": "assistant",
                    "content": done.text,
                    "tool_calls": done.tool_calls,
                    "tokens": done.tokens_out,
                    "phase": ctx.session.phase,
                },
            ],
        )
    return {
        "session_id": session_id,
        "turn": turn,
        "answer": done.text,
        "tokens_in": tokens_in,
        "tokens_out": done.tokens_out,
        "snapshot_id": row.id,
        "summary": assembled.snapshot.summary(),
        "snapshot": snapshot,
    }


async def preview(svc: TDAService, body: PreviewIn) -> dict[str, Any]:
    if body.type is not None:
        window_type: ContextWindowType = svc.validate_type(body.type, loc=("type",))
        version = None
    else:
        stored = await svc.store.types.get(body.type_id or "")
        window_type, version = stored.type, stored.version
    data = await svc.store.sessions.load(body.session_id)
    ctx = build_context(data, body.query, default_model=svc.settings.model, sources=svc.sources)
    assembled = await svc.scratch_handler.assemble(ctx, window_type)
    return {
        "persisted": False,
        "type_id": window_type.id,
        "type_version": version,
        "session_id": body.session_id,
        "summary": assembled.snapshot.summary(),
        "snapshot": assembled.snapshot.to_dict(),
    }
