"""knowledge_context: knowledge-base passages as numbered, citable sources within the module's budget.

One turn: (reformulate a follow-up into a standalone query) -> retrieve -> drop duplicate text ->
merge adjacent hits of one document -> spend the budget best first, where hits compete with the
neighbouring chunks of strong hits (worth their hit's score, decayed by distance) and all
expansions share ONE total limit. Condensing drops the weakest sources first, then narrows the
windows, then trims the last source at a sentence."""

from __future__ import annotations

import dataclasses
import logging
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from components.context_window.base import (
    AssemblyContext,
    ContextModule,
    Contribution,
    Message,
    Passage,
    joined,
    newest_first,
)
from components.context_window.fitting import estimator
from components.context_window.phases import visible
from components.context_window.token_estimator import TokenEstimator

log = logging.getLogger(__name__)

HEADER = "Knowledge base excerpts. Cite them as [SOURCE n]; sources of one document may continue each other."
REFORMULATE_INSTRUCTION = (
    "Rewrite the follow-up question as one standalone search query for a knowledge base, resolving "
    "pronouns and references from the conversation. Reply with the query only."
)
_MAX_CACHED_PLANS = 256
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True, slots=True)
class Options:
    k: int = 6
    min_score: float = 0.0
    collections: tuple[str, ...] = ()
    max_expansion: int = 4
    """Neighbouring chunks added in total, over all hits together (never per hit or per side)."""
    expand_ratio: float = 0.8
    """Only hits scoring at least this share of the best hit are widened."""
    neighbour_decay: float = 0.85
    """A neighbour competes for budget with its hit's score times this, per chunk of distance."""
    reformulate: bool = True
    history_messages: int = 3

    @classmethod
    def from_context(cls, ctx: AssemblyContext) -> Options:
        cfg: Mapping[str, Any] = ctx.directives.config
        collections = cfg.get("collections") or ctx.profile.knowledge_collections
        d = cls()
        return cls(
            k=max(1, int(cfg.get("k", d.k))),
            min_score=float(cfg.get("min_score", d.min_score)),
            collections=tuple(collections),
            max_expansion=max(0, int(cfg.get("max_expansion", d.max_expansion))),
            expand_ratio=float(cfg.get("expand_ratio", d.expand_ratio)),
            neighbour_decay=float(cfg.get("neighbour_decay", d.neighbour_decay)),
            reformulate=bool(cfg.get("reformulate", d.reformulate)),
            history_messages=max(1, int(cfg.get("history_messages", d.history_messages))),
        )


def _key(p: Passage) -> tuple[str, str, int]:
    return (p.collection, p.document_id, p.chunk_index)


@dataclass(frozen=True)
class Source:
    """One numbered source: the best hit and a contiguous window of chunks of its document."""

    hit: Passage
    chunks: tuple[Passage, ...]
    """In chunk order; includes the hit, merged adjacent hits and expansion neighbours."""
    expanded: frozenset[int] = frozenset()
    """Chunk indices that were added as neighbours (removable when narrowing)."""

    @property
    def score(self) -> float:
        return self.hit.score

    def covers(self, p: Passage) -> bool:
        return any(_key(c) == _key(p) for c in self.chunks)

    def adjacent(self, p: Passage) -> bool:
        same_doc = (p.collection, p.document_id) == (self.hit.collection, self.hit.document_id)
        return same_doc and any(abs(c.chunk_index - p.chunk_index) == 1 for c in self.chunks)

    def with_chunk(self, p: Passage, *, neighbour: bool) -> Source:
        chunks = tuple(sorted((*self.chunks, p), key=lambda c: c.chunk_index))
        expanded = self.expanded | {p.chunk_index} if neighbour else self.expanded
        return Source(self.hit, chunks, expanded)

    def merged(self, other: Source) -> Source:
        """This window continued by another hit's chunks (they stay hits: never narrowed away)."""
        chunks = tuple(
            sorted({_key(c): c for c in (*self.chunks, *other.chunks)}.values(), key=lambda c: c.chunk_index)
        )
        return Source(self.hit, chunks, self.expanded)

    def narrowed(self) -> Source | None:
        """Without its farthest neighbour at either end of the window (it stays contiguous), or None."""
        ends = [c.chunk_index for c in (self.chunks[0], self.chunks[-1]) if c.chunk_index in self.expanded]
        if not ends:
            return None
        far = max(ends, key=lambda i: (abs(i - self.hit.chunk_index), i))
        chunks = tuple(c for c in self.chunks if c.chunk_index != far)
        return Source(self.hit, chunks, self.expanded - {far})

    def label(self) -> str:
        where = _where(self.hit.title or self.hit.document_id, self.hit.section)
        pages = sorted({c.page for c in self.chunks if c.page is not None} | _page_ends(self.chunks))
        if pages:
            where += f" (p. {pages[0]})" if pages[0] == pages[-1] else f" (pp. {pages[0]}–{pages[-1]})"
        return where

    @cached_property
    def text(self) -> str:
        """``body()`` computed once per source (packing measures the same source many times)."""
        return self.body()

    def body(self) -> str:
        parts: list[str] = []
        previous: Passage | None = None
        for chunk in self.chunks:
            text = chunk.text
            if previous is not None:
                if previous.chunk_index == chunk.chunk_index - 1:
                    text = text[_overlap(previous.text, text) :].lstrip()
                if chunk.section != previous.section and chunk.section:
                    text = f"§ {chunk.section}\n{text}"
            if text:
                parts.append(text)
            previous = chunk
        return "\n".join(parts)


