"""Champion cases from turns: a finished turn kept as an example in its session's scope, and its rating."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from components.context_window.base import Message

from .errors import Conflict
from .redact import redact_urls
from .sources import case_scope

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from .models import TurnRow
    from .service import TDAService
    from .store.sessions import SessionData, TurnTuple


async def keep_as_champion(
    svc: TDAService, data: SessionData, turn: int, query: str, answer: str, row: TurnRow | TurnTuple
) -> str | None:
    """Record the finished turn (its whole tool loop is the plan) as a champion case in its session's scope."""
    return await keep_case(svc, data, turn, query, answer, row, from_tools=may_quote_tools(row, data))


async def keep_case(
    svc: TDAService, data: SessionData, turn: int, query: str, answer: str, row: Any, *, from_tools: bool
) -> str | None:
    """Record a finished turn as a champion case in its session's scope, written before the turn is answered: the
    answer names the case only once it is durable (~3.5 ms a turn, the query's embedding included; docs/service.md).
    The turn is already stored: a failure here costs the case (the answer names none), never the turn."""
    recorder = svc.sources.case_recorder
    plan, tokens = row.plan, row.tokens_in + row.tokens_out
    if recorder is None or not query.strip() or not (answer.strip() or plan):
        return None
    try:
        return await recorder.record_case(
            query,
            answer,
            scope=case_scope(data.session, data.profile),
            from_tools=from_tools,
            plan=plan,
            tokens=tokens,
            session_id=data.session.id,
            turn=turn,
        )
    except Exception as exc:  # e.g. a Chroma server that is down: the turn stands, its case is not claimed
        log.warning(
            "champion case of turn %s of session %s not recorded: %s", turn, data.session.id, redact_urls(str(exc))
        )
        return None


def quotes_tools(messages: Iterable[Message]) -> bool:
    """Whether an answer to this conversation may quote tool data: it holds a tool call or a tool result."""
    return any(m.role == "tool" or m.tool_calls for m in messages)


def may_quote_tools(row: TurnRow | TurnTuple, before: SessionData) -> bool:
    """The turn's answer may quote tool data, which stays in its session unless shared: its tool loop ran, or that of
    a turn before it its window may show (``before``: the session's newest turns before it; a follow-up such as
    "and the owner again?" answers from the history)."""
    return bool(row.plan or row.results) or any(t.plan or t.results for t in before.turns)


async def set_feedback(svc: TDAService, session_id: str, turn: int, feedback: int) -> dict[str, Any]:
    """Rate a recorded turn's champion case (recording it first if it is missing); negative is never served."""
    await svc.writer.settle(session_id)  # the turn's own recording must not land after (and undo) this rating
    row = await svc.store.sessions.turn(session_id, turn)
    recorder = svc.sources.case_recorder
    if recorder is None:
        raise Conflict("champion cases are not configured on this service; feedback has nowhere to go")
    before = await svc.store.sessions.load(session_id, before_turn=turn)  # what the turn was assembled from
    from_tools = may_quote_tools(row, before)
    if row.request_key is not None:  # a chat client's turn: its conversation as sent says (unknown: assume so)
        snapshot = await svc.store.sessions.snapshot(row.snapshot_id) if row.snapshot_id else None
        chat = snapshot.inputs.get("gateway", {}).get("chat") if snapshot is not None else None
        from_tools = chat is None or quotes_tools(Message.from_chat(m) for m in chat)
    case_id = await recorder.record_case(
        row.query,
        row.answer,
        scope=case_scope(before.session, before.profile),
        from_tools=from_tools,
        plan=row.plan,
        tokens=row.tokens_in + row.tokens_out,
        feedback=feedback,
        session_id=session_id,
        turn=turn,
    )
    return {"session_id": session_id, "turn": turn, "feedback": feedback, "champion_case_id": case_id}
