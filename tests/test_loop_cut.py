"""A turn's own tool loop larger than the window (issue 32 item 1, found by session 49's held-out check,
bench/agent_shapes_bench.py): an agent that reads a 40K-token file, or runs a query of 5,000 rows, into a 4K-16K
window used to be refused (422 ``budget_exceeded``: the loop is part of the floor). Over generated agent histories
and loops of parallel calls whose results range from a line to far more than the window (hypothesis): the window
is assembled within the budget (by an independent count), every call goes with its result, every result is sent
whole or as its beginning followed by tda's note, and a loop that had to be cut goes without older history."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.context_window.base import Message
from components.context_window.handler import ContextWindowHandler
from components.context_window.loop_cut import CUT_NOTE, cut_loop
from components.context_window.token_estimator import estimator_for
from tda.builtins import DEFAULT_TYPES
from tests.support import make_ctx
from tests.test_full_window import PATIENT_S, TOOL, agent_history, as_sent, rows, tokens
from tests.test_tool_clearing import pairing_errors

NOTE = CUT_NOTE.split("{")[0]


@st.composite
def loops(draw: st.DrawFn, turn: int, limit: int) -> list[Message]:
    """1-3 steps of 1-4 parallel calls each, results of 1 row to several times the window."""
    loop: list[Message] = []
    for step in range(draw(st.integers(1, 3))):
        ids = [f"call_{step}_{k}" for k in range(draw(st.integers(1, 4)))]
        calls = tuple({"id": i, "type": "function", "function": {"name": TOOL.name, "arguments": "{}"}} for i in ids)
        loop.append(Message("assistant", draw(st.sampled_from(["", "Looking it up."])), turn=turn, tool_calls=calls))
        for i in ids:
            count = draw(st.sampled_from([1, 3, limit // 100, limit // 20]))
            loop.append(Message("tool", rows(turn, len(loop), count), turn=turn, tool_call_id=i))
    return loop


@pytest.mark.parametrize("limit", (4_000, 16_000))
@pytest.mark.parametrize("type_id", sorted(DEFAULT_TYPES))
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
async def test_a_tool_loop_larger_than_the_window_is_cut_never_refused(builtin_registry, type_id, limit, data):
    wtype = DEFAULT_TYPES[type_id]
    available = limit - limit * wtype.output_reserve_pct // 100
    history = data.draw(agent_history(limit))
    turn = history[-1].turn + 1 if history else 1
    loop = data.draw(loops(turn, limit))
    ctx = make_ctx(messages=history, query=f"Turn {turn}: which orders are open?", limit=limit, tools=[TOOL])
    out = await ContextWindowHandler(builtin_registry, timeout_s=PATIENT_S).assemble(
        dataclasses.replace(ctx, continuation=tuple(loop)), wtype
    )

    assert tokens(out.messages, out.tools) <= available
    assert pairing_errors(out.messages) == []
    sent = out.messages[len(out.messages) - len(loop) :]
    assert [m.get("tool_call_id") for m in sent] == [m.tool_call_id for m in loop]
    cut = False
    for message, original in zip(sent, loop, strict=True):
        if message["content"] != as_sent(original)["content"]:
            head = message["content"].split(NOTE)[0]
            assert NOTE in message["content"] and original.content.startswith(head.rstrip())
            cut = True
    if cut:  # the loop alone exceeds the room: nothing of the history beside it
        before = out.messages[: len(out.messages) - len(loop) - 1]
        assert not [m for m in before if m["role"] != "system"], [m["role"] for m in before]


def test_a_loop_is_cut_by_what_it_exceeds_and_no_more():
    """The results share what is left by water-filling: a small result stays whole, the large ones are cut alike, each
    still after its call; 0 excess or no result: nothing to cut."""
    tokens_ = estimator_for("gpt-4o")
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    calls = (call, {**call, "id": "d"}, {**call, "id": "e"})
    loop = (
        Message("assistant", "", tool_calls=calls),
        Message("tool", "ok", tool_call_id="c"),
        Message("tool", rows(1, 0, 400), tool_call_id="d"),
        Message("tool", rows(2, 0, 400), tool_call_id="e"),
    )
    whole = sum(tokens_.count_message(m) for m in loop)
    cut = cut_loop(loop, whole // 2, tokens_)
    assert cut is not None
    assert cut[0] == loop[0] and cut[1] == loop[1]  # the call, and the small result whole
    assert sum(tokens_.count_message(m) for m in cut) <= whole - whole // 2
    sizes = [tokens_.count(m.content) for m in cut[2:]]
    assert all(NOTE in m.content for m in cut[2:]) and abs(sizes[0] - sizes[1]) <= 8
    assert cut_loop(loop, 0, tokens_) is None and cut_loop(loop[:1], 10, tokens_) is None
    assert cut_loop(loop, whole, tokens_) is None  # not even the notes fit


def test_a_result_sent_as_content_parts_is_cut_to_its_room():
    """A result a client sent as content parts was priced as its whole parts even when cut to its note, so a unit
    holding one was never cut (``cut_unit`` gave up): its beginning now fits the room, noted."""
    from modules.conversation_history.handler import cut_unit

    tokens_ = estimator_for("gpt-4o")
    text = rows(3, 0, 200)
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    parts = ({"type": "text", "text": text[: len(text) // 2]}, {"type": "text", "text": text[len(text) // 2 :]})
    unit = (
        Message("assistant", "", tool_calls=(call,)),
        Message.from_chat({"role": "tool", "tool_call_id": "c", "content": list(parts)}),
    )
    room = tokens_.count_message(unit[1]) // 3
    cut = cut_unit(unit, room, tokens_)
    assert cut is not None and sum(tokens_.count_message(m) for m in cut) <= room
    assert NOTE in cut[1].content and text.replace("\n", "").startswith(
        cut[1].content.split(NOTE)[0][:100].replace("\n", "")
    )


async def test_the_loop_is_cut_off_the_event_loop_when_the_application_hands_a_runner(builtin_registry):
    """Cutting a 40K-token result counts it again at each try (0.05-0.3 s with tiktoken, seconds with a Hugging Face
    tokenizer): the service's runner does it, not the event loop that serves every other request."""
    ran: list[object] = []

    async def runner(work):
        ran.append(work)
        return work()

    limit = 4_000
    call = {"id": "c", "type": "function", "function": {"name": TOOL.name, "arguments": "{}"}}
    loop = (Message("assistant", "", turn=1, tool_calls=(call,)), Message("tool", rows(1, 0, 400), tool_call_id="c"))
    ctx = make_ctx(messages=[], query="Turn 1: which orders are open?", limit=limit, tools=[TOOL])
    ctx = dataclasses.replace(ctx, continuation=loop, offload=runner)
    out = await ContextWindowHandler(builtin_registry, timeout_s=PATIENT_S).assemble(ctx, DEFAULT_TYPES["balanced"])

    assert NOTE in out.messages[-1]["content"]
    assert [getattr(work, "func", None) for work in ran] == [cut_loop]
