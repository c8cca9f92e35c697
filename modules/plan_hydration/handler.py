"""plan_hydration: the previous turn's tool results, distilled so the next plan can build on them, and earlier
turns' results recalled when the question is about them.

Source: the newest valid ``TurnRecord`` in ``ctx.session.turns`` that the session's IFOC phase may
see; its ``results`` in the shapes documented in ``components/context_window/tool_results/shapes.py``.
Thresholds: the window type's ``distillation`` (``ctx.directives.config["distillation"]``:
``max_rows``, ``max_chars``).

A turn's results are distilled once and cached per session (``purge`` forgets them). When the
distilled results do not fit the budget, the whole set steps down: smaller samples and fewer
verbatim rows, then statistics only, then metadata only, then results are dropped from the end.

Offloading (options in ``options.py``): the results of every older valid, visible turn (those of at least
``recall_min_chars`` characters; default: all) are offloaded to a per-session index
(``components/context_window/recall/turns.py``: BM25 over the query, plan and results' opening, and with the context's
``Embedder`` the turn's gist; built incrementally, by content, so a changed turn is read again). With an application's
``ctx.earlier_turns`` (the service hands only its newest turns), every turn is searched as the application keeps it
described (``offload.describe``, made once as the turn was recorded), and a recalled turn that was not handed is read
whole by number. When the question matches one clearly better than the previous turn (the engine's floor and lead; see
``recall.turns``), up to ``recall_turns`` of them come back, best first, after the previous turn's results, each as
"## Earlier result recalled (turn N: <query>)" and distilled to what the room allows (a long text sends its opening).
The previous turn keeps priority: it is squeezed only to leave ``recall_pct`` % of the budget when there is a match, and
recalled results take what it leaves. The snapshot's ``recall`` says what came back and why, or why nothing did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import Any

import numpy as np

from components.context_window.base import (
    AssemblyContext,
    ContextModule,
    Contribution,
    ModuleManifest,
    TokenCounter,
    TurnRecord,
    joined,
    text_contribution,
)
from components.context_window.fitting import clip, cut_to_tokens, estimator, fit_blocks
from components.context_window.phases import visible
from components.context_window.recall.turns import (
    Match,
    SearchedTurns,
    TurnFields,
    TurnRecall,
    TurnText,
    described_turns,
    with_records,
)
from components.context_window.session_cache import SessionCache, content_key
from components.context_window.tool_results.shapes import Table, Text, parse_result
from components.context_window.window_type import Distillation

from .distillation import Distilled, apply_l2, distill
from .offload import Searchable, describe, search_key, searchable
from .options import PlanOptions

NOTE = "Statistics describe every row; samples only illustrate. Do not infer totals from samples."
RECALL_NOTE = f"From an earlier turn, recalled because it matches the current question. {NOTE}"
OPENING_CHARS = 40
OPENING_STEP = 64
"""Tokens an opening's length moves by: a cut is searched once per step, not again for every few tokens of room."""
"""Least opening of a recalled text result worth sending instead of its size alone."""
JOIN_SLACK = 2
"""Tokens kept aside when fitting a recalled block: the blank line joining it to what precedes it."""


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
    options_model = PlanOptions

    def __init__(self, manifest: ModuleManifest) -> None:
        super().__init__(manifest)
        # Entries hold the rows of big results: keep the bound modest (about one per recently active session).
        self._distilled_results: SessionCache[tuple[Distilled, ...]] = SessionCache(max_entries=64)
        self._searchable: SessionCache[Searchable | None] = SessionCache(max_entries=8_192)
        """Each earlier turn's searchable text, by content: built once, not every turn."""
        self._recall = TurnRecall()
        self._searched: SearchedTurns[Searchable | None] = SearchedTurns(_searched_text)
        """Per session, the turns the service described, in the columns the search takes (extended each turn)."""
        self._last: dict[str, Any] = {}

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        started = perf_counter()
        options = plan_options(ctx)
        turns = visible_turns(ctx)
        turn = turns[-1] if turns else None
        found = ctx.memo.get("recall")  # searched once per assembly: the surplus pass and condense ask again
        if found is None:
            found = ctx.memo["recall"] = await self._recalled_turns(ctx, turns, options)
        recalled, recall_meta = found[0], dict(found[1])
        room = int(budget * options.recall_pct / 100) if recalled else 0
        tokens = estimator(ctx)
        header, strategy, meta = "", "empty", dict[str, Any]()
        kept: list[str] = []
        if turn is not None and turn.results:
            items = self._distilled(turn, ctx)
            header = f"## Results of the previous turn (turn {turn.turn}: {clip(turn.query, 200)})\n{NOTE}"
            kept, strategy, l2 = fit_results(items, header, budget - room, tokens)
            if not kept and room:  # the previous turn first: with no room for it beside the recall share, it has all
                kept, strategy, l2 = fit_results(items, header, budget, tokens)
            meta = {
                "turn": turn.turn,
                "results": len(items),
                "results_included": len(kept),
                "levels": [d.level for d in items],
                "l2": l2,
            }
            if not kept:
                meta["reason"] = f"{budget} tokens cannot hold the header and one result's metadata"
                header = ""
        else:
            meta["reason"] = "no results from a previous turn" if turn is None else f"turn {turn.turn} has no results"
        sent = self._recalled_blocks(recalled, ctx, header, kept, budget, tokens)
        blocks = [block for _, _, block in sent]
        if recalled:
            recall_meta["recalled_turns"] = [t.turn for t, _, _ in sent]
            recall_meta["recalled_why"] = {t.turn: m.why() for t, m, _ in sent}
            if len(sent) < len(recalled):
                recall_meta["recall_dropped"] = "no room left in the budget for the other matches"
        meta["recall"] = recall_meta
        if blocks:
            strategy = f"{strategy}+recall" if kept else "recall"
        self._last = meta | {"strategy": strategy, "budget": budget, "ms": round(1000 * (perf_counter() - started), 2)}
        return text_contribution(
            self.module_id, [*kept, *blocks], placement="context", strategy=strategy, metadata=meta, header=header
        )

    async def purge(self, session_id: str, user_id: str) -> dict[str, Any]:
        self._searched.forget(session_id)
        recall = self._searchable.purge(session_id) + self._recall.forget(session_id)
        return {"purged": self._distilled_results.purge(session_id), "recall_index_entries": recall}

    def get_status(self) -> dict[str, Any]:
        return super().get_status() | {
            "distillation_cache": self._distilled_results.stats(),
            "recall_index": self._recall.stats(),
            "last": dict(self._last),
        }

    def _distilled(self, turn: TurnRecord, ctx: AssemblyContext) -> tuple[Distilled, ...]:
        """Distilled once per distinct content: the same results are never distilled twice, changed ones always are."""
        limits = Distillation.model_validate(ctx.directives.config.get("distillation") or {})

        def compute() -> tuple[Distilled, ...]:
            return tuple(
                distill(parse_result(raw, i), i, limits.max_rows, limits.max_chars)
                for i, raw in enumerate(turn.results, 1)
            )

        key = (limits.max_rows, limits.max_chars, content_key(turn.results))  # every value: a caller may edit them
        return self._distilled_results.get_or_compute(ctx.session.id, key, compute)

    async def _recalled_turns(
        self, ctx: AssemblyContext, turns: list[TurnRecord], options: PlanOptions
    ) -> tuple[list[tuple[TurnRecord, Match]], dict[str, Any]]:
        """Earlier turns (before the previous one) whose results match the query clearly, best first, with what
        the snapshot says about the search."""
        if not options.recall_pct:
            return [], {"reason": "recall is off (recall_pct 0)"}
        described = await described_turns(ctx, "plan_hydration", describe)
        refs: Sequence[TurnRecord | int]
        texts: Sequence[TurnFields]
        if described is None:  # a library call: every turn is handed
            found = [(t, s) for t in turns if t.results and (s := self._searchable_of(t, ctx.session.id)) is not None]
            refs = [t for t, _ in found]
            texts = [s.text for _, s in found]
            sizes = np.fromiter((s.chars for _, s in found), dtype=np.int64, count=len(found))
        else:  # the service's: every turn as described when recorded (only those since the last turn read here)
            searched = self._searched.of(ctx.session.id, described)
            refs, texts, sizes = searched.numbers, searched.texts, searched.sizes
        last = refs[-1] if refs else None  # the previous turn, as handed (a library's) or by number (the service's)
        previous = len(refs) - 1 if turns and (last is turns[-1] or last == turns[-1].turn) else None
        shown = [previous] if previous is not None else []
        candidates = np.flatnonzero(sizes >= options.recall_min_chars)
        if previous is not None:
            candidates = candidates[candidates != previous]
        matches = await self._recall.match(
            ctx.session.id,
            texts,
            ctx.query,
            shown=shown,
            candidates=candidates,
            embedder=ctx.embedder,
            limit=options.recall_turns,
        )
        meta: dict[str, Any] = {"method": matches.method, "searched": matches.searched}
        if matches.reason:
            meta["reason"] = matches.reason
        if matches.pending:
            meta["pending_embeddings"] = matches.pending
        in_hand: dict[int, TurnRecord] = {t.turn: t for t in turns}  # a turn not handed is read only if recalled
        chosen = [(_handed(refs[m.position], in_hand), m) for m in matches.matches[: options.recall_turns]]
        return await with_records(ctx, chosen), meta

    def _searchable_of(self, turn: TurnRecord, session_id: str) -> Searchable | None:
        key = search_key(turn)  # what its searchable text reads, read anew: a caller may edit a turn in place
        return self._searchable.get_or_compute(session_id, key, lambda: searchable(turn))

    def _recalled_blocks(
        self,
        recalled: list[tuple[TurnRecord, Match]],
        ctx: AssemblyContext,
        header: str,
        kept: list[str],
        budget: int,
        tokens: TokenCounter,
    ) -> list[tuple[TurnRecord, Match, str]]:
        """Each recalled turn's results as one block, distilled to what the room left allows, in rank order; the
        whole text is counted at the end so the joins between blocks can never take it over ``budget``."""
        sent: list[tuple[TurnRecord, Match, str]] = []
        for turn, match in recalled:
            left = budget - tokens.count_text_message(joined(header, [*kept, *(b for _, _, b in sent)]))
            heading = f"## Earlier result recalled (turn {turn.turn}: {clip(turn.query, 200)})\n{RECALL_NOTE}"
            items = self._distilled(turn, ctx)
            fitted, _, _ = fit_results(items, heading, left - JOIN_SLACK, tokens)
            fitted = with_openings(items, fitted, heading, left - JOIN_SLACK, tokens)
            if fitted:
                sent.append((turn, match, joined(heading, fitted)))
        while sent and tokens.count_text_message(joined(header, [*kept, *(b for _, _, b in sent)])) > budget:
            sent.pop()
        return sent


