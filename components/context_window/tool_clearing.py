"""Clearing old tool results, and recalling the cleared ones a question needs.

A window type may set, for a history module, that a tool result older than N turns or larger than M tokens is
sent as a short reference instead ("[result of search_orders at turn 12, 3,400 tokens, cleared]"). The call and
its ``tool`` message stay, with the same ids: a provider rejects a call without its result, so a unit (the
assistant message calling tools and the results answering it) keeps its shape.

Cache-stable: a result's age is judged against a horizon that moves in steps of N turns (``ClearRule.horizon``),
so results are cleared in batches, not one more every turn: between steps the history's bytes do not change and a
provider's prompt cache keeps hitting. The size rule never changes its mind about a result.

Recall: a cleared result relevant to the turn's question (the relevance engine: BM25, with the embedder's cosine
when there is one, fused above a floor) is shown again in place of its reference: whole when all of it ranks and
fits, else its matching parts, marked as such.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from .base import Embedder, Message
from .options import option
from .relevance import BM25Index, Candidate, Floor, select

Unit = tuple[Message, ...]
Count = Callable[[Message], int]
PART_TOKENS = 120
"""A long result is recalled in parts of about this many tokens (whole lines where it can)."""
PART_CHARS = 600
"""A line longer than this is cut into pieces of this many characters (JSON results often have one line)."""
RECALL_MIN_DENSE = 0.6
"""The cosine a part needs to count as relevant by meaning alone. High: the parts of one tool's results look alike
(the same fields on every line), so a looser floor would recall them all."""
RECALL_MIN_LEXICAL = 0.5
"""A part's BM25 score must reach this share of the best part's: words every part shares ("order", "status")
match everywhere; the rare ones the question names ("305") single out the part it needs."""


@dataclass(frozen=True)
class ClearRule:
    """``after_turns``: clear results at least this many turns old (0: never by age); ``over_tokens``: clear
    results larger than this (0: never by size)."""

    after_turns: int = 0
    over_tokens: int = 0

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ClearRule:
        return cls(
            option(config, "clear_tool_results_after_turns", 0, minimum=0),
            option(config, "clear_tool_results_over_tokens", 0, minimum=0),
        )

    @property
    def active(self) -> bool:
        return self.after_turns > 0 or self.over_tokens > 0

    def horizon(self, current_turn: int) -> int:
        """Results of turns up to this one are old enough to clear. It moves in steps of ``after_turns``: a result
        goes when it is between N and 2N-1 turns old, in one batch with the others of its step. -1: none is."""
        if not self.after_turns or current_turn - self.after_turns < 0:
            return -1
        return (current_turn - self.after_turns) // self.after_turns * self.after_turns

    def clears(self, result: Message, tokens: int, current_turn: int) -> bool:
        if result.turn >= current_turn:  # the turn being answered: its tool loop always stays
            return False
        return result.turn <= self.horizon(current_turn) or 0 < self.over_tokens < tokens


@dataclass(frozen=True)
class Cleared:
    """A result sent as a reference: what it was, and where it is in the window."""

    tool: str
    turn: int
    tokens: int
    original: Message
    reference: Message

    def describe(self) -> dict[str, Any]:
        return {"tool": self.tool, "turn": self.turn, "tokens": self.tokens, "tool_call_id": self.original.tool_call_id}


def reference_text(tool: str, turn: int, tokens: int) -> str:
    return f"[result of {tool} at turn {turn}, {tokens:,} tokens, cleared]"


def clear_unit(unit: Unit, rule: ClearRule, current_turn: int, count: Count) -> tuple[Unit, list[Cleared]]:
    """``unit`` with the results ``rule`` clears replaced by references (same role, call id and turn)."""
    if len(unit) == 1 or not rule.active:
        return unit, []
    names = {c.get("id"): str((c.get("function") or {}).get("name", "tool")) for c in unit[0].tool_calls}
    out, cleared = [unit[0]], []
    for result in unit[1:]:
        tokens = count(result)
        if not rule.clears(result, tokens, current_turn):
            out.append(result)
            continue
        tool = names.get(result.tool_call_id, "tool")
        reference = _with_content(result, reference_text(tool, result.turn, tokens))
        if count(reference) >= tokens:  # already as short as its reference
            out.append(result)
            continue
        out.append(reference)
        cleared.append(Cleared(tool, result.turn, tokens, result, reference))
    return tuple(out), cleared


def _with_content(message: Message, content: str) -> Message:
    # The stored counts were of the old content, and parts would be sent instead of it.
    return dataclasses.replace(message, content=content, tokens=None, parts=None)


# -- recall -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recalled:
    cleared: Cleared
    message: Message
    parts: int
    """How many parts were shown (0: the whole result)."""
    of: int

    def describe(self) -> dict[str, Any]:
        shown = "whole" if not self.parts else f"{self.parts} of {self.of} parts"
        return {**self.cleared.describe(), "shown": shown}


def split_parts(text: str, count: Callable[[str], int], part_tokens: int = PART_TOKENS) -> list[str]:
    """``text`` in consecutive parts of about ``part_tokens`` tokens, on line boundaries where it can."""
    pieces = [line[i : i + PART_CHARS] for line in text.split("\n") for i in range(0, max(len(line), 1), PART_CHARS)]
    parts: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        n = count(piece) + 1
        if current and size + n > part_tokens:
            parts.append("\n".join(current))
            current, size = [], 0
        current.append(piece)
        size += n
    if current:
        parts.append("\n".join(current))
    return [p for p in parts if p.strip()]


async def recall(
    query: str,
    cleared: Sequence[Cleared],
    budget: int,
    count: Count,
    count_text: Callable[[str], int],
    embedder: Embedder | None = None,
) -> tuple[list[Recalled], dict[str, Any]]:
    """The cleared results (or their parts) relevant to ``query`` that fit in ``budget`` extra tokens, each as the
    message to send in place of its reference; and what the snapshot shows about the choice."""
    if not cleared or budget <= 0 or not query.strip():
        return [], {"reason": "nothing cleared" if not cleared else "no room for recall"}
    split = [split_parts(c.original.content, count_text) for c in cleared]
    places = [(i, j) for i, parts in enumerate(split) for j in range(len(parts))]  # in conversation order
    candidates = [Candidate(k, split[i][j], count_text(split[i][j]) + 1, k) for k, (i, j) in enumerate(places)]
    best = BM25Index([c.text for c in candidates]).scores(query)
    floor = Floor(min_lexical=RECALL_MIN_LEXICAL * float(best.max(initial=0.0)), min_dense=RECALL_MIN_DENSE)
    selection = await select(query, candidates, budget, embedder=embedder, floor=floor)
    chosen: dict[int, list[int]] = {}
    for c in selection.chosen:
        i, j = places[cast(int, c.id)]
        chosen.setdefault(i, []).append(j)
    recalled, spent = [], 0
    for i, js in sorted(chosen.items()):
        item = cleared[i]
        message = _recalled_message(item, split[i], js)
        extra = count(message) - count(item.reference)
        if spent + extra > budget:
            continue
        spent += extra
        recalled.append(Recalled(item, message, 0 if len(js) == len(split[i]) else len(js), len(split[i])))
    return recalled, {**selection.snapshot(), "used_tokens": spent}


def _recalled_message(item: Cleared, parts: list[str], chosen: list[int]) -> Message:
    if len(chosen) == len(parts):
        return item.original
    header = (
        f"[parts of the result of {item.tool} at turn {item.turn} that match the question: {len(chosen)} of "
        f"{len(parts)}, {item.tokens:,} tokens in all; the rest cleared]"
    )
    body = "\n...\n".join(parts[j] for j in sorted(chosen))
    return _with_content(item.original, f"{header}\n{body}")
