"""Clearing old tool results, and recalling the cleared ones a question needs.

A window type may set, for a history module, that a tool result older than N turns or larger than M tokens is
sent as a short reference instead ("[result of search_orders at turn 12, 3,400 tokens, cleared]"). The call and
its ``tool`` message stay, with the same ids: a provider rejects a call without its result, so a unit (the
assistant message calling tools and the results answering it) keeps its shape.

Cache-stable: a result's age is judged against a horizon that moves in steps of N turns (``ClearRule.horizon``),
so results are cleared in batches, not one more every turn: between steps the history's bytes do not change and a
provider's prompt cache keeps hitting. The size rule never changes its mind about a result.

Recall: a cleared result relevant to the turn's question (the relevance engine's BM25, above a floor) is shown again,
whole when all of it ranks and fits, else its matching parts, marked as such. Its reference stays where it is (the
history's bytes do not change) and the recalled text goes in one note after the history, before the query: it is
per-turn context, and the stable order (system, tools, history, then what changes per turn) holds on every turn.
"""

from __future__ import annotations

import dataclasses
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..base import Message
from ..options import option
from ..relevance import BM25Index, Floor, fuse, pack, terms

Unit = tuple[Message, ...]
Count = Callable[[Message], int]
PART_CHARS = 480
"""A long result is recalled in parts of about this many characters (~120 tokens; whole lines where it can, a
longer line cut: JSON results often have one line)."""
FEW_PARTS = 4
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

    def clears(self, result: Message, tokens: int, current_turn: int, old: bool = False) -> bool:
        """``old``: an unnumbered result (a chat client's) that ``UnnumberedAges`` found old enough."""
        if result.turn >= current_turn:  # the turn being answered: its tool loop always stays
            return False
        return old or result.turn <= self.horizon(current_turn) or 0 < self.over_tokens < tokens


class UnnumberedAges:
    """The age rule for messages without turn numbers (turn 0: a chat client's conversation), walking units newest
    first: a unit is old when it lies before the N-th newest user message, that position rounded down to a step of
    4N positions (positions in the client's conversation do not change as it grows), so results are cleared in
    batches, as with ``ClearRule.horizon``."""

    def __init__(self, after_turns: int) -> None:
        self.after_turns = after_turns
        self.users = 0
        self.boundary: int | None = None

    def old(self, position: int, unit: Unit) -> bool:
        if not self.after_turns or unit[0].turn != 0:
            return False
        if unit[0].role == "user" and self.boundary is None:
            self.users += 1
            if self.users == self.after_turns:
                self.boundary = position - position % (4 * self.after_turns)
        return self.boundary is not None and position < self.boundary


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
    at = f" at turn {turn}" if turn else ""  # a chat client's messages carry no turn numbers
    return f"[result of {tool}{at}, {tokens:,} tokens, cleared]"


def clear_unit(
    unit: Unit, rule: ClearRule, current_turn: int, count: Count, old: bool = False
) -> tuple[Unit, list[Cleared]]:
    """``unit`` with the results ``rule`` clears replaced by references (same role, call id and turn); ``old``: an
    unnumbered unit old enough for the age rule (``UnnumberedAges``)."""
    if len(unit) == 1 or not rule.active:
        return unit, []
    names = {c.get("id"): str((c.get("function") or {}).get("name", "tool")) for c in unit[0].tool_calls}
    out, cleared = [unit[0]], []
    for result in unit[1:]:
        tokens = count(result)
        if not rule.clears(result, tokens, current_turn, old):
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
    text: str
    """The whole result as it was, or its matching parts in order, joined by a line with "..."."""
    parts: int
    """How many parts were shown (0: the whole result)."""
    of: int

    def describe(self) -> dict[str, Any]:
        shown = "whole" if not self.parts else f"{self.parts} of {self.of} parts"
        return {**self.cleared.describe(), "shown": shown}

    def block(self) -> str:
        c = self.cleared
        shown = "whole" if not self.parts else f"the {self.parts} of {self.of} parts that match the question"
        at = f" at turn {c.turn}" if c.turn else ""
        return f"[result of {c.tool}{at} (call {c.original.tool_call_id}), {shown}]\n{self.text}"


RECALL_HEADER = "Earlier tool results, cleared above, recalled for this question:"


def recall_note(recalled: Sequence[Recalled], turn: int) -> Message:
    """One user message after the history, before the query: recalled text is per-turn context, so it goes after
    the byte-stable part of the window (and stays out of the system text, where some providers would move it)."""
    return Message("user", "\n\n".join([RECALL_HEADER, *(r.block() for r in recalled)]), turn=turn)


