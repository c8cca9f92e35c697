"""workflow_history: short summaries of the previous turns, newest first, and older ones the question is about.

One block per finished turn: its number, outcome, token cost, query and an outline of its plan.
Only valid turns the session's IFOC phase may see are listed (``phases.visible``), at most the
option ``max_turns`` (default 10). Condensing keeps fewer turns (the oldest go first).

Turns beyond ``max_turns`` are offloaded to a per-session index of their query and plan
(``components/context_window/recall/turns.py``), and so are, with an application's ``ctx.earlier_turns``, the turns
older than those it was handed (the service hands its newest 40; a recalled one is read whole by number). When the
question matches some clearly better than the listed ones, up to ``recall_turns`` of them follow the list, marked
"recalled: an older turn matching the question", within ``recall_pct`` % of the budget (the newest turns keep the
rest). The snapshot's ``recall`` says which and why, or why none.
"""

from __future__ import annotations

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
from components.context_window.grown import Joined
from components.context_window.phases import check_phase, visible
from components.context_window.recall.turns import (
    SearchedTurns,
    TurnRecall,
    earlier_described,
    turn_gist,
    with_records,
)

from .options import WorkflowOptions

HEADER = "## Workflow history (previous turns, newest first)"
OUTLINE_STEPS = 3
CLIP = 200


class WorkflowHistoryModule(ContextModule):
    options_model = WorkflowOptions

    def __init__(self, manifest: ModuleManifest) -> None:
        super().__init__(manifest)
        self._recall = TurnRecall()
        self._earlier: SearchedTurns[Described] = SearchedTurns(lambda described: (described, 0))
        """Per session, the older turns the service described, in the columns the search takes (extended each turn):
        the descriptions themselves, plain tuples the collector does not track."""
        self._last: dict[str, Any] = {}

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        options = workflow_options(ctx)
        max_turns = options.max_turns
        # Summarised and searched once per assembly: the surplus pass and condense ask again for the same turns.
        found = ctx.memo.get(("summaries", max_turns))
        if found is None:
            turns = visible_turns(ctx)
            newest = turns[::-1][:max_turns]
            recalled, search = await self._recalled(ctx, turns, options)
            found = ctx.memo[("summaries", max_turns)] = (
                newest,
                [summarize(t) for t in newest],
                recalled,
                [summarize(t, recalled=True) for t in recalled],
                search,
            )
        newest, blocks, recalled, recalled_blocks, (recall_meta, whys) = found
        tokens = estimator(ctx)
        room = int(budget * options.recall_pct / 100) if recalled else 0
        # the newest turn first: with no room for it beside the recall share, it takes the whole budget
        kept = fit_blocks(blocks, budget - room, tokens, HEADER) or fit_blocks(blocks[:1], budget, tokens, HEADER)
        more = fit_blocks([*kept, *recalled_blocks], budget, tokens, HEADER)[len(kept) :]
        meta: dict[str, Any] = {
            "turns_available": len(newest),
            "turns_included": len(kept),
            "phase": ctx.session.phase,
            "recall": recall_meta
            | {
                "recalled_turns": [t.turn for t in recalled[: len(more)]],
                "recalled_why": {t.turn: why for t, why in zip(recalled[: len(more)], whys, strict=False)},
            },
        }
        if not newest:
            meta["reason"] = "no earlier turns visible in this phase"
        elif not kept:
            meta["reason"] = f"{budget - room} tokens cannot hold the header and the newest turn"
        strategy = "empty" if not kept else "full" if len(kept) == len(newest) else "fewer_turns"
        if more:
            strategy = f"{strategy}+recall" if kept else "recall"
        self._last = meta | {"budget": budget, "strategy": strategy, "session_id": ctx.session.id}
        return text_contribution(
            self.module_id, [*kept, *more], placement="context", strategy=strategy, metadata=meta, header=HEADER
        )

    async def purge(self, session_id: str, user_id: str) -> dict[str, Any]:
        """The turns themselves are the store's (a memory purge invalidates them); this forgets what the module
        last reported about the session and its recall index."""
        mine = self._last.get("session_id") == session_id
        if mine:
            self._last = {}
        self._earlier.forget(session_id)
        indexes = self._recall.forget(session_id)
        return {"purged": int(mine) + indexes, "what": "the session's last workflow summary and recall index"}

    def get_status(self) -> dict[str, Any]:
        return super().get_status() | {"recall_index": self._recall.stats(), "last": dict(self._last)}

    async def _recalled(
        self, ctx: AssemblyContext, turns: list[TurnRecord], options: WorkflowOptions
    ) -> tuple[list[TurnRecord], tuple[dict[str, Any], list[str]]]:
        """Turns older than the newest ``max_turns`` whose query or plan match the question clearly, best first, with
        what the snapshot says about the search and why each matched."""
        if not options.recall_pct:
            return [], ({"reason": "recall is off (recall_pct 0)"}, [])
        # the service's older turns (beyond those handed) by number, their records read only if recalled
        # (only the turns described since the last turn are read here: the rest is kept from it)
        earlier = self._earlier.of(ctx.session.id, await earlier_described(ctx, "workflow_history", turn_described))
        refs: Joined[TurnRecord | int] = Joined(earlier.numbers, turns)  # nothing copied: the turns' views joined
        older = len(refs) - min(options.max_turns, len(turns))
        if older <= 0:
            return [], ({"reason": f"every visible turn is among the newest {options.max_turns}"}, [])
        matches = await self._recall.match(
            ctx.session.id,
            Joined(earlier.texts, map(turn_described, turns)),
            ctx.query,
            shown=range(older, len(refs)),
            candidates=range(older),  # a run of positions: read as views of the scores, not gathered
            embedder=ctx.embedder,
            limit=options.recall_turns,
        )
        meta: dict[str, Any] = {"method": matches.method, "searched": matches.searched}
        if matches.reason:
            meta["reason"] = matches.reason
        if matches.pending:
            meta["pending_embeddings"] = matches.pending
        chosen = await with_records(ctx, [(refs[m.position], m) for m in matches.matches[: options.recall_turns]])
        return [t for t, _ in chosen], (meta, [m.why() for _, m in chosen])


