"""document_context: the session's uploaded documents, text already extracted.

Character limits first (options ``per_file_chars`` 20,000 and ``total_chars`` 50,000): a longer
document sends the parts that match the turn's question (paragraph groups ranked by BM25 through the
relevance engine, packed best first into the allowance, shown in document order with "[…]" where parts
were left out, and a visible "[Document excerpted: …]" marker); when no part shares a word with the
question it is cut at a paragraph or sentence end with a "[Document truncated …]" marker, as before.
Documents beyond the total are named in an "omitted" note. Then the token budget: when the
documents do not fit, each gets a fair token share (small ones keep all they need) and sends the parts
that match the question within it (else its opening, cut at a paragraph or sentence end). Placement is
"system": documents are stable within a session, so they belong in the provider's cached prefix (a long
document's excerpt follows the question, so that part of the prefix changes when the question does). Cuts
are cached per session (``purge`` forgets them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from components.context_window.base import (
    AssemblyContext,
    ContextModule,
    Contribution,
    Document,
    ModuleManifest,
    TokenCounter,
    joined,
    text_contribution,
)
from components.context_window.fitting import cut_to_chars, cut_to_tokens, estimator, fit_blocks, water_fill
from components.context_window.options import option
from components.context_window.relevance import BM25Index, fuse, pack
from components.context_window.session_cache import SessionCache

from .options import DocumentOptions

HEADER = "## Documents attached to this session"
PER_FILE_CHARS = DocumentOptions().per_file_chars
TOTAL_CHARS = DocumentOptions().total_chars
MIN_USEFUL_CHARS = 500
"""A document that would get less than this (and is longer) is omitted rather than shown as a stub."""
PART_CHARS = 1_200
"""Paragraphs are grouped into parts of about this many characters: the unit an excerpt keeps or leaves out."""
GAP = "[…]"
SHARE_STEP = 32
"""Token shares are rounded down to this step, so a budget that drifts by a few tokens between turns
gives the same cut: the system prefix stays byte-identical and provider prompt caches keep hitting."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """A document within the character limits: what is kept of it and how long it was."""

    doc: Document
    text: str
    query: str = ""

    @property
    def title(self) -> str:
        return f"### Document: {self.doc.name}"

    def block(self, body: str | None = None) -> str:
        body = self.text if body is None else body
        parts = [self.title, body]
        if len(body) < len(self.doc.text):
            shown, whole = len(body), len(self.doc.text)
            if body.endswith(GAP) or body.startswith(GAP) or f"\n\n{GAP}\n\n" in body:
                parts.append(
                    f"[Document excerpted: the parts that match the question, {shown:,} of {whole:,} characters; "
                    f"{GAP} marks what was left out]"
                )
            else:
                parts.append(f"[Document truncated: showing the first {shown:,} of {whole:,} characters]")
        return "\n".join(parts)

    def cut_block(self, max_tokens: int, tokens: TokenCounter) -> str:
        """The block within ``max_tokens``: the parts that match the question, else the body cut at a paragraph
        or sentence end; "" if nothing fits."""
        frame = tokens.count(self.block(GAP)) - 1  # title and marker (its numbers are at most this long)
        room = max_tokens - frame - 2
        while room > 0:
            body = excerpt(self.doc.text, self.query, room, tokens.count) or cut_to_tokens(self.text, room, tokens)
            if not body:
                return ""
            block = self.block(body)
            if tokens.count(block) <= max_tokens:
                return block
            room -= max(1, tokens.count(block) - max_tokens)
        return ""


class DocumentContextModule(ContextModule):
    options_model = DocumentOptions

    def __init__(self, manifest: ModuleManifest) -> None:
        super().__init__(manifest)
        self._cache: SessionCache[Any] = SessionCache(max_entries=512)
        self._last: dict[str, Any] = {}

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        docs = ctx.session.documents
        if not docs:
            return self._done(budget, [], {"reason": "no documents attached"}, "empty")
        per_file = option(ctx.directives.config, "per_file_chars", PER_FILE_CHARS, minimum=1)
        total = option(ctx.directives.config, "total_chars", TOTAL_CHARS, minimum=1)
        # The question matters only to documents over the per-file limit (their excerpt follows it).
        query = ctx.query if any(len(d.text) > per_file for d in docs) else ""
        key = ("limits", per_file, total, tuple((d.id, d.name, d.text) for d in docs), query)  # by content
        prepared, omitted = self._cache.get_or_compute(
            ctx.session.id, key, lambda: within_char_limits(docs, per_file, total, ctx.query)
        )
        note = omitted_note(omitted, total)
        tokens = estimator(ctx)
        blocks = [p.block() for p in prepared] + ([note] if note else [])
        strategy = "truncated" if note or any(len(p.text) < len(p.doc.text) for p in prepared) else "full"
        if tokens.count(joined(HEADER, blocks)) > budget:
            blocks, strategy = self._cut_to_budget(prepared, note, budget, tokens, ctx.session.id), "cut_to_budget"
        shown = {b.split("\n", 1)[0] for b in blocks}
        meta = {
            "documents": len(docs),
            "included": sum(1 for p in prepared if p.title in shown),
            "truncated": sum(1 for b in blocks if "\n[Document truncated: " in b),
            "excerpted": sum(1 for b in blocks if "\n[Document excerpted: " in b),
            "omitted": [d.name for d in omitted],
            "dropped_for_budget": [p.doc.name for p in prepared if p.title not in shown],
        }
        if not blocks:
            meta["reason"] = f"{budget} tokens cannot hold the header and a useful part of any document"
        return self._done(budget, blocks, meta, strategy if blocks else "empty")

    async def purge(self, session_id: str, user_id: str) -> dict[str, Any]:
        return {"purged": self._cache.purge(session_id)}

    def get_status(self) -> dict[str, Any]:
        return super().get_status() | {"cache": self._cache.stats(), "last": dict(self._last)}

    def _cut_to_budget(
        self, prepared: list[Prepared], note: str, budget: int, tokens: TokenCounter, session_id: str
    ) -> list[str]:
        """Each document cut to a fair token share; the omitted note (if any) keeps its place at the end."""
        reserve = tokens.count(HEADER) + 1 + (tokens.count(note) + 1 if note else 0) + len(prepared)
        needs = [tokens.count(p.block()) for p in prepared]
        for slack in (0, 8, 32):  # joins can cost a token or two more than the parts: retry a little tighter
            shares = [_stable(s, n) for s, n in zip(water_fill(needs, budget - reserve - slack), needs, strict=True)]
            blocks = [
                p.block() if share >= need else self._cached_cut(p, share, tokens, session_id)
                for p, share, need in zip(prepared, shares, needs, strict=True)
            ]
            blocks = [b for b in blocks if b] + ([note] if note else [])
            if tokens.count(joined(HEADER, blocks)) <= budget:
                return blocks
        return fit_blocks(blocks, budget, tokens, HEADER)

    def _cached_cut(self, p: Prepared, share: int, tokens: TokenCounter, session_id: str) -> str:
        key = ("cut", p.doc.id, p.doc.name, p.doc.text, len(p.text), share, tokens, p.query)
        return self._cache.get_or_compute(session_id, key, lambda: p.cut_block(share, tokens))

    def _done(self, budget: int, blocks: list[str], meta: dict[str, Any], strategy: str) -> Contribution:
        self._last = meta | {"budget": budget, "strategy": strategy}
        return text_contribution(
            self.module_id, blocks, placement="system", strategy=strategy, metadata=meta, header=HEADER
        )


def _stable(share: int, need: int) -> int:
    """A share rounded down to SHARE_STEP when it cuts the document (small shares are left alone)."""
    return share if share >= need or share < 2 * SHARE_STEP else share - share % SHARE_STEP


def within_char_limits(
    docs: Sequence[Document], per_file: int, total: int, query: str = ""
) -> tuple[list[Prepared], list[Document]]:
    """Documents in upload order, each within ``per_file`` and all together within ``total`` characters: a
    longer one sends the parts that match ``query`` (else its opening)."""
    prepared: list[Prepared] = []
    omitted: list[Document] = []
    left = total
    for doc in docs:
        allowance = min(per_file, left)
        text = ""
        if allowance > 0:
            fits = len(doc.text) <= allowance
            text = doc.text if fits else excerpt(doc.text, query, allowance, len) or cut_to_chars(doc.text, allowance)
        if left < min(len(doc.text), MIN_USEFUL_CHARS) or (doc.text.strip() and not text.strip()):
            omitted.append(doc)
            continue
        prepared.append(Prepared(doc, text, query))
        left -= len(text)
    return prepared, omitted


def parts_of(text: str, size: int = PART_CHARS) -> list[str]:
    """Consecutive paragraphs grouped into parts of about ``size`` characters (a longer paragraph is a part
    of its own, cut at sentence ends): what an excerpt keeps or leaves out whole."""
    parts: list[str] = []
    current = ""
    for paragraph in (p.strip() for p in text.split("\n\n")):
        if not paragraph:
            continue
        while len(paragraph) > 2 * size:  # a wall of text: cut at a sentence end near ``size``
            head = cut_to_chars(paragraph, size)
            parts, current = [*parts, current] if current else parts, ""
            parts.append(head)
            paragraph = paragraph[len(head) :].strip()
        if current and len(current) + len(paragraph) > size:
            parts.append(current)
            current = ""
        current = f"{current}\n\n{paragraph}" if current else paragraph
    if current:
        parts.append(current)
    return parts


def excerpt(text: str, query: str, room: int, cost: Callable[[str], int]) -> str:
    """The parts of ``text`` that match ``query`` (BM25, best first, skipping one that does not fit), then the
    parts nearest to them, within ``room`` as measured by ``cost``, in document order with GAP where parts were
    left out; "" when no part shares a word with the query (the caller falls back to the opening)."""
    parts = parts_of(text)
    if not query.strip() or len(parts) < 2:
        return ""
    ranking = fuse(lexical=BM25Index(parts).scores(query))
    if not len(ranking):
        return ""
    matching = ranking.positions.tolist()
    # The room the matching parts leave goes to their context: the parts nearest to them first.
    rest = sorted(set(range(len(parts))) - set(matching), key=lambda i: (min(abs(i - m) for m in matching), i))
    gap = cost(GAP) + 2
    chosen = sorted(pack([*matching, *rest], [cost(p) + gap + 2 for p in parts], room - gap).chosen)
    pieces: list[str] = []
    for n, i in enumerate(chosen):
        if (i > 0 and n == 0) or (n > 0 and i != chosen[n - 1] + 1):
            pieces.append(GAP)
        pieces.append(parts[i])
    if chosen and chosen[-1] < len(parts) - 1:
        pieces.append(GAP)
    return "\n\n".join(pieces)


def omitted_note(omitted: list[Document], total: int) -> str:
    if not omitted:
        return ""
    names = ", ".join(f"{d.name} ({len(d.text):,} characters)" for d in omitted)
    return f"[Documents omitted: the total limit of {total:,} characters was reached before {names}]"
