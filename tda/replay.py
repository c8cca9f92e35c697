"""Replay: assemble a stored snapshot's inputs again and say whether the result is identical, or how it differs."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from components.context_window.base import Message, ToolSchema
from components.context_window.snapshot import ContextWindowSnapshot

from .errors import Conflict, NotFound
from .gateway import replay_context
from .sources import Cutoff, aware_utc, build_context, input_hashes
from .turn_pipeline import with_component_instructions

if TYPE_CHECKING:
    from components.context_window.base import AssemblyContext
    from components.context_window.handler import AssembledContext
    from components.context_window.window_type import ContextWindowType

    from .models import SnapshotRow
    from .service import TDAService

VARIES_BETWEEN_RUNS = ("prefix_stable_tokens",)
"""Not an outcome of the inputs, besides wall times (the snapshot's own ``comparable``): how much matched the
previous window of the session."""
MAX_DIFFERENCES = 200


async def replay(svc: TDAService, snapshot_id: int) -> dict[str, Any]:
    row = await svc.store.sessions.snapshot(snapshot_id)
    assembled, ctx = await reassemble(svc, row)
    recorded, replayed = comparable(row.data), comparable(assembled.snapshot.to_dict())
    differences = diff(recorded, replayed)
    hashes = input_hashes(ctx)
    return {
        "snapshot_id": snapshot_id,
        "identical": not differences,
        "differences": differences,
        "inputs_changed": sorted(k for k, v in hashes.items() if row.inputs.get("hashes", {}).get(k) != v),
        "type_id": row.type_id,
        "type_version": row.type_version,
        "replayed": assembled.snapshot.to_dict(),
    }


async def reassemble(
    svc: TDAService, row: SnapshotRow, window_type: ContextWindowType | None = None
) -> tuple[AssembledContext, AssemblyContext]:
    """Assemble a stored snapshot's inputs again: same type version (unless ``window_type`` is given, to see the
    turn under another type), model, limits, phase, and the history before it."""
    ctx = await recorded_context(svc, row)  # first: a window assembled in process says so, whatever its type
    if window_type is None:
        try:
            window_type = await svc.store.types.version(row.type_id, row.type_version)
        except NotFound:
            gone = f"type {row.type_id!r} v{row.type_version} no longer exists (deleted)"
            raise Conflict(f"{gone}, so this snapshot cannot be replayed") from None
    return await svc.scratch_handler.assemble(ctx, window_type), ctx


async def recorded_context(svc: TDAService, row: SnapshotRow) -> AssemblyContext:
    """A stored snapshot's inputs as they were: model, limits, phase, and the history before it (an experiment
    assembles it under two types)."""
    if "library" in row.inputs:
        by = row.inputs["library"]
        raise Conflict(f"this window was assembled in process by {by}: its inputs stay with the agent, not replayable")
    inputs = row.inputs
    if "gateway" in inputs:  # a chat client's window: its conversation as sent, not the stored history
        profile = await svc.store.profiles.get((await svc.store.sessions.get(row.session_id)).profile_id)
        return await replay_context(svc, row, profile)
    data = await svc.store.sessions.load(row.session_id, before_turn=row.turn)
    ctx = build_context(
        data,
        inputs["query"],
        default_model=inputs["model"],
        sources=svc.sources,
        history=await svc.history.source(data),
        # snapshots from before "assembled_at" was recorded: the snapshot's own time, a little later
        cutoff=Cutoff(row.turn, row.created_at, inputs.get("assembled_at", aware_utc(row.created_at).timestamp())),
    )
    phase = inputs.get("phase")
    ctx = dataclasses.replace(
        ctx,
        model=inputs["model"],
        profile=dataclasses.replace(ctx.profile, context_limit=inputs.get("profile_context_limit")),
        session=dataclasses.replace(ctx.session, context_limit=inputs.get("session_context_limit"), phase=phase),
        # a tool-loop step: the turn so far after its query; the client's own tools (chat completions)
        continuation=tuple(Message.from_chat(m) for m in inputs.get("continuation") or ()),
        earlier_turns=None if svc.sources.turn_index is None else svc.sources.turn_index.bound(data.session, phase),
        tools=tuple(ToolSchema.from_openai(t) for t in inputs["tools"]) if "tools" in inputs else ctx.tools,
    )
    return await with_component_instructions(svc, ctx)


def comparable(snapshot: dict[str, Any]) -> dict[str, Any]:
    data = ContextWindowSnapshot.from_dict(snapshot).comparable()  # normalises older stored shapes
    return {k: v for k, v in data.items() if k not in VARIES_BETWEEN_RUNS}


def diff(recorded: Any, replayed: Any, path: str = "") -> list[dict[str, Any]]:
    """Leaf-level differences; lists of modules are matched by ``module_id`` so paths read well."""
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        out: list[dict[str, Any]] = []
        for key in sorted(set(recorded) | set(replayed), key=str):
            out += diff(recorded.get(key), replayed.get(key), f"{path}.{key}" if path else str(key))
        return out[:MAX_DIFFERENCES]
    if isinstance(recorded, list) and isinstance(replayed, list):
        if all(isinstance(x, dict) and "module_id" in x for x in recorded + replayed):
            keyed = lambda items: {x["module_id"]: x for x in items}  # noqa: E731
            return diff(keyed(recorded), keyed(replayed), path)
        if len(recorded) == len(replayed):
            return [
                d for i, (a, b) in enumerate(zip(recorded, replayed, strict=True)) for d in diff(a, b, f"{path}[{i}]")
            ]
    return [] if recorded == replayed else [{"path": path, "recorded": recorded, "replayed": replayed}]
