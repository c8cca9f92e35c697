"""tool_definitions: keeps every tool callable whenever the budget allows.

Levels, richest first:

* ``full``: every schema as written, in the profile's order (stable, so provider prompt caches hit);
* ``condensed``: every tool still callable; all schemas condensed (first sentence of the description,
  no parameter descriptions), then the most relevant tools upgraded back to full while room remains;
* ``partial``: the most relevant tools as schemas (condensed, upgraded to full where room remains), the
  rest listed by name only; the snapshot names the tools left without a schema;
* ``names_only``: a text list, the last resort.

Full schemas go out on every turn when they fit. Relevance is lexical (BM25 over each tool's name and
description against the query and the recent turns, with tools called recently ranked up) plus, when
the context brings an ``embedder``, cosine similarity of the same texts. The opt-in slot config
``"after_first_turn": "names_only"`` sends names only once the model has seen the schemas in the valid
history; purging the session's memory invalidates that history, so full schemas come back.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any
from weakref import WeakKeyDictionary

from components.context_window.base import (
    AssemblyContext,
    ContextModule,
    Contribution,
    ModuleManifest,
    TokenCounter,
    ToolSchema,
    newest_first,
    thaw,
)
from components.context_window.fitting import first_sentence
from components.context_window.session_cache import BoundedCache

from .options import LEVELS, ToolOptions

NAMES_HEADER = "Available tools:"
PARTIAL_HEADER = "Also available (no schema sent this turn; ask for one of these by name if you need it):"
RECENT_MESSAGES = 6
"""How many of the newest messages count as "recent turns" for relevance."""
SEEN_SCAN = 200
"""How far back the opt-in names-only mode looks for a valid message (a long purged history is not read)."""
_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
STOPWORDS = frozenset(
    "a an and are as at be by can do for from get give how i in is it me my of on or our please set show "
    "some that the this to us was we what when where which who will with you your".split()
)


ANNOTATIONS = frozenset({"description", "title", "examples", "$comment"})
"""Schema keywords that only explain (JSON Schema's annotations, ``default`` aside: it changes what a call may
omit). Condensing drops them where they are keywords, never a property that happens to have such a name."""
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
"""Keywords whose value maps names (property names, definition names) to schemas."""
_SCHEMAS = frozenset(
    {"items", "additionalItems", "additionalProperties", "unevaluatedItems", "unevaluatedProperties", "contains"}
    | {"propertyNames", "not", "if", "then", "else", "anyOf", "oneOf", "allOf", "prefixItems"}
)

"""Keywords whose value is a schema or a list of schemas."""


def _strip_descriptions(schema: Any) -> Any:
    """The parameter schema without its annotations (``ANNOTATIONS``), walked as a JSON Schema: keywords are
    told from names, so a property called ``description`` or ``title`` stays, with everything ``required``
    and every type, enum, default and constraint."""
    if not isinstance(schema, Mapping):
        return thaw(schema)  # true/false schemas, and whatever a hand-written schema holds
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ANNOTATIONS:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {name: _strip_descriptions(sub) for name, sub in value.items()}
        elif key in _SCHEMAS:
            out[key] = (
                [_strip_descriptions(v) for v in value]
                if isinstance(value, list | tuple)
                else (_strip_descriptions(value))
            )
        elif key == "dependencies" and isinstance(value, Mapping):  # draft 7: a schema or a list of names each
            out[key] = {name: _strip_descriptions(sub) for name, sub in value.items()}
        else:
            out[key] = thaw(value)  # data (enum, const, default, required): as written
    return out


_condensed: BoundedCache[ToolSchema, ToolSchema] = BoundedCache(4096)
"""By tool object: a ToolSchema is frozen and hashed by identity, and the key holds it, so the object is its
content. A plain dict lookup (a weak-keyed one builds a weak reference per lookup, ~200 lookups a turn)."""


def condensed(tool: ToolSchema) -> ToolSchema:
    """The condensed schema of ``tool`` (still callable: name and parameters), built once per tool object."""
    small = _condensed.get(tool)
    if small is None:
        small = _condensed.put(
            tool, ToolSchema(tool.name, first_sentence(tool.description, 160), _strip_descriptions(tool.parameters))
        )
    return small


def name_line(tool: ToolSchema) -> str:
    return f"- {tool.name}"


def cost(contribution: Contribution, tokens: TokenCounter) -> int:
    """Tokens as the orchestrator counts them: each schema, plus the text block as one message."""
    text = contribution.text()
    return tokens.count_tools(contribution.tool_schemas()) + (tokens.count_text_message(text) if text else 0)


# --- relevance --------------------------------------------------------------------------------------


def terms(text: str) -> list[str]:
    """Lower-case words; ``snake_case`` and ``camelCase`` names split into their parts."""
    text = _CAMEL.sub(" ", text).replace("_", " ").lower()
    return [w[:-1] if len(w) > 3 and w.endswith("s") else w for w in _WORD.findall(text) if w not in STOPWORDS]


@lru_cache(maxsize=4096)
def message_terms(text: str) -> Mapping[str, int]:
    """``terms`` of a recent message counted, by content: consecutive turns rank against mostly the same
    messages. Read-only (shared between turns)."""
    return MappingProxyType(Counter(terms(text)))


def tool_text(tool: ToolSchema) -> str:
    return f"{tool.name} {tool.description}"


def tool_terms(tool: ToolSchema) -> Counter[str]:
    """The words of a tool's name and description."""
    return Counter(terms(tool_text(tool)))


