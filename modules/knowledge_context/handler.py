"""knowledge_context: knowledge-base passages as numbered, citable sources within the module's budget.

One turn: (rewrite a follow-up into a standalone query, if the profile asks: ``query_rewrite``) -> retrieve ->
drop duplicate text -> pack by parts: the ranked hits go in best first, each whole when it fits, else as a
window of its sentences around the query's words in the room that is left (no budget stays unused while a
ranked hit remains); a hit next to a chosen chunk continues that source. Neighbouring chunks of strong hits
are extras, added nearest first with what is left, under ONE total limit. With a sentence index, windows of the
sentences found across the corpus take most of a small budget and ``window_share`` of a larger one. Condensing packs
the same ranked hits again at the smaller budget."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import re
from collections.abc import Awaitable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, TypeVar, cast

from components.context_window.base import (
    AssemblyContext,
    ContextModule,
    Contribution,
    KnowledgeVocabulary,
    Message,
    Passage,
    SentenceRetriever,
    SentenceWindow,
    TokenCounter,
    joined,
    newest_first,
)
from components.context_window.fitting import clip, estimator, overlap
from components.context_window.metering import labelled
from components.context_window.offload import LARGE, retrieved, run_sized
from components.context_window.phases import visible
from components.context_window.relevance import RRF_K, names_asked
from components.context_window.relevance import terms as stemmed_terms
from components.context_window.session_cache import SessionCache

from .options import KnowledgeOptions
from .unknown_names import asked_names, spellings, unknown_names

T = TypeVar("T")

log = logging.getLogger(__name__)

HEADER = "Knowledge base excerpts. Cite them as [SOURCE n]."
REFORMULATE_INSTRUCTION = (
    "Rewrite the follow-up question as one standalone search query for a knowledge base, resolving "
    "pronouns and references from the conversation. Reply with the query only."
)
REWRITE_MAX_TOKENS = 64
FILTER_MAX_TOKENS = 48
FILTER_INSTRUCTION = (
    "Below are a question and numbered passages from a knowledge base. Reply with the numbers of the "
    "passages that help answer the question, most useful first, separated by commas; nothing else."
)


_DEFAULTS = KnowledgeOptions()


@dataclass(frozen=True, slots=True)
class Options:
    """The options as the handler reads them; the defaults and checks are ``KnowledgeOptions``'."""

    k: int = _DEFAULTS.k
    """The hits packed first, before the neighbours of strong hits; also the least retrieval depth: a larger
    budget retrieves more (one hit per ``depth_tokens``), packed after the neighbours while room is left."""
    depth_tokens: int = _DEFAULTS.depth_tokens
    """Budget tokens per retrieved hit beyond ``k``: depth grows with the budget, so spare room is filled
    from further down the ranking instead of staying empty (at 4,000 tokens: 66 hits, after the floors)."""
    max_depth: int = _DEFAULTS.max_depth
    tail_ratio: float = _DEFAULTS.tail_ratio
    """A hit below the first ``k`` is packed only when its similarity (or BM25 score) is at least this share of the best
    hit's: see ``relevant``."""
    abstain_below: float = _DEFAULTS.abstain_below
    """Send nothing when the best hit's cosine similarity to the query is below this AND the best hit shares
    under half the query's content words: the corpus has no answer, and near misses invite wrong ones. Above 0, also
    at any similarity when the question names what no chunk of the collections holds (``unknown_names``); 0 turns
    both off."""
    min_score: float = _DEFAULTS.min_score
    collections: tuple[str, ...] = ()
    max_expansion: int = _DEFAULTS.max_expansion
    """Neighbouring chunks added in total, over all hits together (never per hit or per side)."""
    expand_ratio: float = _DEFAULTS.expand_ratio
    """Only hits scoring at least this share of the best hit are widened."""
    neighbour_decay: float = _DEFAULTS.neighbour_decay
    """A neighbour competes for budget with its hit's score times this, per chunk of distance."""
    reformulate: bool = _DEFAULTS.reformulate
    """Off: never rewrite a follow-up. On, it rewrites only for profiles with ``query_rewrite`` (one model call)."""
    history_messages: int = _DEFAULTS.history_messages
    llm_filter: bool = _DEFAULTS.llm_filter
    """Retrieve ``filter_pool`` passages and keep the 2 to 10 the model judges relevant (needs a real
    model: without a summarizer the stage is skipped)."""
    filter_pool: int = _DEFAULTS.filter_pool
    sentence_windows: bool = _DEFAULTS.sentence_windows
    """Send windows of sentences found across the corpus by the sentence index (when the retriever has one): when the
    budget cannot hold the first two hits whole and a window, beside the first hit whole when it leaves them room;
    else in ``window_share`` of the budget: see ``pack``."""
    sentence_radius: int = _DEFAULTS.sentence_radius
    chunk_weight: float = _DEFAULTS.chunk_weight
    """How much the rank of the chunk holding a sentence counts beside the sentence's own two rankings."""
    window_share: float = _DEFAULTS.window_share
    """The share of a budget that holds the first two hits whole kept for sentence windows (none below
    ``_SENTENCE_ROOM`` tokens): an answer whose chunk ranks low still reaches a large budget."""

    def depth(self, budget: int) -> int:
        """How many hits to retrieve for ``budget``: never fewer than ``k``, more as the budget grows."""
        return max(self.k, min(self.max_depth, budget // self.depth_tokens))

    @classmethod
    def from_context(cls, ctx: AssemblyContext) -> Options:
        cfg: Mapping[str, Any] = ctx.directives.config
        collections = cfg.get("collections") or ctx.profile.knowledge_collections
        d = cls()
        return cls(
            k=max(1, int(cfg.get("k", d.k))),
            depth_tokens=max(1, int(cfg.get("depth_tokens", d.depth_tokens))),
            max_depth=max(1, int(cfg.get("max_depth", d.max_depth))),
            tail_ratio=float(cfg.get("tail_ratio", d.tail_ratio)),
            abstain_below=float(cfg.get("abstain_below", d.abstain_below)),
            min_score=float(cfg.get("min_score", d.min_score)),
            collections=tuple(collections),
            max_expansion=max(0, int(cfg.get("max_expansion", d.max_expansion))),
            expand_ratio=float(cfg.get("expand_ratio", d.expand_ratio)),
            neighbour_decay=float(cfg.get("neighbour_decay", d.neighbour_decay)),
            reformulate=bool(cfg.get("reformulate", d.reformulate)),
            history_messages=max(1, int(cfg.get("history_messages", d.history_messages))),
            llm_filter=bool(cfg.get("llm_filter", d.llm_filter)),
            filter_pool=max(2, int(cfg.get("filter_pool", d.filter_pool))),
            sentence_windows=bool(cfg.get("sentence_windows", d.sentence_windows)),
            sentence_radius=max(0, int(cfg.get("sentence_radius", d.sentence_radius))),
            chunk_weight=max(0.0, float(cfg.get("chunk_weight", d.chunk_weight))),
            window_share=min(1.0, max(0.0, float(cfg.get("window_share", d.window_share)))),
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
    window: str | None = None
    """When only part of the hit fits: the sentences kept, "…" marking text left out on either side."""

    @property
    def score(self) -> float:
        return self.hit.score

    @cached_property
    def _keys(self) -> frozenset[tuple[str, str, int]]:
        """Its chunks' keys: packing asks of every hit whether a source holds or touches it, many times a turn."""
        return frozenset(_key(c) for c in self.chunks)

    @cached_property
    def _indices(self) -> frozenset[int]:
        return frozenset(c.chunk_index for c in self.chunks)

    def covers(self, p: Passage) -> bool:
        return _key(p) in self._keys

    def adjacent(self, p: Passage) -> bool:
        same_doc = (p.collection, p.document_id) == (self.hit.collection, self.hit.document_id)
        return same_doc and bool({p.chunk_index - 1, p.chunk_index + 1} & self._indices)

    def with_chunk(self, p: Passage, *, neighbour: bool) -> Source:
        chunks = tuple(sorted((*self.chunks, p), key=lambda c: c.chunk_index))
        expanded = self.expanded | {p.chunk_index} if neighbour else self.expanded
        return Source(self.hit, chunks, expanded)

    def merged(self, other: Source) -> Source:
        """This window continued by another hit's chunks (they stay hits: never narrowed away)."""
        chunks = tuple(
            sorted({_key(c): c for c in (*self.chunks, *other.chunks)}.values(), key=lambda c: c.chunk_index)
        )
        return Source(self.hit, chunks, self.expanded | other.expanded)

    def narrowed(self) -> Source | None:
        """Without its farthest neighbour at either end of the window (it stays contiguous), or None."""
        ends = [c.chunk_index for c in (self.chunks[0], self.chunks[-1]) if c.chunk_index in self.expanded]
        if not ends:
            return None
        far = max(ends, key=lambda i: (abs(i - self.hit.chunk_index), i))
        chunks = tuple(c for c in self.chunks if c.chunk_index != far)
        return Source(self.hit, chunks, self.expanded - {far})

    @cached_property
    def label(self) -> str:
        """Where the text comes from; computed once per source, as ``text``."""
        where = _where(self.hit.title or self.hit.document_id, self.hit.section)
        pages = sorted({c.page for c in self.chunks if c.page is not None} | _page_ends(self.chunks))
        if pages:
            where += f" (p. {pages[0]})" if pages[0] == pages[-1] else f" (pp. {pages[0]}–{pages[-1]})"
        return where

    @cached_property
    def text(self) -> str:
        """The window, else ``body()``; computed once per source (packing measures it many times)."""
        return self.window if self.window is not None else self.body()

    def body(self) -> str:
        return "\n".join(self.pieces())

    def pieces(self) -> list[str]:
        """The body's parts, one per chunk: its text without the overlap with the chunk before, under its section's
        heading where the section changes. Each depends on its chunk and the one before alone, so a source widened
        chunk by chunk is counted from the counts of its pieces, kept from trial to trial and turn to turn."""
        parts: list[str] = []
        previous: Passage | None = None
        for chunk in self.chunks:
            text = chunk.text
            if previous is not None:
                if previous.chunk_index == chunk.chunk_index - 1:
                    text = text[overlap(previous.text, text) :].lstrip()
                if chunk.section != previous.section and chunk.section:
                    text = f"§ {chunk.section}\n{text}"
            if text:
                parts.append(text)
            previous = chunk
        return parts


def _where(title: str, section: str) -> str:
    """``title › section``, without repeating a title that is also the section path's first heading."""
    if section == title:
        section = ""
    elif section.startswith(f"{title} › "):
        section = section[len(title) + 3 :]
    return f"{title} › {section}" if section else title


def _page_ends(chunks: Sequence[Passage]) -> set[int]:
    return {int(c.metadata["page_end"]) for c in chunks if c.metadata.get("page_end") is not None}


@dataclass
class Plan:
    query: str
    retrieval_query: str
    ranked: list[Passage] = field(default_factory=list)
    """The retrieved hits, distinct texts, best first: what packing (and condensing) draws from."""
    nearby: dict[tuple[str, str, int], list[Passage]] = field(default_factory=dict)
    """Neighbouring chunks of the strong hits, by hit."""
    sources: list[Source] = field(default_factory=list)
    abstained: str = ""
    """Why nothing is sent although passages were found (the relevance floor), else empty."""


class KnowledgeContextModule(ContextModule):
    options_model = KnowledgeOptions

    def __init__(self, manifest: Any) -> None:
        super().__init__(manifest)
        self._rewrites: SessionCache[str] = SessionCache(1024)
        """The rewritten query of each session's turn: its tool-loop steps search with it, making no new call."""

    async def purge(self, session_id: str, user_id: str) -> dict[str, Any]:
        """Forget a session's rewritten queries."""
        return {"purged": self._rewrites.purge(session_id), "what": "rewritten queries"}

    def get_status(self) -> dict[str, Any]:
        return {**super().get_status(), "cached_rewrites": len(self._rewrites)}

    async def signals(self, ctx: AssemblyContext) -> dict[str, Any]:
        """No signals: the retrieval starts here, in the knowledge provider's own time (a worker thread), while the
        other modules' signals are gathered; ``contribute`` takes its hits. It searches as deep as any budget asks
        (``max_depth``): a shallower retrieval returns the first hits of a deeper one, so the window is the same. The
        sentence index's search starts beside it, rather than after it, on the pack's way (``_sentence_windows``)."""
        opts = Options.from_context(ctx)
        if ctx.knowledge is not None and opts.collections and not self._rewrites_query(ctx, opts):
            key = ("hits", ctx.query, _depth_searched(opts))
            if key not in ctx.memo:
                ctx.memo[key] = _started(self._search(ctx, opts, ctx.query, _depth_searched(opts)))
            if opts.sentence_windows:
                _sentence_search(ctx, ctx.query, opts)
        return {}

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        if ctx.knowledge is None:
            return self._empty("no knowledge retriever configured")
        if budget <= 0:
            return self._empty("no budget")
        opts = Options.from_context(ctx)
        # Retrieved once per assembly, deep enough for the largest budget asked so far: the surplus pass asks
        # again with a larger budget, for the same turn.
        depth = opts.depth(budget)
        retrieval = ctx.memo.get(("retrieval", opts))
        if retrieval is None or retrieval[2] < depth:
            found, retrieved = await self._retrieve(ctx, opts, depth)
            retrieval = ctx.memo[("retrieval", opts)] = (found, retrieved, depth)
        found, retrieved, _ = retrieval
        if found.abstained:
            self._remember(ctx, found)
            return self._abstain(found, retrieved)
        plan = dataclasses.replace(found, sources=await packed(found, budget, ctx, opts))
        self._remember(ctx, plan)
        return self._render(plan, strategy="full", retrieved=retrieved)

    async def condense(self, contribution: Contribution, target_tokens: int, ctx: AssemblyContext) -> Contribution:
        plan = ctx.memo.get("plan")  # this assembly's retrieval: never one from an earlier turn
        if plan is None:  # not ours: retrieve again at the smaller budget
            return await self.contribute(target_tokens, ctx)
        if plan.abstained:
            return self._abstain(plan, contribution.metadata.get("retrieved", 0))
        sources = await packed(plan, target_tokens, ctx, Options.from_context(ctx))
        smaller = dataclasses.replace(plan, sources=sources)
        self._remember(ctx, smaller)
        return self._render(smaller, strategy="condensed", retrieved=contribution.metadata.get("retrieved", 0))

    # --- steps ---------------------------------------------------------------------------

    async def _retrieve(self, ctx: AssemblyContext, opts: Options, depth: int) -> tuple[Plan, int]:
        """What packing draws from (no sources chosen yet), and how many hits the retriever returned."""
        assert ctx.knowledge is not None
        retrieval_query = await self._retrieval_query(ctx, opts)
        judge = labelled(ctx.summarizer, "llm_filter") if opts.llm_filter and ctx.summarizer else None
        k = opts.filter_pool if judge else depth  # the model judges a fixed pool
        started = ctx.memo.get(("hits", retrieval_query, _depth_searched(opts)))
        if started is not None and _depth_searched(opts) >= k:
            hits = (await started)[:k]  # started while the signals were gathered
        else:
            hits = await self._search(ctx, opts, retrieval_query, k)
        ranked = dedupe_text(hits)
        reason = unanswerable(ranked, retrieval_query, opts.abstain_below) or await _never_mentioned(
            ctx, ranked, retrieval_query, opts
        )
        if reason:
            return Plan(ctx.query, retrieval_query, abstained=reason), len(hits)
        ranked = relevant(ranked, opts)
        if judge is not None and ranked:
            ranked = await _judged(ranked, retrieval_query, judge)
        return Plan(ctx.query, retrieval_query, ranked, await self._neighbours(ranked, ctx, opts)), len(hits)

    @staticmethod
    async def _search(ctx: AssemblyContext, opts: Options, query: str, k: int) -> list[Passage]:
        assert ctx.knowledge is not None
        return await ctx.knowledge.retrieve(query, collections=opts.collections, k=k, min_score=opts.min_score)

    @staticmethod
    def _rewrites_query(ctx: AssemblyContext, opts: Options) -> bool:
        """Whether the turn's query may be rewritten before retrieval (a model call: nothing to start early)."""
        return bool(ctx.profile.query_rewrite and opts.reformulate and opts.collections) and ctx.summarizer is not None

    async def _retrieval_query(self, ctx: AssemblyContext, opts: Options) -> str:
        """A follow-up becomes a standalone query through the summarizer, when the profile asks for it (a model
        call before the answer's: it costs tokens and time) and there is a collection to search; the model still
        answers ctx.query. At most one call a turn: the turn's tool-loop steps reuse its rewrite."""
        if not (ctx.profile.query_rewrite and opts.reformulate and opts.collections) or ctx.summarizer is None:
            return ctx.query
        turn = (ctx.session.turn_number, ctx.query)
        if ctx.continuation:
            return self._rewrites.get((ctx.session.id, turn)) or ctx.query
        recent = await _recent_exchanges(ctx, opts.history_messages)
        if not recent:
            return ctx.query
        conversation = "\n".join(f"{m.role}: {m.content}" for m in recent)
        try:
            rewritten = await labelled(ctx.summarizer, "query_rewrite").summarize(
                f"{conversation}\n\nFollow-up question: {ctx.query}",
                max_tokens=REWRITE_MAX_TOKENS,
                instruction=REFORMULATE_INSTRUCTION,
            )
        except Exception as exc:  # a failing summarizer costs the reformulation, not the turn
            log.warning("knowledge_context: query reformulation failed: %r", exc)
            return ctx.query
        query = rewritten.strip() or ctx.query
        self._rewrites.put((ctx.session.id, turn), query)
        return query

    async def _neighbours(
        self, ranked: Sequence[Passage], ctx: AssemblyContext, opts: Options
    ) -> dict[tuple[str, str, int], list[Passage]]:
        """Neighbouring chunks of the strong hits among the first ``k`` (those within ``expand_ratio`` of the best)."""
        if opts.max_expansion <= 0 or not ranked or ctx.knowledge is None:
            return {}
        strong = opts.expand_ratio * ranked[0].score
        nearby: dict[tuple[str, str, int], list[Passage]] = {}
        for hit in ranked[: opts.k]:  # only the first k are widened (deeper hits are packed after the neighbours)
            if hit.score >= strong:
                # At most the shared total per side: the total, not the radius, bounds what is added.
                found = await ctx.knowledge.neighbours(hit, before=opts.max_expansion, after=opts.max_expansion)
                same = (hit.collection, hit.document_id)
                nearby[_key(hit)] = [p for p in found if (p.collection, p.document_id) == same]
        return nearby

    def _remember(self, ctx: AssemblyContext, plan: Plan) -> None:
        ctx.memo["plan"] = plan

    def _empty(self, reason: str) -> Contribution:
        return Contribution(
            module_id=self.module_id, placement="context", strategy="empty", metadata={"reason": reason}
        )

    def _abstain(self, plan: Plan, retrieved: int) -> Contribution:
        empty = self._empty(plan.abstained)
        meta = {**empty.metadata, "abstained": True, "retrieval_query": plan.retrieval_query, "retrieved": retrieved}
        return empty.replace(metadata=meta)

    def _render(self, plan: Plan, *, strategy: str, retrieved: int) -> Contribution:
        if not plan.sources:
            empty = self._empty("no passage fits" if retrieved else "no passage found")
            return empty.replace(
                metadata={**empty.metadata, "retrieval_query": plan.retrieval_query, "retrieved": retrieved}
            )
        return Contribution(
            module_id=self.module_id,
            units=tuple((block,) for block in _blocks(plan.sources)),
            placement="context",
            header=HEADER,
            strategy=strategy,
            metadata={
                "retrieval_query": plan.retrieval_query,
                "reformulated": plan.retrieval_query != plan.query,
                "retrieved": retrieved,
                "trimmed": any(s.window is not None for s in plan.sources),
                "sources": [
                    {
                        "n": n,
                        "document_id": s.hit.document_id,
                        "collection": s.hit.collection,
                        "title": s.hit.title,
                        "section": s.hit.section,
                        "score": round(s.score, 4),
                        "chunks": [c.chunk_index for c in s.chunks],
                        "expanded": sorted(s.expanded),
                        "window": s.window is not None,
                    }
                    for n, s in enumerate(plan.sources, start=1)
                ],
            },
        )


_KEEP_AT_LEAST, _KEEP_AT_MOST = 2, 10


def _depth_searched(opts: Options) -> int:
    """The depth retrieval started early searches: the most any budget asks for (or the model filter's pool)."""
    return max(opts.k, opts.max_depth, opts.filter_pool if opts.llm_filter else 0)


def _started(search: Awaitable[T]) -> asyncio.Future[T]:
    """A search started early, which a contribution may never await (no budget came): its failure is not an error."""
    found = asyncio.ensure_future(search)
    found.add_done_callback(retrieved)
    return found


async def _judged(ranked: list[Passage], query: str, judge: Any) -> list[Passage]:
    """The passages the model judges relevant, in retrieval order: at least 2 (the best ranked fill
    up), at most 10. A failing or unreadable answer keeps the retrieval order."""
    listing = "\n\n".join(f"[{n}] {clip(p.text, 700)}" for n, p in enumerate(ranked, start=1))
    try:
        reply = await judge.summarize(
            f"Question: {query}\n\nPassages:\n{listing}", max_tokens=FILTER_MAX_TOKENS, instruction=FILTER_INSTRUCTION
        )
    except Exception as exc:  # the filter costs its own stage, never the turn
        log.warning("knowledge_context: relevance filter failed: %r", exc)
        return ranked
    picked = {int(n) - 1 for n in re.findall(r"\d+", reply) if 0 < int(n) <= len(ranked)}
    if not picked and not re.search(r"\bnone\b", reply, re.IGNORECASE):
        return ranked  # not an answer to the question asked
    kept = [p for i, p in enumerate(ranked) if i in picked][:_KEEP_AT_MOST]
    for p in ranked:
        if len(kept) >= _KEEP_AT_LEAST:
            break
        if p not in kept:
            kept.append(p)
    return sorted(kept, key=ranked.index)


# --- pure helpers (the budget arithmetic) ----------------------------------------------------


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


def unanswerable(ranked: Sequence[Passage], query: str, floor: float) -> str:
    """Why no passage should be sent (the relevance floor), or "" to send them.

    Both signals must fail: the best hit's cosine similarity to the query (the retriever's ``dense_score``,
    else its score) is below ``floor``, and no hit among the first few holds half the query's content words.
    One signal alone would abstain on answerable questions worded away from their answer (low cosine) or
    answered by a passage that shares few words with them (no lexical match). The words do not rescue a
    question naming what no hit mentions: "the capital of Mongolia" matched a page saying "capitalised"."""
    if floor <= 0 or not ranked:
        return ""
    similarity = max(float(p.metadata.get("dense_score", p.score)) for p in ranked)
    if similarity >= floor:
        return ""
    if unknown := _names_unmentioned(query, ranked):
        return f"nothing relevant found: no passage mentions {unknown} (best similarity {similarity:.2f} < {floor:.2f})"
    terms = query_terms(query)
    overlap = max((len(terms & query_terms(p.text + " " + p.section + " " + p.title)) for p in ranked[:5]), default=0)
    if terms and overlap * 2 >= len(terms):
        return ""
    return (
        f"nothing relevant found: no passage is relevant enough (best similarity {similarity:.2f} < {floor:.2f}, "
        f"at most {overlap} of the query's {len(terms)} content words in a top passage)"
    )


async def _never_mentioned(ctx: AssemblyContext, ranked: Sequence[Passage], query: str, opts: Options) -> str:
    """Why no passage should be sent at any similarity: the question names what no chunk of the collections holds
    (``unknown_names``), or "" (abstention off, no hit, or a retriever that cannot say which words it holds)."""
    if opts.abstain_below <= 0 or not ranked or not isinstance(ctx.knowledge, KnowledgeVocabulary):
        return ""
    names = asked_names(query)
    if not names:
        return ""
    held = await ctx.knowledge.held_words([s for n in names for s in spellings(n)], collections=opts.collections)
    unknown = unknown_names(names, held)
    return f"nothing relevant found: the knowledge base never mentions {', '.join(unknown)}" if unknown else ""


def _names_unmentioned(query: str, ranked: Sequence[Passage]) -> str:
    """The first name the query asks about that no retrieved passage mentions ("" if none): BM25 brings back a
    passage holding a name the collection has, so a name none of the hits holds is one the collection lacks."""
    names = names_asked(query)
    if not names:
        return ""
    texts = " ".join(f"{p.text} {p.section} {p.title}" for p in ranked).lower()
    return next((name for name in names if name.lower() not in texts), "")


def relevant(ranked: Sequence[Passage], opts: Options) -> list[Passage]:
    """The first ``k`` hits, then those further down that are still near the best by either signal: a cosine
    similarity at least ``tail_ratio`` of the best hit's, or a BM25 score at least ``tail_ratio`` of the best lexical
    hit's. A large budget is not filled with whatever the retrieval's depth brought back (the demo's one-line question
    got 11K tokens of excerpts, the first about signing in to the admin UI): the room goes to modules that can use it,
    or stays unused and cheap."""
    if opts.tail_ratio <= 0 or len(ranked) <= opts.k:
        return list(ranked)
    dense = [float(p.metadata.get("dense_score", p.score)) for p in ranked]
    lexical = [float(p.metadata.get("lexical_score", 0.0)) for p in ranked]
    best_dense, best_lexical = max(dense), max(lexical)
    return [
        p
        for i, p in enumerate(ranked)
        if i < opts.k
        or dense[i] >= opts.tail_ratio * best_dense
        or (best_lexical > 0 and lexical[i] >= opts.tail_ratio * best_lexical)
    ]


def _blocks(sources: Sequence[Source]) -> list[str]:
    return [f"[SOURCE {n}] {s.label}\n{s.text}" for n, s in enumerate(sources, start=1)]


def _text(sources: Sequence[Source]) -> str:
    return joined(HEADER, _blocks(sources))


def _cost(sources: Sequence[Source], tokens: TokenCounter) -> int:
    return tokens.count(_text(sources))


def _estimate(sources: Sequence[Source], tokens: TokenCounter) -> int:
    """An upper estimate of ``_cost`` from per-part counts, which stay cached from turn to turn.

    Counting the whole text for every candidate would re-tokenise it each time. The "[SOURCE n] "
    prefix and the joins cost about 5 tokens a source, so 6 keeps the estimate at or above the exact
    figure; ``pack`` checks the exact count once at the end, so the budget holds either way.
    """
    if not sources:
        return 0
    return tokens.count(HEADER) + 1 + sum(_part(s, tokens) for s in sources)


def _part(source: Source, tokens: TokenCounter) -> int:
    """A source's share of ``_estimate``, kept on it: a pack's trials estimate the same sources again and again. A
    whole source's text by its pieces (a join's token each): counting every widened text anew was most of a pack's
    time (tiktoken ~75 ms of 143 over the demo's cold packs)."""
    kept = source.__dict__.get("_part")  # as cached_property keeps its values (the dataclass is frozen)
    if kept is None or kept[0] is not tokens:
        if source.window is None:
            pieces = source.pieces()
            text = sum(tokens.count(piece) for piece in pieces) + max(len(pieces) - 1, 0)
        else:
            text = tokens.count(source.text)
        kept = source.__dict__["_part"] = (tokens, tokens.count(source.label) + text + 6)
    return int(kept[1])


_MIN_WINDOW = 12
"""Tokens below which the room left is not worth a window (a label and a sentence fragment)."""


async def packed(plan: Plan, budget: int, ctx: AssemblyContext, opts: Options) -> list[Source]:
    """``pack``, through the offload runner when the hits are long: stemming their words and counting the windows'
    sentences and the widened sources held the event loop up to 22 ms of a demo turn (~1 ms per 2,500 characters
    of hits); the same sources, off the loop. When the budget cannot hold the first two hits whole and a window,
    sentence windows from the sentence index when there is one."""
    tokens = estimator(ctx)
    hits = [*plan.ranked, *(p for near in plan.nearby.values() for p in near)]
    size = sum(len(p.text) for p in hits) * LARGE // 2_500
    windows = await _sentence_windows(plan, ctx, opts) if wants_sentences(plan, opts) else []
    size += len(windows) * _WINDOW_WORK
    return await run_sized(ctx.offload, size, lambda: pack(plan, budget, tokens, opts, windows))


def wants_sentences(plan: Plan, opts: Options) -> bool:
    """Whether sentence windows found across the corpus take part: at every budget, when the option is on (a small
    budget is mostly windows, a larger one gives them ``window_share`` of it; see ``pack``)."""
    return opts.sentence_windows and bool(plan.ranked)


def _small(plan: Plan, budget: int, tokens: TokenCounter) -> bool:
    """Whether the budget is too small for the first two hits whole and a sentence window beside them
    (``_SENTENCE_ROOM``): then sentence windows found across the corpus answer more questions than windows of the first
    hits do (300 and 500 tokens; see docs/knowledge.md). Two short hits that fit with less room than that left no
    room for any window, the share (``window_share``) being under a window's room too."""
    return _estimate([Source(p, (p,)) for p in plan.ranked[:2]], tokens) + _SENTENCE_ROOM > budget


_WINDOW_WORK = 30
"""A sentence window's trial in ``sentence_sources`` costs ~30 us, as much as 30 of ``run_sized``'s items: 100 windows
(~3 ms) are packed off the event loop."""

_SENTENCE_ROOM = 100
"""Tokens the sentence windows need beside the first hit for it to be sent whole (a window of three sentences and its
label cost ~70): with less, every source is a sentence window."""


async def _sentence_windows(plan: Plan, ctx: AssemblyContext, opts: Options) -> list[SentenceWindow]:
    """The sentence index's windows for the query (once per assembly; none when the retriever has no index)."""
    found = _sentence_search(ctx, plan.retrieval_query, opts)
    return [] if found is None else list(await found)


def _sentence_search(ctx: AssemblyContext, query: str, opts: Options) -> asyncio.Future[list[SentenceWindow]] | None:
    """The sentence index's search for ``query``, started once per assembly (None: the retriever has none)."""
    if not isinstance(ctx.knowledge, SentenceRetriever):
        return None
    key = ("sentences", query, opts.collections, opts.sentence_radius)
    if key not in ctx.memo:
        ctx.memo[key] = _started(
            ctx.knowledge.sentence_windows(query, collections=opts.collections, radius=opts.sentence_radius)
        )
    return cast("asyncio.Future[list[SentenceWindow]]", ctx.memo[key])


def sentence_sources(
    windows: Sequence[SentenceWindow],
    ranked: Sequence[Passage],
    budget: int,
    tokens: TokenCounter,
    opts: Options,
    chosen: Sequence[Source] = (),
) -> list[Source]:
    """Sentence windows best first while they fit, windows of one document that overlap or touch merged. Three
    rankings take turns (``_interleaved``): the windows by their sentence's fused score plus ``chunk_weight`` times
    the chunk ranking's reciprocal rank of the chunk holding it (the chunk's rank keeps to the passages the whole
    ranking favours), by the fused score alone (the sentence's own signals find answers in chunks that rank low), and
    by the sentence's similarity to the query alone (see ``_interleaved``). The sentences ``chosen`` shows already are
    not sent again (``_unshown``), nor a neighbour longer than a tenth of the budget (``_short_neighbours``)."""
    chunk_rank = {_key(p): r for r, p in enumerate(ranked, start=1)}

    def worth(w: SentenceWindow) -> float:
        rank = chunk_rank.get((w.collection, w.document_id, w.chunk_index))
        return w.score + (opts.chunk_weight * (RRF_K + 1) / (RRF_K + rank) if rank else 0.0)

    whole = list(chosen)
    spans: list[_Span] = []
    total = _estimate(whole, tokens) if whole else tokens.count(HEADER) + 1
    by_worth = sorted(windows, key=lambda w: -worth(w))
    by_meaning = sorted(windows, key=lambda w: -w.similarity)
    shown = "\n".join(_normalised(s.text) for s in whole)  # a sentence (normalised) holds no line break
    longest = budget // _NEIGHBOUR_SHARE
    for found in _interleaved(by_worth, windows, by_meaning):
        window = _unshown(found, shown)
        if window is None:
            continue  # shown whole already
        window = _short_neighbours(window, tokens, longest)
        n = next((n for n, span in enumerate(spans) if span.touches(window)), len(spans))
        span = spans[n].joined(window) if n < len(spans) else _Span.of(window)
        rest = total - (spans[n].cost(tokens) if n < len(spans) else 0)
        if rest + span.least(tokens) > budget:
            continue  # too long by its sentences' counts alone
        cost = rest + span.cost(tokens)
        if cost <= budget:
            spans, total = [*spans[:n], span, *spans[n + 1 :]], cost
    return [*whole, *(_span_source(span) for span in spans)]


_NEIGHBOUR_SHARE = 10
"""A window's neighbour sentences are sent when each costs at most this fraction of the budget (30 tokens at 300)."""


def _short_neighbours(window: SentenceWindow, tokens: TokenCounter, longest: int) -> SentenceWindow:
    """``window`` without its neighbours from the first one longer than ``longest`` tokens outwards. Where three or
    four windows fit (300 tokens), one long neighbour (a table row, a paragraph of a man page, a code listing) made a
    window of 150-200 tokens and left room for one more; merged with the windows of its document beside it, it pushed
    the answer's window out (SQLite, sysdocs and the manuals at 300 tokens: the answer's window ranked 2nd-9th)."""
    at = window.position - window.first
    low, high = at, at + 1
    while low > 0 and tokens.count(window.sentences[low - 1]) <= longest:
        low -= 1
    while high < len(window.sentences) and tokens.count(window.sentences[high]) <= longest:
        high += 1
    if (low, high) == (0, len(window.sentences)):
        return window
    return dataclasses.replace(window, first=window.first + low, sentences=window.sentences[low:high])


def _unshown(window: SentenceWindow, shown: str) -> SentenceWindow | None:
    """``window`` without the sentences at its ends that the sources already show (``shown``: their texts, normalised,
    one a line); None when they show them all. A chunk sent whole may end at the sentence found and the answer be the
    next one, in the next chunk: dropping the window because its sentence was shown lost it (prose at 4,000 tokens,
    sysdocs at 300). Any source counts, not only the window's document's: man pages repeat lines word for word."""
    held = [_normalised(t) in shown for t in window.sentences]
    low, high = 0, len(held)
    while low < high and held[low]:
        low += 1
    while high > low and held[high - 1]:
        high -= 1
    if low >= high:
        return None
    if (low, high) == (0, len(held)):
        return window
    position = min(max(window.position, window.first + low), window.first + high - 1)
    return dataclasses.replace(
        window, first=window.first + low, position=position, sentences=window.sentences[low:high]
    )


def _interleaved(*orders: Sequence[SentenceWindow]) -> list[SentenceWindow]:
    """The rankings' windows taken in turn, each once: the first's best, the second's, the third's, then each one's
    second, and so on. No one ranking finds every answer. In a collection whose chunks hold many unrelated entries (a
    dictionary, a list of elements) a chunk's rank says little about its sentences, and the chunk weight pushed the
    sentence ranking's first windows out of a small budget. And reciprocal-rank fusion buries the sentence nearest in
    meaning when it shares no word with the question (an answer worded away from it): every sentence both signals rank
    middling comes first (on the prose corpus, six answers first or second by meaning came 5th-56th after fusion)."""
    return list(dict.fromkeys(w for turn in zip(*orders, strict=True) for w in turn))


@dataclass(frozen=True)
class _Span:
    """Consecutive sentences of one document, as one source: the window that found them first names it."""

    found: SentenceWindow
    sentences: tuple[tuple[int, str], ...]
    """(position, text), in document order."""

    @classmethod
    def of(cls, w: SentenceWindow) -> _Span:
        return cls(w, tuple(enumerate(w.sentences, start=w.first)))

    def touches(self, w: SentenceWindow) -> bool:
        same = (w.collection, w.document_id) == (self.found.collection, self.found.document_id)
        first, last = self.sentences[0][0], self.sentences[-1][0]
        return same and w.first <= last + 1 and first <= w.first + len(w.sentences)

    def joined(self, w: SentenceWindow) -> _Span:
        merged = dict(self.sentences) | dict(enumerate(w.sentences, start=w.first))
        return _Span(self.found, tuple(sorted(merged.items())))

    @cached_property
    def label(self) -> str:
        """The document's title alone: a window is a few short sentences, and a section path ("Write-Ahead Logging ›
        2. How WAL Works › 2.2. Concurrency") cost a quarter of one at 300 tokens, where three or four windows fit."""
        return self.found.title or self.found.document_id

    @cached_property
    def text(self) -> str:
        return " ".join(t for _, t in self.sentences)

    def cost(self, tokens: TokenCounter) -> int:
        """Its share of ``_estimate``, as a source's (``_part``)."""
        return tokens.count(self.label) + tokens.count(self.text) + 6

    def least(self, tokens: TokenCounter) -> int:
        """A lower estimate of ``cost`` from its sentences' counts (the module counts them first, in a worker thread
        when they are many): a pack tries ~100 windows, and counting each trial's text held the event loop ~10 ms at
        300 tokens; only the windows that may fit are counted whole."""
        return tokens.count(self.label) + sum(tokens.count(t) - 1 for _, t in self.sentences) + 6


def _span_source(span: _Span) -> Source:
    """A span as a source: a window of its document's sentences."""
    w = span.found
    text = span.text
    hit = Passage(
        text=text,
        score=w.score,
        document_id=w.document_id,
        title=w.title,
        section="",  # labelled by its title alone (``_Span.label``)
        chunk_index=w.chunk_index,
        collection=w.collection,
    )
    return Source(hit, (hit,), window=text)


def pack(
    plan: Plan, budget: int, tokens: TokenCounter, opts: Options, windows: Sequence[SentenceWindow] = ()
) -> list[Source]:
    """The sources for ``budget``: the first ``k`` ranked hits best first (whole, else a window of the best
    part in the room left), then neighbours of strong hits, then the hits further down the ranking while
    room is left (the retrieval's depth grows with the budget, so a large budget is not left half empty).
    With sentence ``windows``: when the budget cannot hold the first two hits whole and a window (``_small``), those,
    beside the first hit whole when it leaves them room; else the hits in all but ``window_share`` of the budget and
    windows in the rest, when that is room for one (``_SENTENCE_ROOM``)."""
    if windows and _small(plan, budget, tokens):
        first = [Source(plan.ranked[0], (plan.ranked[0],))]
        whole = first if _estimate(first, tokens) + _SENTENCE_ROOM <= budget else []
        return fitted(sentence_sources(windows, plan.ranked, budget, tokens, opts, whole), budget, tokens)
    share = int(budget * opts.window_share) if windows else 0
    room = budget - share if share >= _SENTENCE_ROOM else budget
    weights = _term_weights(plan.retrieval_query, plan.ranked)
    chosen = _taken(plan.ranked[: opts.k], [], room, tokens, weights)
    chosen = _widen(chosen, plan.nearby, room, tokens, opts)
    chosen = _taken(plan.ranked[opts.k :], chosen, room, tokens, weights)
    if room < budget:  # the windows take the share, not the room the hits' floor left unused (``relevant``)
        limit = min(budget, (_estimate(chosen, tokens) if chosen else 0) + share)
        chosen = sentence_sources(windows, plan.ranked, limit, tokens, opts, chosen)
    return fitted(chosen, budget, tokens)


def fitted(chosen: list[Source], budget: int, tokens: TokenCounter) -> list[Source]:
    """``chosen`` narrowed until its exact count fits ``budget``."""
    while chosen and _cost(chosen, tokens) > budget:  # the estimate is an upper bound: a safety net
        narrower = chosen[-1].narrowed()
        chosen = _replaced(chosen, len(chosen) - 1, narrower) if narrower else chosen[:-1]
    return chosen


def _taken(
    hits: Sequence[Passage], chosen: list[Source], budget: int, tokens: TokenCounter, weights: Mapping[str, float]
) -> list[Source]:
    """``chosen`` and then ``hits`` in rank order: each whole when it fits, else a window in the room left."""
    for hit in hits:
        if any(s.covers(hit) for s in chosen):
            continue  # already shown as part of another hit's source
        # A hit right next to a chosen (whole) chunk continues that source rather than opening a new one.
        j = next((j for j, s in enumerate(chosen) if s.window is None and s.adjacent(hit)), None)
        if j is None:
            trial = [*chosen, Source(hit, (hit,))]
        else:
            trial = _replaced(chosen, j, chosen[j].with_chunk(hit, neighbour=False))
        if _estimate(trial, tokens) <= budget:
            chosen = trial
            continue
        room = budget - _estimate([*chosen, Source(hit, (hit,), window="")], tokens)
        window = _window(hit.text, weights, room, tokens) if room >= _MIN_WINDOW else None
        if window is not None:
            chosen = [*chosen, Source(hit, (hit,), window=window)]
    return chosen


def _replaced(sources: Sequence[Source], i: int, source: Source) -> list[Source]:
    return [*sources[:i], source, *sources[i + 1 :]]


def _widen(
    chosen: list[Source],
    nearby: Mapping[tuple[str, str, int], list[Passage]],
    budget: int,
    tokens: TokenCounter,
    opts: Options,
) -> list[Source]:
    """Neighbours of the chosen strong hits, each worth its hit's score decayed by distance, best first,
    while they fit: ONE total (``max_expansion``) for all hits, and every window stays contiguous."""
    left = opts.max_expansion
    while left > 0:
        for i, chunk in _neighbour_candidates(chosen, nearby, opts):
            if not chosen[i].adjacent(chunk) or any(s.covers(chunk) for s in chosen):
                continue  # not yet adjacent (a nearer neighbour must come first), or already shown
            trial = _coalesced(_replaced(chosen, i, chosen[i].with_chunk(chunk, neighbour=True)), i)
            if _estimate(trial, tokens) <= budget:
                chosen, left = trial, left - 1
                break  # the sources changed: rank the candidates again
        else:
            break
    return chosen


def _neighbour_candidates(
    chosen: Sequence[Source], nearby: Mapping[tuple[str, str, int], list[Passage]], opts: Options
) -> list[tuple[int, Passage]]:
    """(source index, neighbour) best first: its hit's score decayed by distance; at equal worth, the
    stronger source, then after before before."""
    ranked: list[tuple[float, int, bool, int, Passage]] = []
    for i, source in enumerate(chosen):
        if source.window is not None:
            continue
        for p in nearby.get(_key(source.hit), ()):
            distance = abs(p.chunk_index - source.hit.chunk_index)
            before = p.chunk_index < source.hit.chunk_index
            ranked.append((source.score * opts.neighbour_decay**distance, i, before, p.chunk_index, p))
    ranked.sort(key=lambda c: (-c[0], c[1], c[2], c[3]))
    return [(i, p) for _, i, _, _, p in ranked]


def _coalesced(sources: list[Source], i: int) -> list[Source]:
    """Source ``i`` absorbs a later whole source it now touches (a neighbour closed the gap between two hits)."""
    for k in range(i + 1, len(sources)):
        later = sources[k]
        if later.window is None and any(sources[i].adjacent(c) for c in later.chunks):
            merged = _replaced(sources, i, sources[i].merged(later))
            return merged[:k] + merged[k + 1 :]
    return sources


_TERM = re.compile(r"[^\W_]+")
_STOPWORDS = frozenset(
    "about after also and are because been before but can could did does doing for from had has have how "
    "into its may might more most must not of one only other over same should since some such than that "
    "the their them then there these they this those through under was were what when where which while "
    "who whom why will with would you your".split()
)


@lru_cache(maxsize=4096)
def query_terms(text: str) -> frozenset[str]:
    """Content words of ``text``, cut to 6 letters (a crude stem: "grows" and "growing" meet); by content, as the
    same top passages come back turn after turn."""
    return frozenset(w[:6] for w in _TERM.findall(text.lower()) if len(w) > 2 and w not in _STOPWORDS)


_BOUNDARY = re.compile(r"(?<=[.!?])\s+|\n+")


def _spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence or line of ``text``."""
    spans, pos = [], 0
    for m in _BOUNDARY.finditer(text):
        if m.start() > pos:
            spans.append((pos, m.start()))
        pos = m.end()
    if pos < len(text):
        spans.append((pos, len(text)))
    return spans


@lru_cache(maxsize=1024)
def _sentences(text: str) -> tuple[tuple[tuple[int, int], ...], tuple[frozenset[str], ...]]:
    """The sentences of a passage and the content words of each, by content: hits recur from turn to turn."""
    spans = tuple(_spans(text))
    return spans, tuple(frozenset(stemmed_terms(text[a:b])) for a, b in spans)


@lru_cache(maxsize=1024)
def _term_set(text: str) -> frozenset[str]:
    """A passage's stemmed words, by content (stemming 40-80 hits each pack took ~2 ms: hits recur)."""
    return frozenset(stemmed_terms(text))


def _term_weights(query: str, ranked: Sequence[Passage]) -> dict[str, float]:
    """The query's stemmed words, each weighted by how rare it is among the ranked hits (an idf over them): a
    window is chosen for the words that tell the hits apart, not for the ones every hit shares."""
    wanted = set(stemmed_terms(query))
    held = [_term_set(p.text) & wanted for p in ranked]
    return {t: math.log(1 + (len(ranked) + 1) / (sum(t in h for h in held) + 0.5)) for t in wanted}


def _window(text: str, weights: Mapping[str, float], room: int, tokens: TokenCounter) -> str | None:
    """The run of whole sentences of ``text`` within ``room`` tokens that holds most of the query's
    words (the earliest such run), "…" marking what was left out; None if not one sentence fits."""
    spans, words = _sentences(text)
    costs = [tokens.count(text[a:b]) + 1 for a, b in spans]
    gains = [sum(weights.get(w, 0.0) for w in sentence) for sentence in words]
    limit = room - 4  # the "…" marks on either side
    best: tuple[float, int, int] | None = None
    low, cost, gain = 0, 0, 0.0
    for high in range(len(spans)):
        cost, gain = cost + costs[high], gain + gains[high]
        while cost > limit and low <= high:
            cost, gain, low = cost - costs[low], gain - gains[low], low + 1
        if low <= high and (best is None or gain > best[0] + 1e-9):  # float sums: the earliest of equals
            best = (gain, low, high)
    if best is None:
        return None
    _, low, high = best
    body = text[spans[low][0] : spans[high][1]]
    return ("… " if low > 0 else "") + body + (" …" if high < len(spans) - 1 else "")


async def _recent_exchanges(ctx: AssemblyContext, count: int) -> list[Message]:
    """The last ``count`` user/assistant messages the model would see, oldest first.

    Walks back from the newest message, so the cost does not grow with the length of the session.
    """
    query = ctx.query.strip()
    found: list[Message] = []
    async with aclosing(newest_first(ctx.session.message_source())) as messages:
        async for _, m in messages:
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