def _handed(ref: TurnRecord | int, in_hand: dict[int, TurnRecord]) -> TurnRecord | int:
    """A turn's record when the module was handed it, else its number (read whole by ``with_records``)."""
    return in_hand.get(ref, ref) if isinstance(ref, int) else ref


def _searched_text(found: Searchable | None) -> tuple[TurnText, int] | None:
    return None if found is None else (found.text, found.chars)


def plan_options(ctx: AssemblyContext) -> PlanOptions:
    """The slot's options, validated (the orchestrator hands them so; a bare context's config is read here)."""
    if isinstance(ctx.directives.options, PlanOptions):
        return ctx.directives.options
    return PlanOptions.model_validate({k: v for k, v in ctx.directives.config.items() if k != "distillation"})


def fit_results(
    items: Sequence[Distilled], header: str, budget: int, tokens: TokenCounter
) -> tuple[list[str], str, bool]:
    """The results under ``header`` within ``budget``: as distilled, else the whole set one rung down the ladder at
    a time, else metadata only, else fewer results. Returns the blocks, the strategy and whether L2 applied."""
    blocks, l2 = apply_l2(items)
    if budget > 0 and tokens.count_text_message(joined(header, blocks)) <= budget:
        return blocks, "L2" if l2 else "distilled", l2
    for step in LADDER:
        candidate = [render_step(d, step) for d in items]
        if tokens.count_text_message(joined(header, candidate)) <= budget:
            return candidate, step.name, l2
    kept = fit_blocks([d.render(level="metadata") for d in items], budget, tokens, header)
    if not kept:
        return [], "empty", l2
    return kept, "metadata_only" if len(kept) == len(items) else "fewer_results", l2