@dataclass(frozen=True)
class _Index:
    """A tool list's words for BM25: per word, its idf and the tools holding it as (position, term weight).
    Built once per tool list: a turn then visits only the query's words, not every tool's."""

    postings: Mapping[str, tuple[float, tuple[tuple[int, float], ...]]]


_indexes: BoundedCache[tuple[ToolSchema, ...], _Index] = BoundedCache(256)
"""By the tuple of tool objects (frozen, held by the key: the objects are their content)."""


def _index(tools: Sequence[ToolSchema]) -> _Index:
    key = tuple(tools)
    index = _indexes.get(key)
    if index is None:
        docs = [tool_terms(t) for t in tools]
        n, lengths = len(docs), [sum(d.values()) for d in docs]
        avg_len = sum(lengths) / n or 1.0
        found: dict[str, list[tuple[int, float]]] = {}
        for i, (d, length) in enumerate(zip(docs, lengths, strict=True)):
            norm = 1.2 * (0.25 + 0.75 * length / avg_len)  # a tool has a few words; the query has many
            for w, tf in d.items():
                found.setdefault(w, []).append((i, tf * 2.2 / (tf + norm)))
        idf = {w: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for w, p in found.items()}
        index = _indexes.put(key, _Index({w: (idf[w], tuple(p)) for w, p in found.items()}))
    return index


def lexical_scores(tools: Sequence[ToolSchema], query_terms: Mapping[str, float]) -> list[float]:
    """BM25 of each tool's name and description against weighted query terms, scaled to 0..1."""
    if not tools or not query_terms:
        return [0.0] * len(tools)
    postings = _index(tools).postings
    scores = [0.0] * len(tools)
    for w in sorted(query_terms.keys() & postings.keys()):  # only query words score; a fixed order
        idf, found = postings[w]
        weight = query_terms[w] * idf
        for i, term_weight in found:
            scores[i] += weight * term_weight
    top = max(scores)
    return [s / top if top > 0 else 0.0 for s in scores]


def query_weights(query: str, recent_texts: Sequence[str]) -> dict[str, float]:
    """The query's words (1 each) and the recent messages' words (0.5 each: the query counts more)."""
    weights: dict[str, float] = dict(Counter(terms(query)))
    for text in recent_texts:
        for word, n in message_terms(text).items():
            weights[word] = weights.get(word, 0) + 0.5 * n
    return weights


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


async def recent(ctx: AssemblyContext) -> tuple[list[str], set[str]]:
    """The newest valid messages' texts, and the names of tools they called (reads only the newest page)."""
    texts: list[str] = []
    called: set[str] = set()
    seen = 0
    async with aclosing(newest_first(ctx.session.message_source())) as messages:
        async for _, message in messages:
            seen += 1
            if len(texts) == RECENT_MESSAGES or seen > 4 * RECENT_MESSAGES:
                break
            if not message.valid:
                continue
            if message.role in ("user", "assistant") and message.content:
                texts.append(message.content)
            called.update(str((c.get("function") or {}).get("name", "")) for c in message.tool_calls)
    return texts, called


async def schemas_in_history(ctx: AssemblyContext) -> bool:
    """Whether the valid history shows the model has had the tools (a purge invalidates it: full again)."""
    async with aclosing(newest_first(ctx.session.message_source())) as messages:
        async for position, message in messages:
            if message.valid:
                return True
            if ctx.session.message_source().total - position > SEEN_SCAN:
                return False
    return False