@lru_cache(maxsize=1024)
def split_parts(text: str, part_chars: int = PART_CHARS) -> tuple[str, ...]:
    """``text`` in consecutive parts of at most ~``part_chars`` characters, on line boundaries where it can
    (a longer line is cut). Cached: a cleared result is split once, not on every turn that searches it."""
    pieces = [line[i : i + part_chars] for line in text.split("\n") for i in range(0, max(len(line), 1), part_chars)]
    parts: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        if current and size + len(piece) + 1 > part_chars:
            parts.append("\n".join(current))
            current, size = [], 0
        current.append(piece)
        size += len(piece) + 1
    if current:
        parts.append("\n".join(current))
    return tuple(p for p in parts if p.strip())


@lru_cache(maxsize=8192)
def _part_terms(part: str) -> tuple[str, ...]:
    return tuple(terms(part))


_PARTS_INDEXES: OrderedDict[tuple[str, ...], BM25Index] = OrderedDict()
PARTS_INDEXES = 64
"""How many indexes of cleared parts are kept (about one per session searching its cleared results)."""


def parts_index(parts: tuple[str, ...]) -> BM25Index:
    """A BM25 index of ``parts``, in order. A session's cleared results grow by a few each turn: the index of the
    last turn's parts, when they open this turn's, is extended with the new ones instead of built again (an agent's
    200 results were re-indexed on every turn)."""
    index = _PARTS_INDEXES.get(parts)
    if index is not None:
        _PARTS_INDEXES.move_to_end(parts)
        return index
    held = next((key for key in reversed(_PARTS_INDEXES) if len(key) < len(parts) and parts[: len(key)] == key), ())
    index = _PARTS_INDEXES.pop(held) if held else BM25Index()  # taken out: its old key no longer says what it holds
    for part in parts[len(held) :]:
        index.add_terms(_part_terms(part))
    _PARTS_INDEXES[parts] = index
    if len(_PARTS_INDEXES) > PARTS_INDEXES:
        _PARTS_INDEXES.popitem(last=False)
    return index


def _telling(index: BM25Index, query_terms: list[str]) -> list[str]:
    """The query's terms found in at most half the parts (idf >= ln 2): a word in most of them ("order", "shipped")
    tells none apart, and would recall them all. With fewer than ``FEW_PARTS`` parts, every term counts."""
    if len(index) < FEW_PARTS:
        return query_terms
    return [t for t in query_terms if index.idf(t) >= math.log(2)]


def recall(
    query: str, cleared: Sequence[Cleared], budget: int, count: Count, count_text: Callable[[str], int], turn: int
) -> tuple[Message | None, list[Recalled], dict[str, Any]]:
    """The note recalling the cleared results (or their parts) relevant to ``query`` that fits in ``budget``
    tokens (None: nothing relevant, or no room), what it holds, and what the snapshot shows about the choice.

    Ranked by the relevance engine's BM25 with a floor relative to the best part (``RECALL_MIN_LEXICAL``) and
    packed down the ranking while room is left. Lexical only: tool results are mostly ids, names and figures,
    which words match and meaning does not."""
    if not cleared or budget <= 0 or not terms(query):
        reason = "nothing cleared" if not cleared else "no room for recall" if budget <= 0 else "no words to match"
        return None, [], {"reason": reason}
    split = [split_parts(c.original.content) for c in cleared]
    places = [(i, j) for i, parts in enumerate(split) for j in range(len(parts))]  # in conversation order
    index = parts_index(tuple(split[i][j] for i, j in places))
    scores = index.scores_for_terms(_telling(index, terms(query)))
    floor = Floor(min_lexical=max(RECALL_MIN_LEXICAL * float(scores.max(initial=0.0)), 0.0))
    ranking = fuse(lexical=scores, floor=floor)
    overhead = count(Message("user", RECALL_HEADER))
    costs = [count_text(split[i][j]) + 1 for i, j in places]
    packing = pack(ranking.positions, costs, budget - overhead)
    chosen: dict[int, list[int]] = {}
    for k in sorted(packing.chosen):
        i, j = places[k]
        chosen.setdefault(i, []).append(j)
    recalled = [
        Recalled(cleared[i], cleared[i].original.content, 0, len(split[i]))  # whole: the result byte for byte
        if len(js) == len(split[i])
        else Recalled(cleared[i], "\n...\n".join(split[i][j] for j in js), len(js), len(split[i]))
        for i, js in chosen.items()
    ]
    note = recall_note(recalled, turn) if recalled else None
    while note is not None and count(note) > budget:  # the blocks' headers did not fit: the newest results go
        recalled.pop()
        note = recall_note(recalled, turn) if recalled else None
    why: dict[str, Any] = {"method": ranking.method, "ranked": len(ranking), "considered": packing.considered}
    if note is None:
        why["reason"] = ranking.reason or "nothing ranked fits the room"
    return note, recalled, why


