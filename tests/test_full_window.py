"""A full window, as a general guarantee (issue 32, item 1), over generated agent histories (hypothesis): whenever the
history exceeds the room, every shipped window type at 4K, 16K and 128K uses at least 80% of the available budget,
keeps the newest complete turn (its question, calls, results and answer; a result may be cut, never dropped) and
never goes over the budget, also when the newest turn's result alone is larger than the whole window (the turn comes
cut, its question and answer whole). Without tools offered: windows a tool loop may follow are
tests/test_tool_loop_window.py's. Counts are an independent oracle's (``tokens``: OpenAI's formula over tiktoken,
tools by litellm.token_counter), the budget is the limit less the type's output reserve, computed here."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.context_window.base import Message, ToolSchema
from components.context_window.handler import ContextWindowHandler
from components.context_window.token_estimator import counts_to_store
from tda.builtins import DEFAULT_TYPES
from tests.oracle import cookbook_tokens, litellm_tools_tokens
from tests.support import make_ctx
from tests.test_tool_clearing import pairing_errors

MODEL = "gpt-4o"
TOOL = ToolSchema(
    name="lookup_orders",
    description="Look up a customer's orders: one row per order with its status, amount and region.",
    parameters={"type": "object", "properties": {"customer": {"type": "string"}}, "required": ["customer"]},
)
LIMITS = (4_000, 16_000, 128_000)


def rows(turn: int, call: int, count: int) -> str:
    return json.dumps(
        [
            {"order": f"ORD-{turn:03d}{call}{i:03d}", "status": ("open", "shipped")[i % 2], "amount": 10 + i}
            for i in range(count)
        ]
    )


@st.composite
def agent_turn(draw: Any, turn: int, max_rows: int) -> list[Message]:
    """user -> 0 to 2 tool steps (1-2 calls each, every call answered) -> answer."""
    out = [Message("user", f"Turn {turn}: which orders of customer CUST-{turn:03d} are open?", turn=turn)]
    for step in range(draw(st.integers(0, 2))):
        ids = [f"call_{turn}_{step}_{c}" for c in range(draw(st.integers(1, 2)))]
        arguments = json.dumps({"customer": f"CUST-{turn:03d}"})
        calls = tuple(
            {"id": i, "type": "function", "function": {"name": TOOL.name, "arguments": arguments}} for i in ids
        )
        out.append(Message("assistant", "", turn=turn, tool_calls=calls))
        out += [
            Message("tool", rows(turn, c, draw(st.integers(1, max_rows))), turn=turn, tool_call_id=call_id)
            for c, call_id in enumerate(ids)
        ]
    words = draw(st.integers(3, 120))
    out.append(Message("assistant", f"Customer CUST-{turn:03d}: " + "open orders listed above. " * words, turn=turn))
    return out


@st.composite
def agent_history(draw: Any, limit: int) -> list[Message]:
    max_rows = max(4, limit // 400)  # a result of up to ~a tenth of the window
    turns = draw(st.integers(2, 12 + limit // 4_000))
    history = [m for t in range(1, turns) for m in draw(agent_turn(t, max_rows))]
    if draw(st.booleans()):  # a newest turn whose result alone is larger than the whole window (~22 tokens a row)
        return history + draw(huge_turn(turns, limit // 22 + draw(st.integers(0, limit // 40))))
    return history + draw(agent_turn(turns, max_rows))


@st.composite
def huge_turn(draw: Any, turn: int, big_rows: int) -> list[Message]:
    """An agent turn (see ``agent_turn``) with one more step whose result has ``big_rows`` rows."""
    out = draw(agent_turn(turn, 4))
    call_id = f"call_{turn}_big"
    arguments = json.dumps({"customer": f"CUST-{turn:03d}"})
    call = {"id": call_id, "type": "function", "function": {"name": TOOL.name, "arguments": arguments}}
    at = draw(st.integers(1, len(out) - 1))  # after the question, before the answer, between steps
    while out[at].role == "tool":
        at += 1
    big = [Message("assistant", "", turn=turn, tool_calls=(call,))]
    big.append(Message("tool", rows(turn, 9, big_rows), turn=turn, tool_call_id=call_id))
    return out[:at] + big + out[at:]


def as_sent(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = list(message.tool_calls)
    if message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    return out


def tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
    """A request's tokens as the provider counts them: its messages by OpenAI's published formula, each text whole
    (``litellm.token_counter`` encodes a long text in 1,024-character chunks and drifts up by up to a token a chunk:
    docs/guarantees.md), and its tools as litellm counts them (tda never charges tools less)."""
    sent = [m if m.get("content") is not None else {**m, "content": ""} for m in messages]
    return cookbook_tokens(sent, MODEL) + litellm_tools_tokens(tools or (), MODEL)


PATIENT_S = 60.0
"""The modules' timeout here: what is tested is the window's fill, not speed (a 128K window over a long history
takes a second or two on a loaded machine, past the default 2 s, and a module that times out contributes nothing)."""


def newest_turn(history: list[Message]) -> list[Message]:
    start = max(i for i, m in enumerate(history) if m.role == "user")
    return history[start:]


def assert_newest_turn_kept(window: list[dict[str, Any]], turn: list[Message]) -> None:
    """Question and answer as they were, every call with its result (a result's text may be cut)."""
    question, answer = turn[0], turn[-1]
    assert {"role": "user", "content": question.content} in window
    assert answer.content in [m.get("content") for m in window if m["role"] == "assistant"]
    results = {m["tool_call_id"] for m in window if m["role"] == "tool"}
    for message in turn:
        if message.role == "tool":
            assert message.tool_call_id in results, f"the newest turn's result {message.tool_call_id} was dropped"


@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("type_id", sorted(DEFAULT_TYPES))
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
@given(data=st.data(), asked=st.integers(1, 40))
async def test_a_history_over_the_room_fills_the_window_and_keeps_the_newest_turn(
    builtin_registry, type_id, limit, data, asked
):
    wtype = DEFAULT_TYPES[type_id]
    available = limit - limit * wtype.output_reserve_pct // 100
    history = data.draw(agent_history(limit))
    if tokens([as_sent(m) for m in history]) <= available:
        return  # the whole history fits: nothing to fill
    query = f"Turn {history[-1].turn + 1}: and the open orders of customer CUST-{asked:03d}?"
    ctx = make_ctx(messages=history, query=query, limit=limit)  # no tools: see the module's ``_fitted_tail``
    out = await ContextWindowHandler(builtin_registry, timeout_s=PATIENT_S).assemble(ctx, wtype)
    used = tokens(out.messages, out.tools)
    assert used <= available, (used, available)
    assert used >= 0.8 * available, (used, available, out.snapshot.decisions)
    assert pairing_errors(out.messages) == []
    assert_newest_turn_kept(out.messages, newest_turn(history))


def one_call_turn(turn: int, count: int) -> list[Message]:
    """user -> one call -> its result of ``count`` rows -> answer (a fixed turn, no drawing)."""
    call = {"id": f"call_{turn}", "type": "function", "function": {"name": TOOL.name, "arguments": "{}"}}
    return [
        Message("user", f"Turn {turn}: which orders of customer CUST-{turn:03d} are open?", turn=turn),
        Message("assistant", "", turn=turn, tool_calls=(call,)),
        Message("tool", rows(turn, 0, count), turn=turn, tool_call_id=f"call_{turn}"),
        Message("assistant", f"Customer CUST-{turn:03d}: " + "open orders listed above. " * 20, turn=turn),
    ]


@pytest.mark.parametrize("type_id", sorted(DEFAULT_TYPES))
async def test_a_newest_turn_larger_than_the_window_comes_cut_and_older_turns_give_way(builtin_registry, type_id):
    """Issue 32's failing case: a 4K limit, older turns, and a newest turn whose result has 400 rows (larger than the
    whole history room). The turn is sent, its result cut with a note; no older turn is shown beside it."""
    limit = 4_000
    wtype = DEFAULT_TYPES[type_id]
    available = limit - limit * wtype.output_reserve_pct // 100
    history = [m for t in range(1, 6) for m in one_call_turn(t, 3)] + one_call_turn(6, 400)
    ctx = make_ctx(messages=history, query="Turn 7: and the open orders of customer CUST-002?", limit=limit)
    out = await ContextWindowHandler(builtin_registry, timeout_s=PATIENT_S).assemble(ctx, wtype)
    assert tokens(out.messages, out.tools) <= available
    assert pairing_errors(out.messages) == []
    assert_newest_turn_kept(out.messages, newest_turn(history))
    big = next(m for m in out.messages if m.get("tool_call_id") == "call_6")
    assert big["content"].endswith("tokens, is not shown]")
    shown = " ".join(m["content"] for m in out.messages)
    assert not any(f"CUST-{t:03d}:" in shown or f"ORD-{t:03d}0" in shown for t in range(1, 6))


@pytest.mark.parametrize("type_id", sorted(DEFAULT_TYPES))
async def test_a_cut_newest_turn_is_the_same_when_its_messages_carry_stored_counts(builtin_registry, type_id):
    """A stored session's messages (and a gateway conversation, counted once) carry their counts: a result replaced
    by its cut note is priced as the note, not as the whole result, so the window is the one uncounted messages get."""
    history = [m for t in range(1, 6) for m in one_call_turn(t, 3)] + one_call_turn(6, 400)
    stored = [dataclasses.replace(m, tokens=counts_to_store(m)) for m in history]
    windows = []
    for messages in (history, stored):
        ctx = make_ctx(messages=messages, query="Turn 7: and the open orders of customer CUST-002?", limit=4_000)
        out = await ContextWindowHandler(builtin_registry, timeout_s=PATIENT_S).assemble(ctx, DEFAULT_TYPES[type_id])
        windows.append(out.messages)
    assert windows[1] == windows[0]
