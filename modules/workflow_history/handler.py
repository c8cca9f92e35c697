"""workflow_history: short summaries of the previous turns, newest first.

One block per finished turn: its number, outcome, token cost, query and an outline of its plan.
Only valid turns the session's IFOC phase may see are listed (``phases.visible``), at most the
option ``max_turns`` (default 10). Condensing keeps fewer turns (the oldest go first).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from components.context_window.base import (
    AssemblyContext,
    ContextModule,
    Contribution,
    ModuleManifest,
    TurnRecord,
    text_contribution,
)
from components.context_window.fitting import clip, estimator, fit_blocks
from components.context_window.options import option
from components.context_window.phases import check_phase, visible

from .options import WorkflowOptions

HEADER = "## Workflow history (previous turns, newest first)"
MAX_TURNS = WorkflowOptions().max_turns
OUTLINE_STEPS = 3
CLIP = 200


class WorkflowHistoryModule(ContextModule):
    options_model = WorkflowOptions

    def __init__(self, manifest: ModuleManifest) -> None:
        super().__init__(manifest)
        self._last: dict[str, Any] = {}

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        max_turns = option(ctx.directives.config, "max_turns", MAX_TURNS, minimum=1)
        # Summarised once per assembly: the surplus pass and condense ask again for the same turns.
        summaries = ctx.memo.get(("summaries", max_turns))
        if summaries is None:
            turns = list(visible_turns(ctx, max_turns))
            summaries = ctx.memo[("summaries", max_turns)] = (turns, [summarize(t) for t in turns])
        turns, blocks = summaries
        kept = fit_blocks(blocks, budget, estimator(ctx), HEADER)
        meta: dict[str, Any] = {"turns_available": len(turns), "turns_included": len(kept), "phase": ctx.session.phase}
        if not turns:
            meta["reason"] = "no earlier turns visible in this phase"
        elif not kept:
            meta["reason"] = f"{budget} tokens cannot hold the header and the newest turn"
        strategy = "empty" if not kept else "full" if len(kept) == len(turns) else "fewer_turns"
        self._last = meta | {"budget": budget, "strategy": strategy, "session_id": ctx.session.id}
        return text_contribution(
            self.module_id, kept, placement="context", strategy=strategy, metadata=meta, header=HEADER
        )

    async def purge(self, session_id: str, user_id: str) -> dict[str, Any]:
        """The turns themselves are the store's (a memory purge invalidates them); this forgets what the module
        last reported about the session."""
        mine = self._last.get("session_id") == session_id
        if mine:
            self._last = {}
        return {"purged": int(mine), "what": "the session's last workflow summary"}

    def get_status(self) -> dict[str, Any]:
        return super().get_status() | {"last": dict(self._last)}


def visible_turns(ctx: AssemblyContext, limit: int) -> Iterator[TurnRecord]:
    """Valid turns the current phase may see, newest first; stops after ``limit`` (long sessions stay cheap)."""
    phase = check_phase(ctx.session.phase)
    found = 0
    for turn in reversed(ctx.session.turns):
        if found == limit:
            return
        if turn.valid and visible(turn.phase, phase):
            found += 1
            yield turn


def summarize(turn: TurnRecord) -> str:
    facts = [turn.outcome]
    if turn.tokens_in or turn.tokens_out:
        facts.append(f"{turn.tokens_in:,} in / {turn.tokens_out:,} out tokens")
    line = f"- Turn {turn.turn} ({'; '.join(facts)}): {clip(turn.query, CLIP)}"
    outline = plan_outline(turn.plan)
    return f"{line}\n  Plan: {outline}" if outline else line


def plan_outline(plan: str) -> str:
    """The first steps of a plan, one line: its first non-empty lines joined by arrows."""
    steps = [line.strip() for line in plan.splitlines() if line.strip()]
    more = f" → … ({len(steps)} steps)" if len(steps) > OUTLINE_STEPS else ""
    outline = " → ".join(steps[:OUTLINE_STEPS]) + more
    return clip(outline, CLIP)
