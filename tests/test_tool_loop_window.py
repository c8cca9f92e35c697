"""Windows a tool loop may follow (issue 32, items 1-2), over generated agent histories (hypothesis) with tools offered:
whenever the history exceeds the room, the turn's first step uses at least 80% of the available budget (older units
cut to fill it, as without tools; by tda's counts: the first step may keep no more than the rest free for the loop,
and tda counts a call ~10 tokens above litellm), keeps the newest complete turn, and sends no tool result without
its call. Its next step (the query, then a call and its results) sends the first step's history part byte for byte
when the loop fits the room the first step left (the first step keeps room for a loop like the newest turn's when
it fits the share the fill may leave: long_session_bench measures how often; a generated history may give the module
less spare than its loop); a larger loop is made
room for from the end of the history part, so the step sends its beginning (the provider's cache holds up to there),
or that beginning and the next call with its results cut to the room left (session 49: a tail cut by whole units
could leave the window under 80%), unless the newest turn itself had to be cut to fit (it is cut again, to the
smaller room) or the first step sent
the whole history (in order: the step that no longer fits it sends the newest turn first, then what is recalled).
No window is larger than the budget (the limit less the type's output reserve) by an independent oracle's count
(test_full_window's ``tokens``)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.context_window.base import Message
from components.context_window.handler import ContextWindowHandler
from tda.builtins import DEFAULT_TYPES
from tests.support import make_ctx
from tests.test_full_window import (
    PATIENT_S,
    TOOL,
    agent_history,
    as_sent,
    assert_newest_turn_kept,
    newest_turn,
    rows,
    tokens,
)
from tests.test_tool_clearing import pairing_errors

LIMITS = (4_000, 16_000)
CUT = "tokens, is not shown]"
"""Ends a result cut to fit (the module's ``CUT_NOTE``)."""


def newest_loop(history: list[Message]) -> list[Message]:
    """The newest turn's calls and results, in order (what an agent calling again as it did sends next)."""
    return [m for m in newest_turn(history) if m.role == "tool" or m.tool_calls]


def drawn_loop(turn: int, count: int) -> list[Message]:
    """One call and its result of ``count`` rows."""
    call = {"id": "call_next", "type": "function", "function": {"name": TOOL.name, "arguments": "{}"}}
    return [
        Message("assistant", "", turn=turn, tool_calls=(call,)),
        Message("tool", rows(turn, 0, count), turn=turn, tool_call_id="call_next"),
    ]


def sent_whole(window: list[dict[str, Any]], history: list[Message]) -> bool:
    """Whether the window holds every message of ``history``, in order and uncut."""
    sent = [m.get("content") or "" for m in window if m["role"] != "system"]
    return sent[: len(history)] == [m.content for m in history]


def sent_first(part2: list[dict[str, Any]], part1: list[dict[str, Any]]) -> bool:
    """Whether ``part2`` is ``part1``'s beginning, perhaps ending with the next call of ``part1`` whose results are cut
    to the room left (a tail of whole units would leave the window under 80%: session 49)."""
    if part2 == part1[: len(part2)]:
        return True
    calls = [i for i, m in enumerate(part2) if m.get("tool_calls")]
    if not calls or part2[: calls[-1] + 1] != part1[: calls[-1] + 1]:
        return False
    results, first = part2[calls[-1] + 1 :], part1[calls[-1] + 1 : len(part2)]
    return len(results) == len(first) and all(
        a == b or (CUT in a["content"] and b["content"].startswith(a["content"].split("\n[... the rest")[0]))
        for a, b in zip(results, first, strict=True)
    )


def history_part(window: list[dict[str, Any]], loop: list[Message]) -> list[dict[str, Any]]:
    """The window's messages before the turn's query (the query and its loop are the last ones)."""
    return window[: len(window) - 1 - len(loop)]


@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("type_id", sorted(DEFAULT_TYPES))
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
@given(data=st.data(), asked=st.integers(1, 40), again=st.booleans())
async def test_a_tool_loop_gets_a_full_window_and_its_steps_the_same_history_part(
    builtin_registry, type_id, limit, data, asked, again
):
    wtype = DEFAULT_TYPES[type_id]
    available = limit - limit * wtype.output_reserve_pct // 100
    history = data.draw(agent_history(limit))
    if tokens([as_sent(m) for m in history], [TOOL.to_openai()]) <= available:
        return  # the whole history fits: nothing to fill
    turn = history[-1].turn + 1
    query = f"Turn {turn}: and the open orders of customer CUST-{asked:03d}?"
    first = make_ctx(messages=history, query=query, limit=limit, tools=[TOOL])
    loop = newest_loop(history) if again else []
    if not loop or tokens([as_sent(m) for m in loop]) > available // 2:  # a loop the window can take
        loop = drawn_loop(turn, data.draw(st.integers(1, max(4, limit // 200))))
    handler = ContextWindowHandler(builtin_registry, timeout_s=PATIENT_S)
    step1 = await handler.assemble(first, wtype)
    step2 = await handler.assemble(dataclasses.replace(first, continuation=tuple(loop)), wtype)

    whole = sent_whole(step1.messages, history)  # by tda's counts it fits (the oracle's counts tools higher)
    assert whole or step1.snapshot.total_used >= 0.8 * available, step1.snapshot.decisions
    for out in (step1, step2):
        assert tokens(out.messages, out.tools) <= available
        assert pairing_errors(out.messages) == []
        assert_newest_turn_kept(out.messages, newest_turn(history))
    part1, part2 = history_part(step1.messages, []), history_part(step2.messages, loop)
    loop_tokens = step2.snapshot.query_tokens - step1.snapshot.query_tokens
    left = step1.snapshot.available_budget - step1.snapshot.total_used
    if loop_tokens <= left:
        assert part2 == part1, step2.snapshot.decisions
    elif not whole and not any(CUT in m["content"] for m in part1 if m["role"] == "tool"):
        # (a history sent whole is in order, a cut one newest turn first; a newest turn cut is cut again)
        assert sent_first(part2, part1), step2.snapshot.decisions
