"""plan_hydration: the previous turn's tool results, distilled so the next plan can build on them.

Source: the newest valid ``TurnRecord`` in ``ctx.session.turns`` that the session's IFOC phase may
see; its ``results`` in the shapes documented in ``components/context_window/turn_results.py``.
Thresholds: the window type's ``distillation`` (``ctx.directives.config["distillation"]``:
``max_rows``, ``max_chars``).

A turn's results are distilled once and cached per session (``purge`` forgets them). When the
distilled results do not fit the budget, the whole set steps down: smaller samples and fewer
verbatim rows, then statistics only, then metadata only, then results are dropped from the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter
from typing import Any

from components.context_window.base import (
    AssemblyContext,
    ContextModule,
    Contribution,
    ModuleManifest,
    TurnRecord,
    joined,
    text_contribution,
)
from components.context_window.fitting import clip, estimator, fit_blocks
from components.context_window.options import ModuleOptions
from components.context_window.phases import visible
from components.context_window.session_cache import SessionCache, content_key
from components.context_window.turn_results import Table, parse_result
from components.context_window.window_type import Distillation

from .distillation import Distilled, apply_l2, distill

NOTE = "Statistics describe every row; samples only illustrate. Do not infer totals from samples."


@dataclass(frozen=True, slots=True)
class Step:
    """One rung of the budget ladder, applied to every result alike."""

    name: str
    sample_rows: int
    verbatim_rows: int
    text_chars: int


LADDER = (
    Step("sample_25", 25, 25, 10**12),
    Step("sample_10", 10, 10, 2_000),
    Step("statistics_only", 0, 0, 0),
)


class PlanHydrationModule(ContextModule):
    options_model = ModuleOptions

    def __init__(self, manifest: ModuleManifest) -> None:
        super().__init__(manifest)
        # Entries hold the rows of big results: keep the bound modest (about one per recently active session).
        self._distilled_results: SessionCache[tuple[Distilled, ...]] = SessionCache(max_entries=64)
        self._last: dict[str, Any] = {}

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        turn = previous_turn(ctx)
        if turn is None or not turn.results:
            reason = "no results from a previous turn" if turn is None else f"turn {turn.turn} has no results"
            return self._empty(reason)
        started = perf_counter()
        items = self._distilled(turn, ctx)
        header = f"## Results of the previous turn (turn {turn.turn}: {clip(turn.query, 200)})\n{NOTE}"
        blocks, l2 = apply_l2(items)
        tokens = estimator(ctx)
        strategy = "L2" if l2 else "distilled"
        kept = blocks if tokens.count(joined(header, blocks)) <= budget else []
        for step in LADDER if not kept else ():
            candidate = [render_step(d, step) for d in items]
            if tokens.count(joined(header, candidate)) <= budget:
                kept, strategy = candidate, step.name
                break
        if not kept:
            kept = fit_blocks([d.render(level="metadata") for d in items], budget, tokens, header)
            strategy = "metadata_only" if len(kept) == len(items) else "fewer_results"
        meta = {
            "turn": turn.turn,
            "results": len(items),
            "results_included": len(kept),
            "levels": [d.level for d in items],
            "l2": l2,
        }
        if not kept:
            meta["reason"] = f"{budget} tokens cannot hold the header and one result's metadata"
            strategy = "empty"
        self._last = meta | {"strategy": strategy, "budget": budget, "ms": round(1000 * (perf_counter() - started), 2)}
        return text_contribution(
            self.module_id, kept, placement="context", strategy=strategy, metadata=meta, header=header
        )

    async def purge(self, session_id: str, user_id: str) -> dict[str, Any]:
        return {"purged": self._distilled_results.purge(session_id)}

    def get_status(self) -> dict[str, Any]:
        return super().get_status() | {"distillation_cache": self._distilled_results.stats(), "last": dict(self._last)}

    def _distilled(self, turn: TurnRecord, ctx: AssemblyContext) -> tuple[Distilled, ...]:
        """Distilled once per distinct content: the same results are never distilled twice, changed ones always are."""
        limits = Distillation.model_validate(ctx.directives.config.get("distillation") or {})

        def compute() -> tuple[Distilled, ...]:
            return tuple(
                distill(parse_result(raw, i), i, limits.max_rows, limits.max_chars)
                for i, raw in enumerate(turn.results, 1)
            )

        key = (limits.max_rows, limits.max_chars, content_key(turn.results))  # the values, not only their shape
        return self._distilled_results.get_or_compute(ctx.session.id, key, compute)

    def _empty(self, reason: str) -> Contribution:
        self._last = {"strategy": "empty", "reason": reason}
        return Contribution(self.module_id, placement="context", strategy="empty", metadata={"reason": reason})


def previous_turn(ctx: AssemblyContext) -> TurnRecord | None:
    """The newest valid turn the current IFOC phase may see (newest first: stops at the first match)."""
    phase = ctx.session.phase
    for turn in reversed(ctx.session.turns):
        if turn.valid and visible(turn.phase, phase):
            return turn
    return None


def render_step(item: Distilled, step: Step) -> str:
    result = item.result
    if item.level == "metadata":
        return item.render()
    if not isinstance(result, Table):
        return item.render(level="full" if len(result.text) <= step.text_chars else "metadata")
    if item.level == "full" and len(result.rows) <= step.verbatim_rows:
        return item.render()
    return item.render(level="analytical", sample_rows=step.sample_rows)
