"""Moving a session to a later IFOC phase: the message the move carries from the old phase."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from components.context_window import phases
from components.context_window.fitting import clip

if TYPE_CHECKING:
    from .service import TDAService

PHASE_SUMMARY_TURNS = 20
"""How many of the old phase's newest turns the default phase summary lists."""


async def carried_into_phase(
    svc: TDAService, session_id: str, to_phase: str | None, summary: str | None
) -> dict[str, Any] | None:
    """The message a move to a later IFOC phase carries (``phases.transition``), as a row to store, or None.
    Without a ``summary`` from the caller, the old phase's valid turns are summarised one line each."""
    data = await svc.store.sessions.load(session_id)
    from_phase = data.session.phase
    if to_phase is None or from_phase is None or not phases.is_forward(from_phase, to_phase):
        return None
    if summary is None:
        summary = "\n".join(
            f"- Turn {t.turn}: {clip(t.query, 160)} -> {clip(t.answer, 200) or t.outcome}"
            for t in data.turns[-PHASE_SUMMARY_TURNS:]
            if t.valid and t.phase == from_phase
        )
    last_turn = max(data.last_message_turn, data.turns[-1].turn if data.turns else 0)
    message = phases.transition(from_phase, to_phase, summary, turn=last_turn)
    if message is None:
        return None
    return {"role": "system", "content": message.content, "turn": message.turn, "phase": message.phase}
