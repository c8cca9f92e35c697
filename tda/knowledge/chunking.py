"""Structure-aware chunking: sections first, then paragraphs and sentences, to a token target.

A chunk never crosses a section boundary and never ends mid-sentence (only a single sentence longer
than the target is cut, at word boundaries). Consecutive chunks of a section share their last
sentence(s) as overlap, so an answer that straddles a boundary is still whole in one chunk.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from itertools import groupby

from components.context_window.fitting import overlap

from .readers import Block, ExtractedDocument, unwrapped

DEFAULT_TARGET_TOKENS = 300
SECTION_SEPARATOR = " › "

Counter = Callable[[str], int]

# A sentence ends at . ! ? (optionally closed by quotes/brackets) followed by space and a capital,
# digit or opening quote; common abbreviations are protected.
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[]?[A-Z0-9])")
_ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|Mr|Mrs|Ms|Dr|Prof|Fig|No|approx|resp)\.$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Chunk:
    text: str
    headings: tuple[str, ...]
    chunk_index: int
    token_count: int
    page_start: int | None = None
    page_end: int | None = None

    @property
    def section(self) -> str:
        return SECTION_SEPARATOR.join(self.headings)

    @property
    def content_hash(self) -> str:
        return content_hash(self.text)


def where_label(title: str, section: str) -> str:
    """``title › section`` for display and embedding, not repeating a title that is also the first heading."""
    if section == title or section.startswith(f"{title}{SECTION_SEPARATOR}"):
        section = section[len(title) :].removeprefix(SECTION_SEPARATOR)
    return SECTION_SEPARATOR.join(x for x in (title, section) if x)


def content_hash(text: str) -> str:
    """Hash of the text with whitespace normalised: the identity used to store identical chunks once."""
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class _Unit:
    """A sentence (or code line group) with the separator that joins it to the unit before it."""

    text: str
    tokens: int
    page: int | None
    joiner: str
    block: int = 0
    """Which block (paragraph, list entry, code block) of the section the unit belongs to."""


def split_sentences(text: str) -> list[str]:
    pieces = _SENTENCE_END.split(text)
    sentences: list[str] = []
    for piece in pieces:
        piece = piece.strip()
        if not piece:
            continue
        if sentences and _ABBREVIATIONS.search(sentences[-1]):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences


def chunk_document(
    doc: ExtractedDocument,
    count: Counter,
    *,
    target_tokens: int = DEFAULT_TARGET_TOKENS,
    overlap_tokens: int | None = None,
) -> list[Chunk]:
    """Chunks of ``doc`` in reading order, numbered from 0. ``count`` counts tokens of a text."""
    if target_tokens < 20:
        raise ValueError("target_tokens must be at least 20")
    overlap = target_tokens // 6 if overlap_tokens is None else overlap_tokens
    chunks: list[Chunk] = []
    for headings, blocks in groupby(doc.blocks, key=lambda b: b.headings):
        units = list(_units(blocks, count, target_tokens))
        for group in _pack(units, target_tokens, overlap):
            text = _join(group)
            pages = [u.page for u in group if u.page is not None]
            chunks.append(
                Chunk(text, headings, len(chunks), count(text), min(pages, default=None), max(pages, default=None))
            )
    return chunks


def _join(units: list[_Unit]) -> str:
    return "".join((u.joiner if i else "") + u.text for i, u in enumerate(units))


def _units(blocks: Iterable[Block], count: Counter, target: int) -> Iterable[_Unit]:
    for number, block in enumerate(blocks):
        joiner = "\n\n"
        pieces = _code_line_groups(block.text, count, target) if block.preformatted else split_sentences(block.text)
        for n, piece in enumerate(pieces):
            for part in _cut_oversized(piece, count, target):
                # Sized as read, sent unwrapped: hard-wrapped text keeps its chunk boundaries and costs less.
                text = unwrapped(part, continued=n > 0, indent=_indent(block.text)) if block.wrapped else part
                yield _Unit(text, count(part), block.page, joiner, number)
                joiner = "\n" if block.preformatted else " "


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


def _code_line_groups(text: str, count: Counter, target: int) -> list[str]:
    """Preformatted text is split between lines, never inside one (unless a line alone is too long)."""
    return _greedy_groups(text.splitlines(), "\n", count, target)


def _cut_oversized(sentence: str, count: Counter, target: int) -> list[str]:
    """A sentence longer than the target is cut at word boundaries: the only mid-sentence split."""
    return [sentence] if count(sentence) <= target else _greedy_groups(sentence.split(" "), " ", count, target)


def _greedy_groups(pieces: list[str], separator: str, count: Counter, target: int) -> list[str]:
    """Join consecutive pieces while the joined text stays within ``target`` tokens."""
    groups: list[str] = []
    current: list[str] = []
    for piece in pieces:
        if current and count(separator.join([*current, piece])) > target:
            groups.append(separator.join(current))
            current = []
        current.append(piece)
    if current:
        groups.append(separator.join(current))
    return groups


def _pack(units: list[_Unit], target: int, overlap: int) -> Iterable[list[_Unit]]:
    """Greedy packing to ``target`` tokens; each new chunk starts with the previous one's tail sentences.

    A chunk does not end with lead-ins (a line ending in ":", a bare term such as an option's name on its own
    line) whose subject follows: they move to the next chunk with it, so a term is never separated from the
    prose that explains it. (Keeping short paragraphs or definition entries whole as well was measured: it
    cost 2 of 56 SQLite questions at 300 and 500 tokens, and 2-3 of 50 on the manuals at 500 and 1,000.)"""
    current: list[_Unit] = []
    carried = 0  # how many leading units of ``current`` are overlap from the previous chunk
    for unit in units:
        if current and _tokens(current) + unit.tokens > target:
            if carried < len(current):
                cut = _cut_point(current, carried, unit, target)
                body, moved = current[:cut], current[cut:]
                yield body
                tail = _tail(body, overlap)
                if moved and _tokens([*tail, *moved]) + unit.tokens > target:
                    tail = []  # what moved matters more than the overlap
                current = [*tail, *moved]
                if current:
                    current[0] = replace(current[0], joiner="")
                carried = len(tail)
            if current and _tokens(current) + unit.tokens > target:
                current, carried = [], 0  # the overlap would push the new chunk over the target
        if not current:
            unit = replace(unit, joiner="")
        current.append(unit)
    if carried < len(current):
        yield current


def _cut_point(current: list[_Unit], carried: int, unit: _Unit, target: int) -> int:
    """Where the chunk ends when ``unit`` does not fit: before the lead-ins that introduce what follows, else
    after everything (the units from there start the next)."""
    last = current[-1]
    start = next(i for i in range(len(current)) if current[i].block == last.block)
    cut = len(current)
    if unit.block != last.block:  # walk back over lead-ins that introduce one another ("Options:", an option's name)
        while cut > carried and _lead_in(current[start:cut]):
            cut, block = start, current[start - 1].block if start else -1
            start = next((i for i in range(cut) if current[i].block == block), cut)
    if cut <= carried or _tokens(current[cut:]) + unit.tokens > target:
        return len(current)
    return cut


_TERMINAL = re.compile(r"[.!?][\"')\]]?$")


def _lead_in(block: list[_Unit]) -> bool:
    """A whole block that introduces the next: ends with ":" (a list's or table's lead-in), or a short line
    without a sentence end (a term, an option name, a table's header)."""
    text = _join(block).rstrip()
    return text.endswith(":") or ("\n" not in text and len(text) <= 80 and not _TERMINAL.search(text))


def _tokens(units: list[_Unit]) -> int:
    return sum(u.tokens for u in units) + len(units) - 1


def _tail(units: list[_Unit], budget: int) -> list[_Unit]:
    """The last sentences of a chunk (at most two) that fit ``budget`` tokens, to start the next chunk."""
    tail: list[_Unit] = []
    for unit in reversed(units[-2:]):
        if _tokens([unit, *tail]) > budget:
            break
        tail.insert(0, unit)
    if tail:
        tail[0] = replace(tail[0], joiner="")
    return tail


# --- the sentence index: every sentence of a document, each in the chunk that holds it --------

_SENTENCE_OR_PARAGRAPH = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
LONGEST_SENTENCE = 600
"""Characters beyond which a "sentence" (a table, a listing, an option list) is split at its lines."""


@dataclass(frozen=True, slots=True)
class Sentence:
    """A sentence of a document as the sentence index keeps it: its place among the document's sentences and the
    chunk that holds it (the first one, where chunks overlap)."""

    text: str
    chunk_index: int
    position: int


def document_sentences(chunks: Iterable[Chunk]) -> list[Sentence]:
    """The sentences of a document's ``chunks`` (in chunk order), each once: the overlap a chunk opens with is the
    previous chunk's, so it is skipped. Sentences end at . ! ? or a blank line; a run longer than
    ``LONGEST_SENTENCE`` characters is split at its lines."""
    out: list[Sentence] = []
    previous = ""
    for chunk in chunks:
        own = chunk.text[overlap(previous, chunk.text) :]
        for text in _sentence_texts(own):
            out.append(Sentence(text, chunk.chunk_index, len(out)))
        previous = chunk.text
    return out


def _sentence_texts(text: str) -> list[str]:
    out: list[str] = []
    for sentence in (s.strip() for s in _SENTENCE_OR_PARAGRAPH.split(text)):
        if len(sentence) > LONGEST_SENTENCE:
            out += [line.strip() for line in sentence.splitlines() if line.strip()]
        elif sentence:
            out.append(sentence)
    return out
