"""/v1/sessions: sessions, their history and attachments, turns, limits, snapshots and analytics."""

from __future__ import annotations

import time
from typing import Any

from quart import Blueprint
from quart_schema import tag_blueprint, validate_querystring, validate_request

from components.context_window.token_estimator import resolve_model_limit

from ..analytics import context_analytics
from ..auth import actor, require
from ..champions import set_feedback
from ..phase_change import carried_into_phase
from ..recall.messages import forget_history, index_after
from ..service import service
from ..store.profiles import profile_dict
from ..store.sessions import attachment_dict, message_dict, session_dict, snapshot_dict, turn_dict
from ..turn_pipeline import STEPS, record_snapshot, resolve_type
from ..turns import answer_tool_calls, run_turn
from .common import check_same_as_stored
from .profiles import check_limit_lowers
from .schemas import (
    AttachmentIn,
    ContextLimitIn,
    FeedbackIn,
    MessagesIn,
    SessionIn,
    SessionPatch,
    SessionQuery,
    SessionsQuery,
    SnapshotReportIn,
    SnapshotsQuery,
    ToolResultsIn,
    TurnIn,
    TurnLabelsIn,
    TurnsQuery,
    TurnValidityIn,
)

bp = Blueprint("sessions", __name__, url_prefix="/v1/sessions")
tag_blueprint(bp, ["sessions"])


@bp.get("")
@require("viewer")
@validate_querystring(SessionsQuery)
async def list_sessions(query_args: SessionsQuery) -> dict[str, Any]:
    """Sessions, newest first, a page of ``limit`` from ``offset`` (``next_offset``: the next page's, null after the
    last). ``find`` matches the id, title or user. With turn filters (type_id, model, outcome, since, until, q)
    only the sessions with a matching turn, each with those turns' numbers (``matching_turns``); without,
    ``matching_turns`` is null."""
    q = query_args
    filters = q.turn_filters()
    found = await service().store.sessions.search(q.profile_id, filters, q.limit + 1, find=q.find, offset=q.offset)
    sessions = [{**session_dict(s), "matching_turns": turns if filters else None} for s, turns in found[: q.limit]]
    return {"sessions": sessions, "next_offset": q.offset + q.limit if len(found) > q.limit else None}


@bp.post("")
@require("admin")
@validate_request(SessionIn)
async def create_session(data: SessionIn) -> tuple[dict[str, Any], int]:
    svc = service()
    if data.context_limit is not None:
        profile = await svc.store.profiles.get(data.profile_id)
        check_limit_lowers(data.context_limit, profile.model or svc.settings.model)
    row = await svc.store.sessions.create(data.model_dump(), actor())
    return session_dict(row), 201


@bp.get("/<session_id>")
@require("viewer")
@validate_querystring(SessionQuery)
async def get_session(session_id: str, query_args: SessionQuery) -> dict[str, Any]:
    """The session with its newest turns, attachments, resolved type and the model limit its overrides may lower.
    Costs the same at any length of history: ``older_turns`` is the ``before`` that pages further back."""
    svc = service()
    q = query_args
    data = await svc.store.sessions.load(session_id, turns=q.turns + 1, turns_before=q.before)
    stored = await resolve_type(svc, data.profile)
    model = data.profile.model or svc.settings.model
    model_limit, source = resolve_model_limit(model)
    turns = data.turns[-q.turns :]
    return {
        **session_dict(data.session),
        "profile": profile_dict(data.profile),
        "context_window_type_id": stored.id,
        "context_window_type_version": stored.version,  # the label's when the profile binds by label
        "model": model,
        "model_limit": model_limit,
        "model_limit_source": source,
        "turns": [turn_dict(t) for t in turns],
        "older_turns": turns[0].turn if len(data.turns) > q.turns else None,
        "attachments": [attachment_dict(a) for a in data.attachments],
        "message_count": data.message_count,
    }


@bp.patch("/<session_id>")
@require("admin")
@validate_request(SessionPatch)
async def update_session(session_id: str, data: SessionPatch) -> dict[str, Any]:
    """Change title, phase or user_id. The body GET returned may be sent back: computed fields are ignored."""
    svc = service()
    if data.SAME_AS_STORED & data.model_fields_set:
        check_same_as_stored(data, session_dict(await svc.store.sessions.get(session_id)))
    fields = {k: v for k, v in data.changes().items() if v is not None or k == "phase"}
    summary = fields.pop("phase_summary", None)
    if "phase" not in fields:
        return session_dict(await svc.store.sessions.update(session_id, fields, actor()))
    async with svc.session_lock(session_id):  # no turn runs while the phase moves
        carried = await carried_into_phase(svc, session_id, fields["phase"], summary)
        row = await svc.store.sessions.update(session_id, fields, actor(), carry=[carried] if carried else None)
    return {**session_dict(row), "carried": carried["content"] if carried else None}


