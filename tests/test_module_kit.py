"""Helpers modules share: fitting text into budgets, per-session caches, reading options."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from components.context_window.base import joined
from components.context_window.fitting import clip, cut_to_chars, cut_to_tokens, fit_blocks, sentence_ends, water_fill
from components.context_window.options import option
from components.context_window.session_cache import SessionCache
from components.context_window.token_estimator import estimator_for
from tests.oracle import cookbook_message_tokens

TOKENS = estimator_for("gpt-4o")
TEXT = "First sentence here. Second one follows!\n\nA new paragraph starts. It ends here? Yes."


def test_fit_blocks_keeps_the_longest_prefix_in_order():
    blocks = ["alpha " * 10, "beta " * 50, "gamma"]
    budget = sent_tokens(joined("## H", blocks[:1])) + 5
    assert fit_blocks(blocks, budget, TOKENS, "## H") == blocks[:1]  # "gamma" would fit, but order holds
    assert fit_blocks(blocks, 10**6, TOKENS, "## H") == blocks
    assert fit_blocks(blocks, 0, TOKENS) == []


@settings(max_examples=80, deadline=None)
@given(blocks=st.lists(st.text(max_size=200), max_size=8), header=st.text(max_size=40), budget=st.integers(-3, 300))
def test_fit_blocks_result_always_fits(blocks, header, budget):
    """Fits as it is sent: one system message, its overhead included, counted by the cookbook oracle."""
    kept = fit_blocks(blocks, budget, TOKENS, header)
    assert kept == blocks[: len(kept)]
    if kept:
        assert sent_tokens(joined(header, kept)) <= budget


def sent_tokens(text: str) -> int:
    return cookbook_message_tokens({"role": "system", "content": text})


def test_cut_to_tokens_ends_at_a_sentence_or_paragraph():
    assert cut_to_tokens(TEXT, 1_000, TOKENS) == TEXT
    cut = cut_to_tokens(TEXT, 12, TOKENS)
    assert cut == "First sentence here. Second one follows!"
    assert cut_to_tokens("no sentence ends in this long run of words at all", 4, TOKENS) == "no sentence ends in"
    assert cut_to_tokens(TEXT, 0, TOKENS) == ""


@settings(max_examples=80, deadline=None)
@given(text=st.text(max_size=600), limit=st.integers(-2, 120))
def test_cut_to_tokens_is_a_prefix_within_the_limit(text, limit):
    cut = cut_to_tokens(text, limit, TOKENS)
    assert text.startswith(cut) and TOKENS.count(cut) <= max(limit, 0)


def _bisected(text: str, limit: int) -> str:
    """``cut_to_tokens`` as it was: a bisection over the candidate ends (the cut the guided search must match)."""

    def largest(ends):
        lo, hi, best = 0, len(ends) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            if TOKENS.count(text[: ends[mid]].rstrip()) <= limit:
                best, lo = ends[mid], mid + 1
            else:
                hi = mid - 1
        return best

    if TOKENS.count(text) <= limit:
        return text
    if limit <= 0:
        return ""
    for pattern in (r"(?<=[.!?:;])\s+|\n", r"\s+"):
        end = largest(sorted({m.start() for m in re.finditer(pattern, text)} - {0}))
        if end is not None:
            return text[:end].rstrip()
    end = largest(range(1, len(text)))
    return text[:end] if end is not None else ""


PROSE = st.lists(
    st.sampled_from(
        ["the", "order", "shipped", "42", "widgets,", "late.", "Why?", "ok!", "a\n", "x" * 30, "€5;", "\n\n"]
    ),
    max_size=300,
).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(text=st.one_of(PROSE, st.text(max_size=600)), limit=st.integers(-2, 400))
@example(text="x" * 30 + " order", limit=3)  # 24 x's are 3 tokens, 21 the bisection's: the cut is longer, and fits
def test_cut_to_tokens_cuts_where_a_bisection_does(text, limit):
    """The cut fits; and where a text's count grows with its prefix, it is the bisection's. Where it does not (a run
    of one letter: 'x' * 8 is one o200k token, 'x' * 6 two), no search over the ends is sure to find the longest
    prefix that fits, and the bisection's is only one of them."""
    cut = cut_to_tokens(text, limit, TOKENS)
    assert cut == text or TOKENS.count(cut) <= max(limit, 0)
    if _counts_grow(text):
        assert cut == _bisected(text, limit)


