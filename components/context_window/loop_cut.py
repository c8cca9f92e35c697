"""A turn's own tool loop cut to fit (issue 32's item 1, found by session 49's held-out check).

The loop a client is running (``AssemblyContext.continuation``: the calls and results after its question) goes with
the query, whole. An agent that reads a 40K-token file into a 16K window used to get a 422 (``BudgetExceeded``:
the floor did not fit). Instead the loop is condensed as ``conversation_history`` condenses a newest turn larger
than its room: every call kept, each result's beginning sharing the room left (water-filling: small results whole,
large ones cut alike), each cut one ending with ``CUT_NOTE``. Only when the loop alone exceeds the room: the
window then holds nothing older beside it (the history had no room left).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from .base import Message, TokenCounter
from .fitting import cut_to_tokens, water_fill
from .token_estimator import CHUNK_CHARS, TokenEstimator

CUT_NOTE = "\n[... the rest of this result, {tokens:,} tokens, is not shown]"
"""Ends a tool result cut to fit (its beginning is sent as it was)."""
ATTEMPTS = 6
"""A cut text and its note may count a token or two more together than apart: tries with a larger margin."""


def cut_loop(loop: Sequence[Message], excess: int, tokens: TokenEstimator) -> tuple[Message, ...] | None:
    """``loop`` (calls and their results, in order) ``excess`` tokens smaller, its results' beginnings sharing what
    is left, each cut one noted. None: cutting every result down to its note would not save that much."""
    results = [i for i, m in enumerate(loop) if m.role == "tool" and m.content]
    if excess <= 0 or not results:
        return None
    count = tokens.count_message
    whole = sum(count(loop[i]) for i in results)
    notes = sum(count(noted(loop[i], tokens)) for i in results)
    sizes = [tokens.count(loop[i].content) for i in results]
    room = target = whole - excess
    for attempt in range(ATTEMPTS):
        if room < notes:
            return None
        shares = water_fill(sizes, room - notes)
        cut = list(loop)
        for i, share in zip(results, shares, strict=True):
            cut[i] = cut_result(loop[i], share, tokens)
        # a token per CHUNK_CHARS spare: litellm.token_counter (a LiteLLM proxy's check) counts long texts so
        over = sum(count(cut[i]) + len(cut[i].content) // CHUNK_CHARS for i in results) - target
        if over <= 0:
            return tuple(cut)
        room -= over * 4**attempt
    return None


def cut_result(result: Message, share: int, tokens: TokenCounter) -> Message:
    """``result`` whole when it fits ``share`` tokens, else its beginning within them followed by ``CUT_NOTE`` (a
    result sent as content parts goes as text: its parts would be counted whole)."""
    whole = tokens.count(result.content)
    if share >= whole:
        return result
    text = cut_to_tokens(result.content, share, tokens)
    note = CUT_NOTE.format(tokens=whole - tokens.count(text))
    return dataclasses.replace(result, content=text + note, tokens=None, parts=None)


def noted(result: Message, tokens: TokenCounter) -> Message:
    """``result`` as its cut note alone (its stored count was the whole result's, and content parts go too)."""
    note = CUT_NOTE.format(tokens=tokens.count(result.content))
    return dataclasses.replace(result, content=note, tokens=None, parts=None)