@bp.delete("/<session_id>")
@require("admin")
async def delete_session(session_id: str) -> tuple[str, int]:
    """Delete the session and everything kept of it: its history's vectors first (a failure there keeps the session,
    so the deletion can be tried again)."""
    svc = service()
    await svc.store.sessions.get(session_id)  # 404 before anything is deleted
    await forget_history(svc, session_id, "the session was not deleted")
    await svc.store.sessions.delete(session_id, actor())
    if svc.sources.turn_index is not None:
        svc.sources.turn_index.forget(session_id)
    return "", 204


@bp.post("/<session_id>/context-limit")
@require("admin")
@validate_request(ContextLimitIn)
async def set_context_limit(session_id: str, data: ContextLimitIn) -> dict[str, Any]:
    """Lower this session's context limit; ``null`` clears it. Above the model's limit: 422."""
    svc = service()
    session = await svc.store.sessions.get(session_id)
    profile = await svc.store.profiles.get(session.profile_id)
    model = profile.model or svc.settings.model
    check_limit_lowers(data.context_limit, model)
    row = await svc.store.sessions.update(session_id, {"context_limit": data.context_limit}, actor(), "context_limit")
    model_limit, source = resolve_model_limit(model)
    return {**session_dict(row), "model": model, "model_limit": model_limit, "model_limit_source": source}


@bp.get("/<session_id>/messages")
@require("viewer")
async def list_messages(session_id: str) -> dict[str, Any]:
    return {"messages": [message_dict(m) for m in await service().store.sessions.messages(session_id)]}


@bp.post("/<session_id>/messages")
@require("admin")
@validate_request(MessagesIn)
async def add_messages(session_id: str, data: MessagesIn) -> tuple[dict[str, Any], int]:
    """Import history recorded elsewhere (for example by the agent platform)."""
    svc = service()
    async with svc.session_lock(session_id):  # the next turn waits for the index (tda/recall/messages.py)
        rows = await svc.store.sessions.add_messages(session_id, [m.model_dump() for m in data.messages], actor())
        index_after(svc, session_id)
    return {"messages": [message_dict(m) for m in rows]}, 201


@bp.get("/<session_id>/attachments")
@require("viewer")
async def list_attachments(session_id: str) -> dict[str, Any]:
    return {"attachments": [attachment_dict(a) for a in await service().store.sessions.attachments(session_id)]}


@bp.post("/<session_id>/attachments")
@require("admin")
@validate_request(AttachmentIn)
async def add_attachment(session_id: str, data: AttachmentIn) -> tuple[dict[str, Any], int]:
    """Attach a document's extracted text; document_context offers it to the model."""
    row = await service().store.sessions.add_attachment(session_id, data.model_dump(), actor())
    return attachment_dict(row), 201


@bp.delete("/<session_id>/attachments/<attachment_id>")
@require("admin")
async def delete_attachment(session_id: str, attachment_id: str) -> tuple[str, int]:
    await service().store.sessions.delete_attachment(session_id, attachment_id, actor())
    return "", 204


@bp.get("/<session_id>/turns")
@require("viewer")
@validate_querystring(TurnsQuery)
async def list_turns(session_id: str, query_args: TurnsQuery) -> dict[str, Any]:
    """The session's turns in order; with filters (type_id, model, outcome, since, until, q) those that match."""
    filters = query_args.turn_filters()
    store = service().store.sessions
    rows = await store.matching_turns(session_id, filters) if filters else await store.turns(session_id)
    return {"turns": [turn_dict(t) for t in rows]}


@bp.post("/<session_id>/turns")
@require("admin")
@validate_request(TurnIn)
async def create_turn(session_id: str, data: TurnIn) -> tuple[dict[str, Any], int, dict[str, str]]:
    """Assemble the context, store and stream the snapshot, call the model, record the turn.
    The ``Server-Timing`` header says how long each step took (``load``, ``assemble``, ``snapshot``, ``model``,
    ``record``) and the whole turn (``turn``), waiting for the session's lock included."""
    started, timings = time.perf_counter(), dict.fromkeys(STEPS, 0.0)
    body = await run_turn(service(), session_id, data.query, timings)
    timings["turn"] = (time.perf_counter() - started) * 1000
    return body, 201, {"Server-Timing": ", ".join(f"{step};dur={ms:.2f}" for step, ms in timings.items())}


