"""IFOC phase isolation: which phases an item may be seen from, and what a phase change carries.

A session moves through ideate -> focus -> operate -> complete; messages and turns record the phase
they were made in. Each phase sees itself and the phase just before it (ideate only itself), so
brainstorming never leaks into execution and execution never leaks back into ideation.

Two rules make the helpers total:

* an item whose phase is ``None`` was made outside IFOC (or before it was switched on) and is
  visible from every phase;
* a session whose current phase is ``None`` does not use IFOC: everything is visible.

``visible`` is a per-item predicate so callers can walk history newest-first and stop early.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Literal, TypeVar, get_args

from .base import Message

Phase = Literal["ideate", "focus", "operate", "complete"]
PHASES: tuple[str, ...] = get_args(Phase)

VISIBLE_FROM: dict[str, frozenset[str]] = {
    "ideate": frozenset({"ideate"}),
    "focus": frozenset({"ideate", "focus"}),
    "operate": frozenset({"focus", "operate"}),
    "complete": frozenset({"operate", "complete"}),
}
"""For each current phase, the phases whose items it may see."""

T = TypeVar("T")


def _unknown(phase: str) -> ValueError:
    return ValueError(f"unknown IFOC phase {phase!r}; use one of {', '.join(PHASES)} (or none)")


def check_phase(phase: str | None) -> str | None:
    """Return ``phase`` if it is a known phase or ``None``; otherwise say what is allowed."""
    if phase is not None and phase not in VISIBLE_FROM:
        raise _unknown(phase)
    return phase


def phase_of(item: object) -> str | None:
    """The phase an item was made in (its ``phase`` attribute; ``None`` when it has none)."""
    return getattr(item, "phase", None)


def visible(item_phase: str | None, current_phase: str | None) -> bool:
    """May an item made in ``item_phase`` be shown while the session is in ``current_phase``?"""
    if current_phase is None or item_phase is None:
        return True
    allowed = VISIBLE_FROM.get(current_phase)
    if allowed is None:
        raise _unknown(current_phase)
    return item_phase in allowed


def filter_visible(
    items: Iterable[T], current_phase: str | None, phase_of: Callable[[T], str | None] = phase_of
) -> list[T]:
    """The items visible from ``current_phase``, order kept (messages, turn records, ...)."""
    check_phase(current_phase)
    if current_phase is None:
        return list(items)
    return [item for item in items if visible(phase_of(item), current_phase)]


def is_forward(from_phase: str | None, to_phase: str) -> bool:
    """Entering IFOC (from ``None``) or moving to a later phase; skipping phases counts as forward."""
    check_phase(from_phase)
    check_phase(to_phase)
    return from_phase is None or PHASES.index(to_phase) > PHASES.index(from_phase)


def transition(from_phase: str | None, to_phase: str, summary_text: str | None, *, turn: int = 0) -> Message | None:
    """The message a phase change carries into the new phase, if any.

    Only a move to a *later* phase carries anything, and only when there is something to carry
    (a non-blank summary of what the old phase produced). Going back, staying put, or entering
    IFOC from no phase carries nothing: the earlier phase must not see later work. The summary is
    a system message tagged with the new phase, so it stays hidden if the session later goes back.
    """
    forward = is_forward(from_phase, to_phase)
    if not forward or from_phase is None or not summary_text or not summary_text.strip():
        return None
    content = f"[Summary carried from the {from_phase} phase into {to_phase}]\n{summary_text.strip()}"
    return Message(role="system", content=content, turn=turn, phase=to_phase)