def with_openings(
    items: Sequence[Distilled], blocks: list[str], heading: str, budget: int, tokens: TokenCounter
) -> list[str]:
    """``blocks`` with each text result the distillation left as metadata (too long to include whole) replaced by
    its opening, as much as the room left holds: a recalled report is read for what it says, not for its size."""
    if len(blocks) != len(items):
        return blocks
    out = list(blocks)
    for i, item in enumerate(items):
        result = item.result
        if not isinstance(result, Text) or out[i] != item.render(level="metadata"):
            continue
        spare = budget - tokens.count_text_message(joined(heading, out)) + tokens.count(out[i])
        head = f"### Result {item.position}: {result.tool} (text, {len(result.text):,} characters; its opening)"
        room = spare - tokens.count(head) - JOIN_SLACK
        # in steps, so the next turn's slightly different room cuts at the same place (its counts are cached)
        opening = cut_to_tokens(result.text, room - room % OPENING_STEP, tokens)
        if len(opening) >= OPENING_CHARS:
            candidate = [*out[:i], f"{head}\n{opening}", *out[i + 1 :]]
            if tokens.count_text_message(joined(heading, candidate)) <= budget:
                out = candidate
    return out


def visible_turns(ctx: AssemblyContext) -> list[TurnRecord]:
    """The valid turns the current IFOC phase may see, oldest first."""
    phase = ctx.session.phase
    return [t for t in ctx.session.turns if t.valid and visible(t.phase, phase)]


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
