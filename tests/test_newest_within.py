"""A summary's text cut to its model's window (``tda.llm.newest_within``): the same cut as counting every candidate
suffix with the model's tokenizer (the oracle below), at a few counts of the text near the cut."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.metering import prompt_of
from components.context_window.token_estimator import TokenEstimator, estimator_for
from tda.llm import CUT_MARK, newest_within

TOKENS = estimator_for("gpt-4o")
INSTRUCTION = "Summarise this conversation excerpt."
LINE = st.text(alphabet='abc 12{}"\\é.', max_size=40)


def size(body: str) -> int:
    return TOKENS.count_text_message(prompt_of(body, INSTRUCTION), "user")


def oracle(text: str, limit: int) -> str:
    """Every suffix tried, longest first: the whole text; else the longest that starts a line (behind the mark);
    else the longest suffix of the last line."""
    if size(text) <= limit:
        return text
    starts = [i + 1 for i, c in enumerate(text) if c == "\n" and i + 1 < len(text)]
    for start in starts:
        if size(CUT_MARK + text[start:]) <= limit:
            return CUT_MARK + text[start:]
    last = starts[-1] if starts else 0
    return next(CUT_MARK + text[i:] for i in range(last, len(text) + 1) if size(CUT_MARK + text[i:]) <= limit)


@settings(max_examples=200, deadline=None)
@given(st.lists(LINE, min_size=1, max_size=30), st.integers(min_value=0, max_value=200))
def test_the_cut_is_the_longest_suffix_that_fits(lines: list[str], room: int) -> None:
    text = "\n".join(lines)
    limit = size(CUT_MARK) + room
    assert newest_within(text, INSTRUCTION, limit, TOKENS) == oracle(text, limit)


def test_a_long_transcript_is_counted_near_its_cut_only() -> None:
    """A 40-message transcript of ~1,000-token tool results cut to a 12K window: a handful of whole-prompt counts
    (each is a tokenisation), not one per step of a bisection over the whole text."""
    text = "\n".join(f'tool: {{"order": "ORD-{i}", "rows": "{"x y " * 900}"}}' for i in range(40))
    counted: list[int] = []
    real = TOKENS.count_text_message

    class Counting:
        def __getattr__(self, name: str) -> object:
            return getattr(TOKENS, name)

        def count_text_message(self, body: str, role: str = "system") -> int:
            counted.append(len(body))
            return real(body, role)

    cut = newest_within(text, INSTRUCTION, 12_000, Counting())  # type: ignore[arg-type]
    assert cut == oracle(text, 12_000)
    assert sum(counted) <= 6 * 12_000 * 4  # a few prompts of about the window's size, never the whole text's


def _tokenised(text: str, limit: int) -> tuple[str, int]:
    """``newest_within``'s answer under a fresh gpt-4o estimator (no text counted yet), and how many characters it
    handed to the tokenizer."""
    tokens = TokenEstimator(TOKENS.encoding_name)
    real, seen = tokens._counter, []
    assert real is not None

    def counting(piece: str) -> int:
        seen.append(len(piece))
        return real(piece)

    tokens._counter = counting
    return newest_within(text, INSTRUCTION, limit, tokens), sum(seen)


ROWS = "x y " * 900
TRANSCRIPT = "\n".join(f'tool: {{"order": "ORD-{i}", "rows": "{ROWS}"}}\nassistant: done {i}' for i in range(40))


def test_a_transcript_that_fits_is_tokenised_once() -> None:
    """A summary's transcript within its model's window but larger in bytes: its lines, priced from the end, are
    the whole prompt's count's lines, not tokenised a second time."""
    assert len(prompt_of(TRANSCRIPT, INSTRUCTION).encode()) > 100_000 > size(TRANSCRIPT)
    cut, tokenised = _tokenised(TRANSCRIPT, 100_000)
    assert cut == TRANSCRIPT
    assert tokenised < 1.1 * len(prompt_of(TRANSCRIPT, INSTRUCTION))  # twice that before


def test_a_transcript_far_within_the_window_is_not_tokenised() -> None:
    """Fewer bytes than the window has tokens: it fits whatever its count (every token is at least a byte)."""
    cut, tokenised = _tokenised(TRANSCRIPT, 1_000_000)
    assert cut == TRANSCRIPT
    assert tokenised == len("user")  # the message's role alone