def _where(title: str, section: str) -> str:
    """``title › section``, without repeating a title that is also the section path's first heading."""
    if section == title:
        section = ""
    elif section.startswith(f"{title} › "):
        section = section[len(title) + 3 :]
    return f"{title} › {section}" if section else title


def _page_ends(chunks: Sequence[Passage]) -> set[int]:
    return {int(c.metadata["page_end"]) for c in chunks if c.metadata.get("page_end") is not None}


def _overlap(before: str, after: str, minimum: int = 20) -> int:
    """Length of the longest suffix of ``before`` that starts ``after`` (chunk overlap), else 0."""
    probe = after[:minimum]
    if len(probe) < minimum:
        return 0
    start = before.find(probe)
    best = 0
    while start != -1:
        tail = before[start:]
        if after.startswith(tail):
            best = max(best, len(tail))
        start = before.find(probe, start + 1)
    return best


@dataclass
class Plan:
    query: str
    retrieval_query: str
    sources: list[Source] = field(default_factory=list)
    trimmed: str | None = None
    """When only part of the single remaining source fits: its text, cut at a sentence boundary."""


class KnowledgeContextModule(ContextModule):
    def __init__(self, manifest: Any) -> None:
        super().__init__(manifest)
        self._plans: OrderedDict[tuple[str, int, str], Plan] = OrderedDict()

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        if ctx.knowledge is None:
            return self._empty("no knowledge retriever configured")
        if budget <= 0:
            return self._empty("no budget")
        opts = Options.from_context(ctx)
        tokens = estimator(ctx)
        retrieval_query = await self._retrieval_query(ctx, opts)
        hits = await ctx.knowledge.retrieve(
            retrieval_query, collections=opts.collections, k=opts.k, min_score=opts.min_score
        )
        plan = Plan(ctx.query, retrieval_query)
        groups = _group(dedupe_text(hits))
        plan.sources = _pack(groups, await self._neighbours(groups, ctx, opts), budget, tokens, opts)
        plan = _shrink(plan, budget, tokens)
        self._remember(ctx, plan)
        return self._render(plan, strategy="full", retrieved=len(hits))

    async def condense(self, contribution: Contribution, target_tokens: int, ctx: AssemblyContext) -> Contribution:
        plan = self._plans.get(_plan_key(ctx))
        if plan is None:  # not ours, or evicted: retrieve again at the smaller budget
            return await self.contribute(target_tokens, ctx)
        smaller = _shrink(dataclasses.replace(plan, sources=list(plan.sources)), target_tokens, estimator(ctx))
        self._remember(ctx, smaller)
        return self._render(smaller, strategy="condensed", retrieved=contribution.metadata.get("retrieved", 0))

    async def purge(self, session_id: str, user_id: str) -> dict[str, Any]:
        doomed = [key for key in self._plans if key[0] == session_id]
        for key in doomed:
            del self._plans[key]
        return {"purged": len(doomed)}

    def get_status(self) -> dict[str, Any]:
        return {**super().get_status(), "cached_plans": len(self._plans)}

    # --- steps ---------------------------------------------------------------------------

    async def _retrieval_query(self, ctx: AssemblyContext, opts: Options) -> str:
        """A follow-up becomes a standalone query through the summarizer; the model still answers ctx.query."""
        if not opts.reformulate or ctx.summarizer is None:
            return ctx.query
        recent = await _recent_exchanges(ctx, opts.history_messages)
        if not recent:
            return ctx.query
        conversation = "\n".join(f"{m.role}: {m.content}" for m in recent)
        try:
            rewritten = await ctx.summarizer.summarize(
                f"{conversation}\n\nFollow-up question: {ctx.query}", max_tokens=64, instruction=REFORMULATE_INSTRUCTION
            )
        except Exception as exc:  # a failing summarizer costs the reformulation, not the turn
            log.warning("knowledge_context: query reformulation failed: %r", exc)
            return ctx.query
        return rewritten.strip() or ctx.query

    async def _neighbours(
        self, groups: Sequence[Source], ctx: AssemblyContext, opts: Options
    ) -> dict[int, list[Passage]]:
        """Neighbouring chunks of the strong hits (those within ``expand_ratio`` of the best)."""
        if opts.max_expansion <= 0 or not groups or ctx.knowledge is None:
            return {}
        strong = opts.expand_ratio * groups[0].score
        nearby: dict[int, list[Passage]] = {}
        for i, source in enumerate(groups):
            if source.score >= strong:
                # At most the shared total per side: the total, not the radius, bounds what is added.
                found = await ctx.knowledge.neighbours(source.hit, before=opts.max_expansion, after=opts.max_expansion)
                nearby[i] = [
                    p for p in found if (p.collection, p.document_id) == (source.hit.collection, source.hit.document_id)
                ]
        return nearby

    def _remember(self, ctx: AssemblyContext, plan: Plan) -> None:
        key = _plan_key(ctx)
        self._plans[key] = plan
        self._plans.move_to_end(key)
        while len(self._plans) > _MAX_CACHED_PLANS:
            self._plans.popitem(last=False)

    def _empty(self, reason: str) -> Contribution:
        return Contribution(
            module_id=self.module_id, placement="context", strategy="empty", metadata={"reason": reason}
        )

    def _render(self, plan: Plan, *, strategy: str, retrieved: int) -> Contribution:
        if not plan.sources:
            empty = self._empty("no passage fits" if retrieved else "no passage found")
            return empty.replace(
                metadata={**empty.metadata, "retrieval_query": plan.retrieval_query, "retrieved": retrieved}
            )
        return Contribution(
            module_id=self.module_id,
            units=tuple((block,) for block in _blocks(plan.sources, plan.trimmed)),
            placement="context",
            header=HEADER,
            strategy=strategy,
            metadata={
                "retrieval_query": plan.retrieval_query,
                "reformulated": plan.retrieval_query != plan.query,
                "retrieved": retrieved,
                "trimmed": plan.trimmed is not None,
                "sources": [
                    {
                        "n": n,
                        "document_id": s.hit.document_id,
                        "collection": s.hit.collection,
                        "section": s.hit.section,
                        "score": round(s.score, 4),
                        "chunks": [c.chunk_index for c in s.chunks],
                        "expanded": sorted(s.expanded),
                    }
                    for n, s in enumerate(plan.sources, start=1)
                ],
            },
        )


