"""A recall window a tool loop's later step asks for again is the first step's, made once (modules/conversation_history
/asked.py)."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import pytest

from components.context_window.base import Directives, Message, Session
from components.context_window.token_estimator import estimator_for
from tda.builtins import module_registry
from tests.agent_session import call_id, orders, question, tool_call
from tests.support import make_ctx
from tests.test_summaries_ahead import agent_turn

BUDGET = 12_000


def _step(messages: list[Message], continuation: tuple[Message, ...] = (), **session: Any) -> Any:
    """A call of session "loop" over ``history`` asking about an early turn (so the window recalls), as the gateway
    makes it: the client's conversation as a list, the turn's tool loop so far as its continuation."""
    ctx = make_ctx(messages=messages, query=question(3))
    ctx = dataclasses.replace(ctx, session=dataclasses.replace(ctx.session, id="loop", **session))
    ctx = dataclasses.replace(ctx, continuation=continuation, summarizer=None)
    return ctx.for_module(Directives(config={"recall_pct": 80.0}), estimator_for(ctx.model))


@pytest.fixture
def packs(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[int]]:
    """The history module, and the rooms its recall packed (one a recall window made)."""
    module = module_registry(entry_point_group=None).load().get("conversation_history")
    handler = sys.modules[type(module).__module__]
    rooms: list[int] = []
    packed = handler._Packing.packed

    def counted(packing: Any, *args: Any) -> Any:
        rooms.append(packing.room)
        return packed(packing, *args)

    monkeypatch.setattr(handler._Packing, "packed", counted)
    return module, rooms


async def test_a_later_step_asking_the_first_step_s_recall_window_gets_it_made_once(packs: tuple[Any, list[int]]):
    """Step 2 of a turn asks for step 1's window (the same room, the same query, the client's conversation sent again
    with the same messages): it is handed step 1's window, not recalled and packed again (~0.8 ms at 100 gateway
    turns). Another room, or a conversation that differs by one message, is made anew."""
    module, rooms = packs
    history = [m for t in range(1, 41) for m in agent_turn(t)]
    loop = (Message("assistant", "", turn=41, tool_calls=(tool_call(41),)),)
    loop += (Message("tool", orders(41, 20), turn=41, tool_call_id=call_id(41)),)
    first = await module.contribute(BUDGET, _step(history))
    assert first.strategy == "newest+recall", {k: v for k, v in first.metadata.items() if "recall" in k}
    assert len(rooms) == 1
    again = await module.contribute(BUDGET, _step(list(history), loop))
    assert again == first and len(rooms) == 1  # the same window, not packed again

    smaller = await module.contribute(BUDGET - 500, _step(list(history), loop))
    assert len(rooms) == 2 and smaller != first
    edited = [*history[:-1], dataclasses.replace(history[-1], content=history[-1].content + " (edited)")]
    await module.contribute(BUDGET, _step(edited, loop))
    assert len(rooms) == 3  # a conversation not the same: recalled again
    later = await module.contribute(BUDGET, _step(list(history), loop, current_turn=42))
    assert len(rooms) == 4 and later.units  # another turn: recalled again


async def test_a_history_read_from_the_store_is_recalled_again_each_time(packs: tuple[Any, list[int]]):
    """Only a conversation held whole (the gateway's) is compared: a stored history, read page by page, says nothing
    of its messages before it is walked, so its window is made each time."""
    module, rooms = packs
    history = [m for t in range(1, 41) for m in agent_turn(t)]

    class Paged:
        def __init__(self) -> None:
            self.inner = Session("x", messages=history).message_source()
            self.total, self.last_turn = self.inner.total, self.inner.last_turn

        async def page(self, cursor: Any, limit: int) -> Any:
            return await self.inner.page(cursor, limit)

    windows = [await module.contribute(BUDGET, _step([], history=Paged())) for _ in range(2)]
    assert windows[0].strategy == "newest+recall" and len(rooms) == 2
