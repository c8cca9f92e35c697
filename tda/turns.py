"""One turn: load from storage, assemble, store and publish the snapshot, call the model, record the turn.
And the what-if preview, which assembles the same way but persists nothing."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import TYPE_CHECKING, Any

from components.context_window.window_type import ContextWindowType

from .errors import Conflict, UpstreamFailed
from .sources import StoredHistory, build_context, input_hashes
from .store.types import StoredType

if TYPE_CHECKING:
    from .api.schemas import PreviewIn
    from .llm import Completion
    from .models import ProfileRow
    from .service import TDAService


async def resolve_type(svc: TDAService, profile: ProfileRow) -> StoredType:
    """The profile's bound type, or the default when it binds none."""
    if profile.context_window_type_id:
        return await svc.store.types.get(profile.context_window_type_id)
    return await svc.store.types.default()


async def run_turn(
    svc: TDAService, session_id: str, query: str, timings: dict[str, float] | None = None
) -> dict[str, Any]:
    """``timings`` (optional) receives ``model_ms``: how long the model call took, for Server-Timing."""
    async with svc.session_lock(session_id):  # one turn at a time per session: turn numbers stay dense
        await svc.writer.settle(session_id)  # the previous turn's champion case is recorded: this turn may use it
        data = await svc.store.sessions.load(session_id)
        stored = await resolve_type(svc, data.profile)
        history = StoredHistory(svc.store.sessions, data)
        ctx = build_context(data, query, default_model=svc.settings.model, sources=svc.sources, history=history)
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
        called = time.perf_counter()
        try:
            done = await svc.llm.complete(ctx.model, assembled.messages, assembled.tools)
        except Exception as exc:  # provider errors are many and untyped; the caller needs the reason
            raise UpstreamFailed(
                f"the model call failed ({type(exc).__name__}: {exc}); snapshot {row.id} was kept", snapshot_id=row.id
            ) from None
        if timings is not None:
            timings["model_ms"] = (time.perf_counter() - called) * 1000
        tokens_in = done.tokens_in or assembled.snapshot.total_used
        await svc.store.sessions.record_turn(
            session_id,
            {
                "turn": turn,
                "query": query,
                "plan": _plan_of(done),
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
        case_id = _keep_as_champion(svc, session_id, turn, query, done, tokens_in)
    return {
        "session_id": session_id,
        "turn": turn,
        "answer": done.text,
        "tokens_in": tokens_in,
        "tokens_out": done.tokens_out,
        "snapshot_id": row.id,
        "champion_case_id": case_id,
        "summary": assembled.snapshot.summary(),
        "snapshot": snapshot,
    }


def _plan_of(done: Completion) -> str:
    """The tool calls the model chose, one per line: the plan a later turn can adapt."""
    lines = []
    for call in done.tool_calls:
        function = call.get("function") or {}
        lines.append(f"{function.get('name', '?')}({function.get('arguments') or ''})")
    return "\n".join(lines)


def _keep_as_champion(
    svc: TDAService, session_id: str, turn: int, query: str, done: Completion, tokens_in: int
) -> str | None:
    """Record the answered turn as a champion case, after the response (the session's next turn waits for it).
    The turn is already stored: a failure there costs the case, never the turn."""
    recorder = svc.sources.case_recorder
    plan = _plan_of(done)
    if recorder is None or not (done.text.strip() or plan):
        return None

    async def record() -> None:
        await recorder.record_case(
            query, done.text, plan=plan, tokens=tokens_in + done.tokens_out, session_id=session_id, turn=turn
        )

    svc.writer.submit(session_id, record, f"champion case of turn {turn} of session {session_id}")
    return recorder.case_id(query, done.text)


async def set_feedback(svc: TDAService, session_id: str, turn: int, feedback: int) -> dict[str, Any]:
    """Rate a recorded turn's champion case (recording it first if it is missing); negative is never served."""
    await svc.writer.settle(session_id)  # the turn's own recording must not land after (and undo) this rating
    row = await svc.store.sessions.turn(session_id, turn)
    recorder = svc.sources.case_recorder
    if recorder is None:
        raise Conflict("champion cases are not configured on this service; feedback has nowhere to go")
    case_id = await recorder.record_case(
        row.query,
        row.answer,
        plan=row.plan,
        tokens=row.tokens_in + row.tokens_out,
        feedback=feedback,
        session_id=session_id,
        turn=turn,
    )
    return {"session_id": session_id, "turn": turn, "feedback": feedback, "champion_case_id": case_id}


async def preview(svc: TDAService, body: PreviewIn) -> dict[str, Any]:
    if body.type is not None:
        window_type: ContextWindowType = svc.validate_type(body.type, loc=("type",))
        version = None
    else:
        stored = await svc.store.types.get(body.type_id or "")
        window_type, version = stored.type, stored.version
    data = await svc.store.sessions.load(body.session_id)
    if body.profile_id:  # what if this session ran under another profile (its prompt, tools, model)?
        data = dataclasses.replace(data, profile=await svc.store.profiles.get(body.profile_id))
    history = StoredHistory(svc.store.sessions, data)
    ctx = build_context(data, body.query, default_model=svc.settings.model, sources=svc.sources, history=history)
    if body.context_limit is not None:  # what if the limit were this (like a session override: only lowers)
        ctx = dataclasses.replace(ctx, session=dataclasses.replace(ctx.session, context_limit=body.context_limit))
    assembled = await svc.scratch_handler.assemble(ctx, window_type)
    return {
        "persisted": False,
        "type_id": window_type.id,
        "type_version": version,
        "session_id": body.session_id,
        "summary": assembled.snapshot.summary(),
        "snapshot": assembled.snapshot.to_dict(),
    }