# --- pure helpers (the budget arithmetic) ----------------------------------------------------


def _plan_key(ctx: AssemblyContext) -> tuple[str, int, str]:
    return (ctx.session.id, ctx.session.turn_number, ctx.query)


@lru_cache(maxsize=4096)
def _normalised(text: str) -> str:
    """Whitespace-insensitive form of a passage (cached: the same passages come back turn after turn)."""
    return " ".join(text.split())


def dedupe_text(hits: Sequence[Passage]) -> list[Passage]:
    """One passage per distinct text (whitespace-insensitive), keeping the best score; best first."""
    best: dict[str, Passage] = {}
    for p in hits:
        key = _normalised(p.text)
        if key and (key not in best or p.score > best[key].score):
            best[key] = p
    return sorted(best.values(), key=lambda p: -p.score)


def _group(hits: Sequence[Passage]) -> list[Source]:
    """Hits best first; a hit next to an already chosen chunk of its document joins that source."""
    sources: list[Source] = []
    for hit in hits:
        for i, s in enumerate(sources):
            if s.adjacent(hit) and not s.covers(hit):
                sources[i] = s.with_chunk(hit, neighbour=False)
                break
        else:
            sources.append(Source(hit, (hit,)))
    return sources


def _blocks(sources: Sequence[Source], trimmed: str | None = None) -> list[str]:
    blocks = [f"[SOURCE {n}] {s.label()}\n{s.text}" for n, s in enumerate(sources, start=1)]
    if trimmed is not None and blocks:
        blocks[-1] = f"[SOURCE {len(sources)}] {sources[-1].label()}\n{trimmed}"
    return blocks


def _text(sources: Sequence[Source], trimmed: str | None = None) -> str:
    return joined(HEADER, _blocks(sources, trimmed))


def _cost(sources: Sequence[Source], tokens: TokenEstimator, trimmed: str | None = None) -> int:
    return tokens.count(_text(sources, trimmed))


