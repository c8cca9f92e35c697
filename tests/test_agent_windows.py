"""Windows over generated agent histories (hypothesis): whatever the history (tool loops, calls left unanswered,
results whose call is gone), the limit, recall and clearing, no window sends a tool result without its call, and a
cleared result recalled "whole" is the result byte for byte. The pairing check is written apart from tda's units
(tests/test_tool_clearing.py's ``pairing_errors``, OpenAI's rule)."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from components.context_window.base import Message
from components.context_window.budget import BudgetExceeded
from components.context_window.handler import ContextWindowHandler
from tda.builtins import DEFAULT_TYPES
from tests.support import make_ctx
from tests.test_tool_clearing import clearing_type, pairing_errors

WHOLE = re.compile(r"\[result of \S+(?: at turn \d+)? \(call ([^)]+)\), whole\]\n")


def result_text(turn: int, call: int, lines: int) -> str:
    return "\n".join(
        f'{{"order": "ORD-{turn}{call}{i:03d}", "status": "open", "carrier": "dhl"}}' for i in range(lines)
    )


@st.composite
def agent_turn(draw: Any, turn: int) -> list[Message]:
    messages = [Message("user", f"Turn {turn}: what is open for batch {turn}?", turn=turn)]
    for loop in range(draw(st.integers(0, 2))):
        ids = [f"call_{turn}_{loop}_{c}" for c in range(draw(st.integers(1, 2)))]
        calls = tuple({"id": i, "type": "function", "function": {"name": "lookup", "arguments": "{}"}} for i in ids)
        messages.append(Message("assistant", "", turn=turn, tool_calls=calls))
        for c, call_id in enumerate(ids):
            if draw(st.integers(0, 9)) == 0:
                continue  # a call left unanswered
            lines = draw(st.integers(1, 60))
            messages.append(Message("tool", result_text(turn, c, lines), turn=turn, tool_call_id=call_id))
    if draw(st.integers(0, 7)) == 0:  # a result whose call is gone (an edited or imported history)
        messages.append(Message("tool", result_text(turn, 9, 3), turn=turn, tool_call_id=f"gone_{turn}"))
    if draw(st.booleans()):
        messages.append(Message("assistant", f"Batch {turn} has open orders.", turn=turn))
    return messages


@st.composite
def agent_history(draw: Any) -> list[Message]:
    turns = draw(st.integers(1, 24))
    return [m for t in range(1, turns + 1) for m in draw(agent_turn(t))]


def originals(messages: list[Message]) -> dict[str, str]:
    return {m.tool_call_id or "": m.content for m in messages if m.role == "tool"}


def whole_results(window: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(call id, text) of every result a recall note shows "whole"."""
    found = []
    for m in window:
        text = m["content"] if isinstance(m["content"], str) else ""
        heads = list(WHOLE.finditer(text))
        for head in heads:
            end = text.find("\n\n[result of ", head.end())
            found.append((head.group(1), text[head.end() : end if end >= 0 else len(text)]))
    return found


@given(
    history=agent_history(),
    limit=st.integers(1_000, 12_000),
    recall_pct=st.sampled_from([0, 80]),
    over=st.sampled_from([0, 60, 300]),
    after=st.sampled_from([0, 2]),
    asked=st.integers(1, 24),
)
async def test_no_window_sends_an_orphan_result_or_alters_a_whole_one(
    builtin_registry, history, limit, recall_pct, over, after, asked
):
    handler = ContextWindowHandler(builtin_registry)
    wtype = clearing_type(
        clear_tool_results_over_tokens=over, clear_tool_results_after_turns=after, recall_pct=recall_pct
    )
    query = f"Which orders of batch {asked} are open? ORD-{asked}0001"
    ctx = make_ctx(messages=history, query=query, limit=limit)
    try:
        out = await handler.assemble(ctx, wtype)
    except BudgetExceeded:
        return  # the floor alone does not fit this limit
    assert pairing_errors(out.messages) == [], out.messages
    assert out.snapshot.total_used <= out.snapshot.available_budget
    known = originals(history)
    for call_id, text in whole_results(out.messages):
        assert text == known[call_id]


async def test_balanced_at_1000_tokens_never_recalls_a_result_whose_call_is_gone(builtin_registry):
    """The issue's minimal case: Balanced (recall on) at a 1,000-token limit, one orphan tool message."""
    history = [
        Message("user", "Find the carrier for ORD-7008.", turn=1),
        Message("tool", '{"order": "ORD-7008", "carrier": "dhl"}', turn=1, tool_call_id="call_gone"),
        Message("assistant", "It ships with DHL.", turn=1),
        *(
            Message("user" if i % 2 == 0 else "assistant", f"Small talk {i}: " + "lunch plans " * 8, turn=2 + i // 2)
            for i in range(40)
        ),
    ]
    ctx = make_ctx(messages=history, query="Which carrier was ORD-7008 shipped with?", limit=1_000)
    out = await ContextWindowHandler(builtin_registry).assemble(ctx, DEFAULT_TYPES["balanced"])
    assert pairing_errors(out.messages) == []
    assert not any(m["role"] == "tool" for m in out.messages)
    assert "It ships with DHL." in [m["content"] for m in out.messages]  # recall ran, and found the turn


async def test_a_cleared_result_recalled_whole_is_byte_identical(builtin_registry):
    """A result whose lines are longer than a recall part (cut mid-line into parts) comes back as it was."""
    row = '{"order": "ORD-7008", "carrier": "dhl", "note": "' + "ORD-7008 note " * 70 + '"}'
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    history = [
        Message("user", "Look up ORD-7008.", turn=1),
        Message("assistant", "", turn=1, tool_calls=(call,)),
        Message("tool", row, turn=1, tool_call_id="call_1"),
        Message("assistant", "Found it.", turn=1),
        *(Message("user" if i % 2 == 0 else "assistant", f"Other topic {i}.", turn=2 + i // 2) for i in range(6)),
    ]
    ctx = make_ctx(messages=history, query="What was the note on ORD-7008?", limit=16_000)
    wtype = clearing_type(clear_tool_results_over_tokens=50)
    out = await ContextWindowHandler(builtin_registry).assemble(ctx, wtype)
    shown = whole_results(out.messages)
    assert shown == [("call_1", row)]
    recalled = out.snapshot.module("conversation_history").metadata["tool_results_recalled"]
    assert [r["shown"] for r in recalled] == ["whole"]
