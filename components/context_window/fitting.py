"""Fitting text into a token budget: whole blocks first, then cuts at paragraph or sentence ends.

Counts always come from the estimator the orchestrator enforces the budget with, and every result
is checked against the exact count of the text as it will be sent (tokens of joined blocks can
differ from the sum of their parts by a token or two).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .base import joined

if TYPE_CHECKING:
    from .base import AssemblyContext
    from .base import TokenCounter as TokenEstimator

_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(\s|$)", re.S)
_SENTENCE_OR_PARAGRAPH_END = re.compile(r"[.!?:;\n](?:(?<=\n)|(\s+))")
"""A line break, or the whitespace after ``.!?:;`` (its group: where the sentence ends). Opening with a set of
characters, it is scanned for in C from one to the next: a look-behind tried at every character, as it was written
before, took ~150 us over a 3 KB tool result, about half of the newest turn's cut at 100 gateway turns."""
_WORD_END = re.compile(r"\s+")
LIKELY_CHARS_PER_TOKEN = 8
"""Above this many characters per token of budget, all blocks will not fit: counting them whole would be wasted."""


def fit_blocks(blocks: Sequence[str], budget: int, tokens: TokenEstimator, header: str = "") -> list[str]:
    """The longest prefix of ``blocks`` that fits ``budget`` together with ``header``, counted as the one
    message a text contribution is sent as (its overhead included, as the orchestrator measures it).

    Stops at the first block that does not fit rather than skipping to smaller later ones: callers
    order blocks by importance (best case first, newest turn first), and that order must hold.
    """
    if budget <= 0:
        return []
    whole = joined(header, blocks)
    if len(whole) <= LIKELY_CHARS_PER_TOKEN * budget and tokens.count_text_message(whole) <= budget:
        return list(blocks)  # the usual case: one count of the text as sent, not one per block as well
    kept: list[str] = []
    used = tokens.count_text_message("") + (tokens.count(header) + 1 if header else 0)
    for block in blocks:
        cost = tokens.count(block) + (1 if kept else 0)  # "\n\n" is one token in both encodings
        if used + cost > budget:
            break
        kept.append(block)
        used += cost
    while kept and tokens.count_text_message(joined(header, kept)) > budget:
        kept.pop()
    return kept


def cut_to_tokens(text: str, max_tokens: int, tokens: TokenEstimator) -> str:
    """The longest prefix of ``text`` within ``max_tokens`` that ends a paragraph or sentence.

    Falls back to a word end, then to a character cut, only when not even one sentence fits.
    Returns ``text`` unchanged when it already fits, and "" for a budget of zero or less.
    """
    total = tokens.count(text)
    if total <= max_tokens:
        return text
    if max_tokens <= 0:
        return ""
    for ends_of in (sentence_ends, _word_ends):
        end = _largest_fitting(text, ends_of(text), max_tokens, tokens, total)
        if end is not None:
            return text[:end].rstrip()
    end = _largest_fitting(text, range(1, len(text)), max_tokens, tokens, total)
    return text[:end] if end is not None else ""


def sentence_ends(text: str) -> list[int]:
    """Where ``text``'s paragraphs and sentences end, in order (0 aside): each line break, and the whitespace after
    ``.!?:;`` (a run of it once)."""
    ends = [m.start(m.lastindex or 0) for m in _SENTENCE_OR_PARAGRAPH_END.finditer(text)]
    return ends[1:] if ends and ends[0] == 0 else ends


def _word_ends(text: str) -> list[int]:
    """Where ``text``'s words end, in order (0 aside): the start of each run of whitespace."""
    return [m.start() for m in _WORD_END.finditer(text) if m.start()]


def cut_to_chars(text: str, max_chars: int) -> str:
    """The longest prefix of at most ``max_chars`` characters ending a paragraph, else a sentence,
    else a word; a paragraph end is preferred when it keeps at least half of the allowance."""
    if len(text) <= max_chars:
        return text
    window = text[: max_chars + 1]
    paragraph = window.rfind("\n\n")
    if paragraph >= max_chars // 2:
        return text[:paragraph].rstrip()
    for ends_of in (sentence_ends, _word_ends):
        ends = [end for end in ends_of(window) if end <= max_chars]
        if ends:
            return text[: ends[-1]].rstrip()
    return text[:max_chars]


def water_fill(needs: Sequence[int], total: int) -> list[int]:
    """Share ``total`` fairly: nobody gets more than it needs, and what small needs leave goes to the rest."""
    shares = [0] * len(needs)
    remaining = max(total, 0)
    order = sorted(range(len(needs)), key=needs.__getitem__)
    for k, i in enumerate(order):
        shares[i] = min(needs[i], remaining // (len(order) - k))
        remaining -= shares[i]
    return shares


GUESSES = 4
"""Counts ``_largest_fitting`` places by the text's characters per token before it bisects."""


def _largest_fitting(text: str, ends: Sequence[int], max_tokens: int, tokens: TokenEstimator, total: int) -> int | None:
    """The largest of the candidate ``ends`` whose prefix fits (token counts grow with the prefix; ``total``: the
    whole text's, over ``max_tokens``). The first ``GUESSES`` counts are where the characters per token of the span
    still in question put the limit, so 2-3 counts find it where a bisection made 8-11; then it bisects (a text
    whose tokens come very unevenly costs at most ``GUESSES`` counts more than a bisection)."""
    fits, over = -1, len(ends)  # ends[fits] fits (-1: the empty prefix); ends[over] does not (len: the whole text)
    fits_at, fits_n, over_at, over_n = 0, 0, len(text), total
    probes = 0
    while over - fits > 1:
        if probes < GUESSES:  # the largest end at or before where the count would reach the limit, inside the span
            at = fits_at + (over_at - fits_at) * (max_tokens - fits_n) / max(over_n - fits_n, 1)
            probe = min(max(bisect.bisect_right(ends, at, fits + 1, over) - 1, fits + 1), over - 1)
        else:
            probe = (fits + over) // 2
        probes += 1
        n = tokens.count(text[: ends[probe]].rstrip())
        if n <= max_tokens:
            fits, fits_at, fits_n = probe, ends[probe], n
        else:
            over, over_at, over_n = probe, ends[probe], n
    return ends[fits] if fits >= 0 else None


def estimator(ctx: AssemblyContext) -> TokenEstimator:
    """The estimator budgets are enforced with: the orchestrator's, else the model's shared one."""
    if ctx.tokens is not None:
        return ctx.tokens
    from .token_estimator import estimator_for

    return estimator_for(ctx.model)


def first_sentence(text: str, limit: int = 200) -> str:
    """The first sentence of ``text`` on one line, at most ``limit`` characters ("…" marking a cut)."""
    match = _FIRST_SENTENCE.match(text.strip())
    sentence = " ".join((match.group(1) if match else text.strip()).split())
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


def clip(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs collapsed), at most ``limit`` characters, "…" marking a cut."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def overlap(before: str, after: str, minimum: int = 20) -> int:
    """Length of the longest end of ``before`` that ``after`` opens with (the overlap of consecutive chunks), else 0:
    the chunker cuts sentences at it, the knowledge module joins neighbouring chunks without it."""
    probe = after[:minimum]
    if len(probe) < minimum:
        return 0
    best, start = 0, before.find(probe)
    while start != -1:
        if after.startswith(before[start:]):
            best = max(best, len(before) - start)
        start = before.find(probe, start + 1)
    return best
