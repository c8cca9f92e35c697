"""Server-sent events: live snapshots for one session or all, resumable with Last-Event-ID, with heartbeats."""

from __future__ import annotations

from collections.abc import AsyncIterator

from quart import Blueprint, Response, request
from quart_schema import tag_blueprint

from .. import metrics
from ..auth import require
from ..events import SNAPSHOT_EVENT, Subscription, encode_sse, stream_key
from ..service import TDAService, service
from .openapi import event_stream

bp = Blueprint("events", __name__, url_prefix="/v1")
tag_blueprint(bp, ["events"])

RESUME_BATCH = 500


def _last_event_id() -> int:
    raw = request.headers.get("Last-Event-ID") or request.args.get("last_event_id") or "0"
    return int(raw) if raw.isdigit() else 0


async def _stream(svc: TDAService, sub: Subscription, session_id: str | None, after: int) -> AsyncIterator[bytes]:
    metrics.SSE_SUBSCRIBERS.inc()
    try:
        yield b"retry: 2000\n\n"
        # Subscribed before reading the store, so nothing published meanwhile is missed; ids dedupe the overlap.
        if after:
            async for frame, sent in _stored(svc, session_id, after):
                yield frame
                after = sent
        while True:
            try:
                event = await sub.next()
            except StopAsyncIteration:
                if sub.dropped and not svc.bus.closed:  # its queue overflowed: the frame that did not fit is lost
                    metrics.SSE_DROPPED.inc()
                return
            if event.id == 0:  # a heartbeat
                yield event.payload
            elif session_id is None:
                # All sessions: turns on several replicas publish concurrently and their events may arrive out of
                # id order, so an event is only the cue to send what committed since, in id order (ids commit in
                # order). Then the browser's Last-Event-ID never runs ahead of an event it has not been sent.
                async for frame, sent in _stored(svc, None, after):
                    yield frame
                    after = sent
            elif event.id > after:  # one session's turns run one at a time: its events arrive in order
                yield event.payload
    finally:
        metrics.SSE_SUBSCRIBERS.dec()
        svc.bus.unsubscribe(sub)


async def _stored(svc: TDAService, session_id: str | None, after: int) -> AsyncIterator[tuple[bytes, int]]:
    """The stored snapshots after ``after``, oldest first, as SSE frames with their ids."""
    while True:
        rows = await svc.store.sessions.snapshots(session_id, after, RESUME_BATCH)
        for row in rows:
            after = row.id
            yield encode_sse({"snapshot_id": row.id, **row.data}, SNAPSHOT_EVENT, row.id), row.id
        if len(rows) < RESUME_BATCH:
            return


def _sse(svc: TDAService, session_id: str | None, after: int, key: str | None = None) -> Response:
    sub = svc.bus.subscribe(key)
    response = Response(
        _stream(svc, sub, session_id, after),
        mimetype="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
    response.timeout = None  # a stream lives as long as the client stays
    return response


@bp.get("/sessions/<session_id>/events")
@require("viewer")
@event_stream
async def session_events(session_id: str) -> Response:
    """``event: context_window_snapshot`` for each turn of the session; send Last-Event-ID to resume."""
    svc = service()
    session = await svc.store.sessions.get(session_id)  # 404 before the stream starts
    return _sse(svc, session_id, _last_event_id(), stream_key(session.project_id, session_id))


@bp.get("/events")
@require("viewer")
@event_stream
async def all_events() -> Response:
    """Snapshots of every session."""
    svc = service()
    after = _last_event_id()
    if not after:  # from now on: the newest stored snapshot marks "now" (read before subscribing: none is skipped)
        newest = await svc.store.sessions.snapshots(None, 0, 1, newest_first=True)
        after = newest[0].id if newest else 0
    return _sse(svc, None, after)