ENDS_TEXT = st.text(alphabet=st.sampled_from(list(".!?:;\n \t\r\u00a0\u2029ab")), max_size=40)


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(ENDS_TEXT, PROSE, st.text(max_size=200)))
def test_sentence_ends_are_where_a_look_behind_finds_them(text):
    """The ends a cut may stop at are the written rule's: a line break, or a run of whitespace after ``.!?:;``
    (where it starts), as a look-behind at every character finds them (the pattern this one replaced)."""
    expected = sorted({m.start() for m in re.finditer(r"(?<=[.!?:;])\s+|\n", text)} - {0})
    assert sentence_ends(text) == expected


def _counts_grow(text: str) -> bool:
    counts = [TOKENS.count(text[:end]) for end in range(len(text) + 1)]
    return all(a <= b for a, b in itertools.pairwise(counts))


class CountedTokens:
    def __init__(self) -> None:
        self.counts = 0

    def count(self, text: str) -> int:
        self.counts += 1
        return TOKENS.count(text)


@pytest.mark.parametrize("limit", [50, 300, 1_000, 2_500])
def test_cut_to_tokens_counts_a_few_prefixes_not_a_bisections_worth(limit):
    """A long tool result cut to a share of the window: the cut is guessed from its characters per token, then
    corrected (the whole text's count and 2-4 prefixes'), not found by a bisection's 11-12 counts."""
    text = "\n".join(
        f"order {n}: 3 widgets shipped to Lyon on 2024-05-{n % 28 + 1:02d}, paid. Note {n * 7}." for n in range(400)
    )
    tokens = CountedTokens()
    cut = cut_to_tokens(text, limit, tokens)  # type: ignore[arg-type]
    assert cut == _bisected(text, limit) and tokens.counts <= 5


def test_cut_to_chars_prefers_paragraphs_then_sentences():
    assert cut_to_chars(TEXT, 70) == "First sentence here. Second one follows!"
    assert cut_to_chars(TEXT, 30) == "First sentence here."
    assert cut_to_chars("abcdefghij", 4) == "abcd"


@given(needs=st.lists(st.integers(0, 500), max_size=6), total=st.integers(-10, 2_000))
def test_water_fill_is_fair_and_never_overspends(needs, total):
    shares = water_fill(needs, total)
    assert all(0 <= s <= n for s, n in zip(shares, needs, strict=True))
    assert sum(shares) <= max(total, 0)
    if sum(needs) <= total:
        assert shares == needs
    hungry = [s for s, n in zip(shares, needs, strict=True) if s < n]
    assert not hungry or max(hungry) - min(hungry) <= 1  # the unsatisfied share alike


def test_clip():
    assert clip("a\n b   c", 10) == "a b c"
    assert clip("abcdefghij", 5) == "abcd…"


def test_session_cache_memoises_bounds_and_purges():
    cache: SessionCache[int] = SessionCache(max_entries=2)
    calls = []
    assert cache.get_or_compute("s1", "k", lambda: calls.append(1) or 1) == 1
    assert cache.get_or_compute("s1", "k", lambda: calls.append(2) or 2) == 1
    cache.get_or_compute("s2", "k", lambda: 3)
    cache.get_or_compute("s3", "k", lambda: 4)  # evicts the oldest (s1)
    assert len(cache) == 2 and cache.stats() == {"sessions": 2, "entries": 2, "hits": 1, "misses": 3}
    assert cache.purge("s2") == 1 and cache.purge("s2") == 0
    with pytest.raises(ValueError):
        SessionCache(-1)
    off: SessionCache[int] = SessionCache(0)  # a cache switched off computes every time and keeps nothing
    assert [off.get_or_compute("s1", "k", lambda: 5) for _ in range(2)] == [5, 5] and len(off) == 0


async def test_session_cache_async_producer():
    cache: SessionCache[str] = SessionCache()

    async def fetch() -> str:
        return "value"

    assert await cache.aget_or_compute("s", 1, fetch) == "value"
    assert await cache.aget_or_compute("s", 1, fetch) == "value"
    assert cache.stats()["hits"] == 1


def test_option_converts_and_explains():
    assert option({"k": "3"}, "k", 1) == 3
    assert option({}, "k", 0.5) == 0.5
    for bad, message in [
        ({"k": "x"}, "'k' must be a whole number, got 'x'"),
        ({"k": True}, "whole number"),
        ({"k": 2.5}, "whole number"),
        ({"k": 0}, "at least 1"),
    ]:
        with pytest.raises(ValueError, match=message):
            option(bad, "k", 3, minimum=1)