# -- Anthropic's clear_tool_uses, applied by tda ---------------------------------------------------


@dataclass(frozen=True)
class KeepRecent:
    """Anthropic's ``clear_tool_uses_20250919`` edit in tda's terms: once the conversation is over ``trigger_tokens``
    (or holds more than ``trigger_tool_uses`` tool uses), every tool result but those of the ``keep`` newest tool uses
    is sent as its reference (``reference_text``), oldest first; ``exclude`` names tools never cleared, ``inputs``
    says whose calls lose their arguments too (True: every cleared one's). Nothing is cleared unless at least
    ``at_least`` tokens would be."""

    trigger_tokens: int | None = 100_000
    trigger_tool_uses: int | None = None
    keep: int = 3
    at_least: int = 0
    exclude: frozenset[str] = frozenset()
    inputs: bool | frozenset[str] = False

    def triggered(self, tokens: int, tool_uses: int) -> bool:
        if self.trigger_tool_uses is not None:
            return tool_uses > self.trigger_tool_uses
        return self.trigger_tokens is not None and tokens > self.trigger_tokens

    def clears_input(self, tool: str) -> bool:
        return self.inputs is True or (isinstance(self.inputs, frozenset) and tool in self.inputs)


@dataclass(frozen=True)
class KeptRecent:
    """What ``keep_recent`` did: the conversation as it is sent, and the results it cleared (with their tokens)."""

    messages: tuple[Message, ...]
    cleared: tuple[Cleared, ...] = ()
    tokens: int = 0
    """Tokens cleared (results and call arguments), as ``count`` counts them."""


def keep_recent(messages: Sequence[Message], rule: KeepRecent, count: Count, tools_tokens: int = 0) -> KeptRecent:
    """``messages`` with ``rule`` applied (see ``KeepRecent``): a call keeps its id and its result message stays, so
    every call still has its result. ``tools_tokens``: the tools' share of the prompt, counted towards the trigger."""
    calls = [(i, c) for i, m in enumerate(messages) for c in m.tool_calls]
    total = tools_tokens + sum(count(m) for m in messages)
    if not rule.triggered(total, len(calls)):
        return KeptRecent(tuple(messages))
    kept = {str(c.get("id")) for _, c in calls[max(0, len(calls) - rule.keep) :]} if rule.keep > 0 else set()
    names = {str(c.get("id")): str((c.get("function") or {}).get("name", "tool")) for _, c in calls}
    out, cleared, saved = list(messages), [], 0
    for i, m in enumerate(messages):
        call_id = m.tool_call_id or ""
        tool = names.get(call_id, "tool")
        if m.role != "tool" or call_id in kept or call_id not in names or tool in rule.exclude:
            continue
        tokens = count(m)
        reference = _with_content(m, reference_text(tool, 0, tokens))
        if count(reference) < tokens:
            out[i] = reference
            saved += tokens - count(reference)
            cleared.append(Cleared(tool, m.turn, tokens, m, reference))
    for i, m in enumerate(out):
        if m.tool_calls and any(_input_cleared(c, rule, kept, names) for c in m.tool_calls):
            emptied = tuple(_without_input(c) if _input_cleared(c, rule, kept, names) else c for c in m.tool_calls)
            shorter = dataclasses.replace(m, tool_calls=emptied, tokens=None)
            saved += count(m) - count(shorter)
            out[i] = shorter
    if not cleared or saved < rule.at_least:
        return KeptRecent(tuple(messages))
    return KeptRecent(tuple(out), tuple(cleared), saved)


def _input_cleared(call: Mapping[str, Any], rule: KeepRecent, kept: set[str], names: dict[str, str]) -> bool:
    tool = names.get(str(call.get("id")), "tool")
    return str(call.get("id")) not in kept and tool not in rule.exclude and rule.clears_input(tool)


def _without_input(call: Mapping[str, Any]) -> dict[str, Any]:
    return {**call, "function": {**(call.get("function") or {}), "arguments": "{}"}}