def workflow_options(ctx: AssemblyContext) -> WorkflowOptions:
    """The slot's options, validated (the orchestrator hands them so; a bare context's config is read here)."""
    if isinstance(ctx.directives.options, WorkflowOptions):
        return ctx.directives.options
    return WorkflowOptions.model_validate({k: v for k, v in ctx.directives.config.items() if k != "distillation"})


def visible_turns(ctx: AssemblyContext) -> list[TurnRecord]:
    """Valid turns the current phase may see, oldest first."""
    phase = check_phase(ctx.session.phase)
    return [t for t in ctx.session.turns if t.valid and visible(t.phase, phase)]


Described = tuple[int, str, str]
"""A searched turn's fields (``TurnFields``: its number as the key, its text, its one part) as a plain tuple."""


def turn_described(turn: TurnRecord) -> Described:
    """A turn as searched (its query and plan by words, its gist by meaning: the text plan_hydration embeds too), as
    the service keeps it for the session's life: one tuple of its number and strings, which the cycle collector stops
    tracking, so a long session's full passes do not walk one more object a turn (a ``TurnText`` is tracked). Turn
    recall keys it by the number (a turn described anew with other words is a new text there) and reads the gist, a
    single part, as its ``str``: no key tuple nor parts tuple a turn (~0.11 KB, docs/history/benchmarks-log.md,
    "Session 53 (memflat11)"). A turn without a plan is searched by its query alone, which is then its gist too (one
    string, not three copies of the query: session 47)."""
    text = f"{turn.query}\n{turn.plan}" if turn.plan else turn.query  # the same words either way
    gist = turn_gist(turn)
    return turn.turn, text, text if gist == text else gist


def summarize(turn: TurnRecord, *, recalled: bool = False) -> str:
    facts = ["recalled: an older turn matching the question"] if recalled else []
    facts.append(turn.outcome)
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