class ToolDefinitionsModule(ContextModule):
    options_model = ToolOptions

    def __init__(self, manifest: ModuleManifest) -> None:
        super().__init__(manifest)
        self._vectors: WeakKeyDictionary[Any, BoundedCache[str, list[float]]] = WeakKeyDictionary()
        """Embeddings of tool texts by text, per embedder (held weakly: a new embedder never sees another's
        vectors): a tool is embedded once, not every turn."""
        self._last: dict[str, Any] = {}

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        tools = list(ctx.tools)
        if ctx.tools_as_sent:
            reason = "the client's own tools are sent as it sent them, with its query"
            return Contribution(self.module_id, placement="tools", strategy="as_sent", metadata={"reason": reason})
        if not tools:
            return Contribution(self.module_id, placement="tools", strategy="none")
        return await self._fit(tools, budget, ctx, LEVELS.index(await self._starting_level(ctx)))

    async def condense(self, contribution: Contribution, target_tokens: int, ctx: AssemblyContext) -> Contribution:
        """One level down (``partial`` may stay ``partial`` with fewer schemas)."""
        level = contribution.metadata.get("level", "full")
        if level not in LEVELS:
            level = "full"
        next_level = LEVELS.index(level) if level == "partial" else min(LEVELS.index(level) + 1, len(LEVELS) - 1)
        return await self._fit(list(ctx.tools), target_tokens, ctx, next_level)

    async def purge(self, session_id: str, user_id: str) -> dict[str, Any]:
        """Nothing per session is kept: full schemas return on the next turn whenever they fit."""
        return {"purged": 0, "what": "nothing per session; full schemas are sent whenever they fit"}

    def get_status(self) -> dict[str, Any]:
        return {
            **super().get_status(),
            "embedded_tools": sum(len(c) for c in self._vectors.values()),
            "last": dict(self._last),
        }

    async def _starting_level(self, ctx: AssemblyContext) -> str:
        if ctx.directives.force_full:
            return "full"
        after = ctx.directives.config.get("after_first_turn", "full")
        if after not in LEVELS:
            raise ValueError(f"option 'after_first_turn' must be one of {', '.join(LEVELS)}, got {after!r}")
        return after if after != "full" and await schemas_in_history(ctx) else "full"

    # -- fitting -------------------------------------------------------------------------------

    async def _fit(self, tools: list[ToolSchema], budget: int, ctx: AssemblyContext, first: int) -> Contribution:
        assert ctx.tokens is not None
        tokens = ctx.tokens
        if first == 0 and tokens.count_tools(tools) <= budget:
            return self._made(tools, tools, [], "full", ranking="")
        if first == len(LEVELS) - 1:
            return self._names_only(tools, budget, tokens)
        ranked, method = await self._ranked(tools, ctx)
        if first <= 1 and tokens.count_tools([condensed(t) for t in tools]) <= budget:
            schemas = self._upgrade(ranked, {id(t): condensed(t) for t in tools}, budget, tokens)
            made = self._made(tools, [schemas[id(t)] for t in tools], [], "condensed", method)
            if cost(made, tokens) <= budget:  # the upgrades are priced tool by tool; the set is checked whole
                return made
        chosen = self._partial(tools, ranked, budget, tokens)
        while chosen:
            sent = [chosen[id(t)] for t in tools if id(t) in chosen]
            rest = [t for t in ranked if id(t) not in chosen]  # best first: what to ask for is on top
            made = self._made(tools, sent, rest, "partial", method)
            if cost(made, tokens) <= budget:
                return made
            del chosen[next(id(t) for t in reversed(ranked) if id(t) in chosen)]  # the list's estimate was short
        return self._names_only(ranked, budget, tokens)

    def _upgrade(
        self, ranked: Sequence[ToolSchema], chosen: dict[int, ToolSchema], budget: int, tokens: TokenCounter
    ) -> dict[int, ToolSchema]:
        """Best-ranked first, swap a chosen condensed schema for the full one while the total stays in budget."""
        used = tokens.count_tools(list(chosen.values()))
        for tool in ranked:
            if id(tool) not in chosen:
                continue
            extra = tokens.count_tool(tool) - tokens.count_tool(chosen[id(tool)])
            if used + extra <= budget:
                chosen[id(tool)] = tool
                used += extra
        return chosen

    def _partial(
        self, tools: Sequence[ToolSchema], ranked: Sequence[ToolSchema], budget: int, tokens: TokenCounter
    ) -> dict[int, ToolSchema]:
        """Schemas for the best-ranked tools (by ``id`` of the tool) leaving room to list the rest by name."""
        names_cost = tokens.count_text_message(PARTIAL_HEADER) + sum(tokens.count(name_line(t)) + 1 for t in tools)
        room = budget - names_cost
        chosen: dict[int, ToolSchema] = {}
        used = tokens.tools_overhead  # the definitions block's fixed cost, paid once any schema is sent
        for tool in ranked:
            cost = tokens.count_tool(condensed(tool))
            if used + cost > room:
                break
            chosen[id(tool)] = condensed(tool)
            used += cost
        return self._upgrade(ranked, chosen, room, tokens)

    def _made(
        self,
        tools: Sequence[ToolSchema],
        schemas: Sequence[ToolSchema],
        rest: Sequence[ToolSchema],
        level: str,
        ranking: str,
    ) -> Contribution:
        originals = {id(t) for t in tools}
        full = sum(1 for s in schemas if id(s) in originals)
        total = len(tools)
        meta: dict[str, Any] = {
            "level": level,
            "tools": total,
            "included": len(schemas),
            "full_schemas": full,
            "condensed_schemas": len(schemas) - full,
        }
        if ranking:
            meta["ranking"] = ranking
        if rest:
            meta["left_out"] = [t.name for t in rest]
            meta["reason"] = f"{len(rest)} of {total} tools have no schema this turn (budget); listed by name"
        self._last = meta
        lines = tuple((name_line(t),) for t in rest)
        return Contribution(
            self.module_id,
            units=tuple((s,) for s in schemas) + lines,
            placement="tools",
            header=PARTIAL_HEADER if rest else "",
            joiner="\n",
            strategy=level,
            metadata=meta,
        )

    def _names_only(self, tools: Sequence[ToolSchema], budget: int, tokens: TokenCounter) -> Contribution:
        """A text list in the given order; trailing names are dropped if even the list does not fit."""
        lines: list[str] = []
        used = tokens.count_text_message(NAMES_HEADER) + 1  # the message, its header and the newline
        for tool in tools:
            cost = tokens.count(name_line(tool)) + 1  # the joining newline costs about one token
            if used + cost > budget:
                break
            lines.append(name_line(tool))
            used += cost
        meta: dict[str, Any] = {
            "level": "names_only",
            "tools": len(tools),
            "included": 0,
            "listed": len(lines),
            "left_out": [t.name for t in tools],
            "reason": "no schema fits the budget; tools are listed by name only",
        }
        contribution = Contribution(
            self.module_id,
            units=tuple((line,) for line in lines),
            placement="system",
            header=NAMES_HEADER,
            joiner="\n",
            strategy="names_only",
            metadata=meta,
        )
        while contribution.units and tokens.count_text_message(contribution.text()) > budget:
            contribution = contribution.replace(units=contribution.units[:-1])
        meta["listed"] = len(contribution.units)
        if len(contribution.units) < len(tools):
            meta["not_listed"] = [t.name for t in tools[len(contribution.units) :]]
        self._last = meta
        return contribution

    # -- relevance -----------------------------------------------------------------------------

    async def _ranked(self, tools: Sequence[ToolSchema], ctx: AssemblyContext) -> tuple[list[ToolSchema], str]:
        """Tools by relevance to the query and the recent turns, best first; ties keep the profile's order.
        Ranked once per assembly: contribute, the surplus pass and condense rank the same tools for the same turn."""
        if "ranked" not in ctx.memo:
            ctx.memo["ranked"] = await self._rank(tools, ctx)
        ranked, method = ctx.memo["ranked"]
        return list(ranked), method

    async def _rank(self, tools: Sequence[ToolSchema], ctx: AssemblyContext) -> tuple[list[ToolSchema], str]:
        texts, called = await recent(ctx)
        scores = lexical_scores(tools, query_weights(ctx.query, texts))
        method = "lexical"
        similarities = await self._similarities(tools, " ".join([ctx.query, *texts[:2]]), ctx)
        if similarities is not None:
            scores = [s + max(0.0, sim) for s, sim in zip(scores, similarities, strict=True)]
            method = "lexical+embedding"
        # a tool the conversation just used is the likeliest next call (a follow-up rarely repeats its words)
        scores = [s + (1.5 if t.name in called else 0.0) for s, t in zip(scores, tools, strict=True)]
        order = sorted(range(len(tools)), key=lambda i: (-scores[i], i))
        return [tools[i] for i in order], method

    async def _similarities(self, tools: Sequence[ToolSchema], query: str, ctx: AssemblyContext) -> list[float] | None:
        """Cosine of each tool's text with the query, or None without an embedder (or when it fails)."""
        if ctx.embedder is None:
            return None
        cache = self._vector_cache(ctx.embedder)
        texts = [tool_text(t) for t in tools]
        missing = [text for text in dict.fromkeys(texts) if text not in cache]
        try:
            vectors = await ctx.embedder.embed([query, *missing])
        except Exception:  # ranking falls back to words alone; the turn goes on
            return None
        fresh = {text: cache.put(text, list(vector)) for text, vector in zip(missing, vectors[1:], strict=True)}
        return [_cosine(vectors[0], fresh.get(text) or cache.get(text) or []) for text in texts]

    def _vector_cache(self, embedder: Any) -> BoundedCache[str, list[float]]:
        try:
            return self._vectors.setdefault(embedder, BoundedCache(4096))
        except TypeError:  # an embedder that cannot be held weakly: its vectors serve this call only
            return BoundedCache(4096)
