"""rag_context: champion cases — past successful turns served as few-shot examples.

Cases come from ``ctx.cases`` (a ``CaseRetriever``). A case is used when its score is at least
``min_score`` and nobody rated it negatively; the best ``k`` are kept, best first. Retrieval is
kept in the assembly's memo, so ``signals`` (before allocation), ``contribute`` and ``condense``
ask the retriever once per turn, and every turn sees the current cases and ratings.

Options (``ctx.directives.config``): ``min_score`` (0.7), ``k`` (3).
Condensing drops the weakest cases first, then shortens the best one at a sentence boundary.
"""

from __future__ import annotations

from typing import Any

from components.context_window.base import (
    AssemblyContext,
    ChampionCase,
    ContextModule,
    Contribution,
    ModuleManifest,
    TokenCounter,
    joined,
    text_contribution,
)
from components.context_window.fitting import cut_to_tokens, estimator, fit_blocks
from components.context_window.options import option

from .options import RagOptions

HEADER = (
    "## Champion cases\n"
    "Past turns that answered similar questions well. Adapt their approach to the current question; "
    "do not copy their answers, figures or identifiers."
)

DEFAULT_MIN_SCORE = RagOptions().min_score
DEFAULT_K = RagOptions().k


class RagContextModule(ContextModule):
    options_model = RagOptions

    def __init__(self, manifest: ModuleManifest) -> None:
        super().__init__(manifest)
        self._last: dict[str, Any] = {}

    async def signals(self, ctx: AssemblyContext) -> dict[str, Any]:
        cases = await self._eligible_cases(ctx)
        return {"top_score": cases[0].score if cases else 0.0, "eligible_cases": len(cases)}

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        cases = await self._eligible_cases(ctx)
        tokens = estimator(ctx)
        blocks = [render_case(i, case) for i, case in enumerate(cases, 1)]
        kept = fit_blocks(blocks, budget, tokens, HEADER)
        strategy = "full" if len(kept) == len(blocks) else "fewer_cases"
        if not kept and blocks:
            kept, strategy = _shortened_best(blocks[0], budget, tokens), "shortened"
        meta: dict[str, Any] = {
            "cases_available": len(cases),
            "cases_used": len(kept),
            "top_score": cases[0].score if cases else 0.0,
        }
        if not cases:
            meta["reason"] = (
                "no case retriever"
                if ctx.cases is None
                else "nothing relevant found: no case above min_score without negative feedback"
            )
        elif not kept:
            meta["reason"] = f"{budget} tokens cannot hold the header and the question of even one case"
        strategy = strategy if kept else "empty"
        self._last = meta | {"budget": budget, "strategy": strategy}
        return text_contribution(
            self.module_id, kept, placement="context", strategy=strategy, metadata=meta, header=HEADER
        )

    def get_status(self) -> dict[str, Any]:
        return super().get_status() | {"last": dict(self._last)}

    async def _eligible_cases(self, ctx: AssemblyContext) -> tuple[ChampionCase, ...]:
        config = ctx.directives.config
        min_score = option(config, "min_score", DEFAULT_MIN_SCORE, minimum=0)
        k = option(config, "k", DEFAULT_K, minimum=1)
        retriever = ctx.cases
        if retriever is None:
            return ()

        async def retrieve() -> tuple[ChampionCase, ...]:
            found = await retriever.retrieve_cases(ctx.query, k=2 * k)  # headroom for filtered-out cases
            good = [c for c in found if c.score >= min_score and c.feedback >= 0]
            return tuple(sorted(good, key=lambda c: (-c.score, c.id))[:k])

        # One retrieval per assembly (signals, contribute and condense share it through the assembly's memo);
        # the next assembly asks again, so a case recorded or rated since is seen, whatever came before.
        key = f"cases:{min_score}:{k}"
        if key not in ctx.memo:
            ctx.memo[key] = await retrieve()
        return ctx.memo[key]


def render_case(number: int, case: ChampionCase) -> str:
    facts = [f"similarity {case.score:.2f}"]
    if case.tokens:
        facts.append(f"cost {case.tokens:,} tokens")
    if case.feedback > 0:
        facts.append("rated helpful")
    parts = [f"### Case {number} ({', '.join(facts)})", f"Question: {case.query}"]
    if case.plan:
        parts.append(f"Plan:\n{case.plan}")
    if case.answer:
        parts.append(f"Answer:\n{case.answer}")
    return "\n".join(parts)


def _shortened_best(block: str, budget: int, tokens: TokenCounter) -> list[str]:
    """The best case cut at a sentence end to fit; nothing if not even its question survives."""
    room = budget - tokens.count(HEADER) - 1
    while room > 0:
        cut = cut_to_tokens(block, room, tokens)
        if "\nQuestion: " not in cut:
            return []
        if tokens.count(joined(HEADER, [cut])) <= budget:
            return [cut]
        room -= 1
    return []
