"""Named runtime conditions for dynamic adjustments, evaluated against facts known before allocation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import window_type as wt


@dataclass(frozen=True)
class Facts:
    """What conditions may look at: the session's shape, the limit, and the modules' early signals."""

    turn_number: int
    documents_attached: int
    effective_limit: int
    phase: str | None = None
    signals: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per module id, what its ``signals()`` reported (e.g. ``{"rag_context": {"top_score": 0.91}}``)."""

    @property
    def completed_turns(self) -> int:
        return self.turn_number - 1

    @property
    def rag_top_score(self) -> float | None:
        """The best ``top_score`` signal any module reported (a module serving retrieved examples reports its best
        example's score): the component knows the signal, not which module sends it."""
        scores = [float(s["top_score"]) for s in self.signals.values() if s.get("top_score") is not None]
        return max(scores) if scores else None


def _high_confidence_rag(c: wt.HighConfidenceRag, f: Facts) -> bool:
    score = f.rag_top_score
    return score is not None and score >= c.threshold


_EVALUATORS: dict[str, Callable[[Any, Facts], bool]] = {
    "first_turn": lambda c, f: f.turn_number <= 1,
    "no_documents_attached": lambda c, f: f.documents_attached == 0,
    "documents_attached": lambda c, f: f.documents_attached > 0,
    "long_conversation": lambda c, f: f.completed_turns >= c.threshold,
    "high_confidence_rag": _high_confidence_rag,
    "small_window": lambda c, f: f.effective_limit <= c.threshold,
    "phase_is": lambda c, f: f.phase == c.phase,
}


def holds(condition: Any, facts: Facts) -> bool:
    """Whether ``condition`` (a window_type condition model) holds for ``facts``."""
    return _EVALUATORS[condition.type](condition, facts)