@bp.post("/<session_id>/turns/<int(max=2147483647):turn>/tool-results")
@require("admin")
@validate_request(ToolResultsIn)
async def post_tool_results(session_id: str, turn: int, data: ToolResultsIn) -> tuple[dict[str, Any], int]:
    """Answer the tool calls of the turn's last reply; the model continues the turn with the results.
    The reply may call tools again (``finish_reason: tool_calls``): answer those the same way."""
    results = [r.model_dump() for r in data.results]
    return await answer_tool_calls(service(), session_id, turn, results), 201


@bp.patch("/<session_id>/turns/<int(max=2147483647):turn>")
@require("admin")
@validate_request(TurnValidityIn)
async def set_turn_validity(session_id: str, turn: int, data: TurnValidityIn) -> dict[str, Any]:
    """An invalid turn stays recorded but is left out of the context from now on."""
    return turn_dict(await service().store.sessions.set_turn_validity(session_id, turn, data.valid, actor()))


@bp.put("/<session_id>/turns/<int(max=2147483647):turn>/labels")
@require("admin")
@validate_request(TurnLabelsIn)
async def set_turn_labels(session_id: str, turn: int, data: TurnLabelsIn) -> dict[str, Any]:
    """What a person says of the turn: the evidence its window should hold, and a rating of the window. Experiments
    count how many labelled turns a candidate type keeps them for (docs/experiments.md). Audited."""
    labels = {k: v for k, v in data.model_dump().items() if v}  # no evidence, no rating: nothing said
    return turn_dict(await service().store.sessions.set_turn_labels(session_id, turn, labels, actor()))


@bp.post("/<session_id>/turns/<int(max=2147483647):turn>/feedback")
@require("admin")
@validate_request(FeedbackIn)
async def rate_turn(session_id: str, turn: int, data: FeedbackIn) -> dict[str, Any]:
    """Rate the turn's champion case: later turns see helpful ones marked as such and are never served wrong ones."""
    return await set_feedback(service(), session_id, turn, data.feedback)


@bp.post("/<session_id>/purge-memory")
@require("admin")
async def purge_memory(session_id: str) -> dict[str, Any]:
    """Mark the whole history invalid (kept for audit and replay) and purge module caches for the session."""
    svc = service()
    session = await svc.store.sessions.get(session_id)
    counts = await svc.store.sessions.purge_memory(session_id, actor())
    if svc.sources.turn_index is not None:  # its turns are invalid now (the next turn would read so); let go of them
        svc.sources.turn_index.forget(session_id)
    counts["vectors_deleted"] = await forget_history(svc, session_id, "the history is purged; purge again")
    purged = {}
    for info in svc.registry.infos():
        if info.capabilities.get("purgeable"):
            purged[info.module_id] = await svc.registry.purge(info.module_id, session_id, session.user_id)
    return {"session_id": session_id, **counts, "modules": purged}


@bp.get("/<session_id>/snapshots")
@require("viewer")
@validate_querystring(SnapshotsQuery)
async def list_snapshots(session_id: str, query_args: SnapshotsQuery) -> dict[str, Any]:
    q = query_args
    rows = await service().store.sessions.snapshots(session_id, q.after, q.limit, q.newest_first)
    return {"snapshots": [snapshot_dict(r) for r in rows]}


@bp.post("/<session_id>/snapshots")
@require("admin")
@validate_request(SnapshotReportIn)
async def report_snapshot(session_id: str, data: SnapshotReportIn) -> tuple[dict[str, Any], int]:
    """Keep a window tda assembled in process (``tda.integrations``: an agent's own framework, no model call
    through tda) with the session's snapshots, and stream it to the live panel. It is not replayed: its inputs stay
    with the agent."""
    svc = service()
    await svc.store.sessions.get(session_id)  # 404 for a session that does not exist
    row = {
        "session_id": session_id,
        "turn": data.turn,
        "type_id": data.snapshot["window_type_id"],
        "type_version": 0,  # a type of the agent's, not a stored one
        "model": data.snapshot["model"],
        "data": data.snapshot,
        "inputs": {"library": data.source},
    }
    return {"snapshot_id": await record_snapshot(svc, row)}, 201


@bp.get("/<session_id>/context-analytics")
@require("viewer")
async def analytics(session_id: str) -> dict[str, Any]:
    """Per-turn budget and module figures; averages, maxima, condensation counts, rule frequency."""
    rows = await service().store.sessions.snapshots(session_id, 0, 10_000)
    return {"session_id": session_id, **context_analytics([(r.id, r.data) for r in rows])}