def _estimate(sources: Sequence[Source], tokens: TokenEstimator) -> int:
    """An upper estimate of ``_cost`` from per-part counts, which stay cached from turn to turn.

    Counting the whole text for every candidate would re-tokenise it each time. The "[SOURCE n] "
    prefix and the joins cost about 5 tokens a source, so 6 keeps the estimate at or above the exact
    figure; ``_shrink`` checks the exact count once at the end, so the budget holds either way.
    """
    if not sources:
        return 0
    parts = sum(tokens.count(s.label()) + tokens.count(s.text) + 6 for s in sources)
    return tokens.count(HEADER) + 1 + parts


def _pack(
    groups: Sequence[Source], nearby: Mapping[int, list[Passage]], budget: int, tokens: TokenEstimator, opts: Options
) -> list[Source]:
    """Spend the budget on what is most likely to help, best first: a hit is worth its score, a
    neighbour its hit's score decayed by distance. Hits and neighbours compete for the same tokens;
    neighbours share ONE total (``max_expansion``) and must keep each window contiguous."""
    candidates: list[tuple[float, int, bool, Passage | None]] = [
        (s.score, i, False, None) for i, s in enumerate(groups)
    ]
    for i, passages in nearby.items():
        hit = groups[i].hit
        for p in passages:
            distance = abs(p.chunk_index - hit.chunk_index)
            candidates.append((hit.score * opts.neighbour_decay**distance, i, p.chunk_index < hit.chunk_index, p))
    candidates.sort(key=lambda c: (-c[0], c[1], c[2], c[3].chunk_index if c[3] else -1))  # after before before
    chosen: dict[int, Source] = {}
    left = opts.max_expansion
    for _, i, _, chunk in candidates:
        if chunk is None:
            if any(s.covers(groups[i].hit) for s in chosen.values()):
                continue  # already shown as another hit's neighbour
            # A hit right next to a chosen window continues it rather than opening a new source.
            j = next((j for j, s in chosen.items() if any(s.adjacent(c) for c in groups[i].chunks)), None)
            trial = {**chosen, i: groups[i]} if j is None else {**chosen, j: chosen[j].merged(groups[i])}
        else:
            source = chosen.get(i)
            if (
                left <= 0
                or source is None
                or not source.adjacent(chunk)
                or any(s.covers(chunk) for s in chosen.values())
            ):
                continue
            trial = {**chosen, i: source.with_chunk(chunk, neighbour=True)}
        if _estimate(_in_order(trial), tokens) <= budget:
            chosen = trial
            left -= chunk is not None
    if not chosen and groups:
        return [groups[0]]  # _shrink trims it to fit rather than return nothing
    return _in_order(chosen)


def _in_order(chosen: Mapping[int, Source]) -> list[Source]:
    """Sources in hit-score order (group index), so [SOURCE 1] is the best hit."""
    return [chosen[i] for i in sorted(chosen)]


def _shrink(plan: Plan, budget: int, tokens: TokenEstimator) -> Plan:
    """Fewer sources, then narrower windows, then a sentence-trimmed last source, until within budget."""
    sources = list(plan.sources)
    while sources and _cost(sources, tokens, plan.trimmed) > budget:
        if len(sources) > 1:
            sources.pop()
            continue
        narrower = sources[0].narrowed()
        if narrower is not None:
            sources = [narrower]
            continue
        trimmed = _trim_to_fit(sources, budget, tokens)
        return dataclasses.replace(plan, sources=sources if trimmed else [], trimmed=trimmed)
    return dataclasses.replace(plan, sources=sources)


def _trim_to_fit(sources: list[Source], budget: int, tokens: TokenEstimator) -> str | None:
    """The longest sentence prefix of the single source's text that fits, or None if not one sentence does."""
    sentences = _SENTENCE_END.split(sources[0].body())
    low, high = 0, len(sentences)
    while low < high:  # binary search on the number of sentences kept
        mid = (low + high + 1) // 2
        if _cost(sources, tokens, " ".join(sentences[:mid]) + " …") <= budget:
            low = mid
        else:
            high = mid - 1
    return " ".join(sentences[:low]) + " …" if low else None


async def _recent_exchanges(ctx: AssemblyContext, count: int) -> list[Message]:
    """The last ``count`` user/assistant messages the model would see, oldest first.

    Walks back from the newest message, so the cost does not grow with the length of the session.
    """
    query = ctx.query.strip()
    found: list[Message] = []
    async for _, m in newest_first(ctx.session.message_source()):
        if len(found) >= count:
            break
        if m.role not in ("user", "assistant") or not m.valid or not m.content.strip():
            continue
        if not visible(m.phase, ctx.session.phase):
            continue
        if not found and m.role == "user" and m.content.strip() == query:
            continue  # the current question is already part of the history
        found.append(m)
    return found[::-1]
