"""Summaries made ahead (issue 32, item 5): once a session's turn is answered, conversation_history writes the block
summary its next call's window will ask for, in the background (``ContextWindowHandler.ahead``), so that call waits
for no model call of its own. The oracle is the module as it was before: a fresh registry whose handler never works
ahead and writes every summary inside the window that needs it. The windows must be the same, call by call, with the
same summaries asked for (never a block twice); a guess that turns out wrong (the client edited its history, the next
call has a smaller budget) costs one unused summary at most and leaves the window as the oracle's."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections.abc import Sequence
from typing import Any

import pytest

from components.context_window.base import (
    AssemblyContext,
    Directives,
    InMemoryMessages,
    Message,
    MessagePage,
    ToolSchema,
)
from components.context_window.handler import ContextWindowHandler
from components.context_window.token_estimator import estimator_for
from tda.builtins import DEFAULT_TYPES, module_registry
from tests.agent_session import TOOLS, call_id, customer, orders, question, tool_call
from tests.support import make_ctx

TYPE = DEFAULT_TYPES["balanced"]
LIMIT = 16_000
PATIENT_S = 60.0
"""No module may time out on a loaded machine: the windows are compared."""


class Model:
    """A summarizer that answers with the transcript's first line, and records each text it was asked to summarise
    and whether a window was being assembled then (the caller says so)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, bool]] = []
        self.assembling = False

    async def summarize(self, text: str, *, max_tokens: int, instruction: str = "") -> str:
        self.asked.append((text, self.assembling))
        return f"- {text.splitlines()[0][:120]}"

    @property
    def inside(self) -> list[str]:
        """What was asked while a window was assembled: what that call waited for."""
        return [text for text, assembling in self.asked if assembling]


def agent_turn(t: int, answer: str = "") -> list[Message]:
    """user -> tool call -> tool result (20 rows, ~1,000 tokens) -> answer."""
    return [
        Message("user", question(t), turn=t),
        Message("assistant", "", turn=t, tool_calls=(tool_call(t),)),
        Message("tool", orders(t, 20), turn=t, tool_call_id=call_id(t)),
        Message("assistant", answer or f"Customer {customer(t)} has open orders; see the table for totals.", turn=t),
    ]


def first_step(history: Sequence[Message], t: int, model: Model, limit: int = LIMIT) -> AssemblyContext:
    """Turn ``t``'s first call of session "ahead" (its question, the tools) over ``history``."""
    ctx = make_ctx(messages=history, query=question(t), tools=[ToolSchema.from_openai(TOOLS[0])], limit=limit)
    session = dataclasses.replace(ctx.session, id="ahead")
    return dataclasses.replace(
        ctx, session=session, summarizer=model, query_message=Message("user", question(t), turn=t)
    )


class Client:
    """A session's first steps, one per turn, through a handler over its own modules (caches of their own)."""

    def __init__(self, works_ahead: bool) -> None:
        self.handler = ContextWindowHandler(module_registry(entry_point_group=None).load(), timeout_s=PATIENT_S)
        self.model = Model()
        self.works_ahead = works_ahead
        self.snapshots: list[Any] = []

    async def call(self, ctx: AssemblyContext) -> list[dict[str, Any]]:
        self.model.assembling = True
        try:
            out = await self.handler.assemble(ctx, TYPE)
        finally:
            self.model.assembling = False
        self.snapshots.append(out.snapshot)
        return out.messages

    async def answered(self, ctx: AssemblyContext, turn: Sequence[Message]) -> None:
        """The turn ``ctx`` asked is over (``turn``: its messages, the reply last): the work ahead, done."""
        if self.works_ahead:
            self.handler.ahead(ctx, TYPE, turn)
            await asyncio.gather(*self.handler.background.jobs)


async def session(client: Client, turns: range) -> tuple[list[Message], list[list[dict[str, Any]]]]:
    """``turns`` turns' first steps, each turn answered after its call; the history after them and the windows."""
    history: list[Message] = []
    windows = []
    for t in turns:
        ctx = first_step(history, t, client.model)
        windows.append(await client.call(ctx))
        if t != turns[-1]:  # the last turn's next call never comes
            await client.answered(ctx, agent_turn(t))
        history += agent_turn(t)
    return history, windows


async def test_the_next_calls_summary_is_made_ahead_and_the_windows_are_the_same():
    ahead, oracle = Client(works_ahead=True), Client(works_ahead=False)
    _, windows = await session(ahead, range(1, 17))
    _, expected = await session(oracle, range(1, 17))

    assert windows == expected  # call by call, byte for byte
    assert len(oracle.model.inside) >= 3  # the session drops block after block: the oracle waited for each summary
    assert ahead.model.inside == []  # every one was made ahead: no call waited for a model call of its own
    assert sorted(text for text, _ in ahead.model.asked) == sorted(oracle.model.inside)  # the same, each once
    reported = [c for s in ahead.snapshots for c in s.auxiliary_calls if c.purpose == "history_summary"]
    assert len(reported) == len(ahead.model.asked) and all(c.ahead for c in reported)  # each counted by one window


@pytest.mark.parametrize("guess", ["edited history", "smaller budget"])
async def test_a_wrong_guess_costs_one_unused_summary_at_most_and_the_window_is_the_oracles(guess: str):
    """The session goes on until a summary is made ahead; then its next call is not the one guessed."""
    ahead, oracle = Client(works_ahead=True), Client(works_ahead=False)
    history: list[Message] = []
    for t in range(1, 30):
        ctx = first_step(history, t, ahead.model)
        await ahead.call(ctx)
        await oracle.call(first_step(history, t, oracle.model))
        made = len(ahead.model.asked)
        await ahead.answered(ctx, agent_turn(t))
        history += agent_turn(t)
        if len(ahead.model.asked) > made:
            break
    else:
        pytest.fail("no summary was made ahead")
    if guess == "edited history":  # the client sends its last answer otherwise, and the turn's question edited
        history[-1] = dataclasses.replace(history[-1], content="Edited: the answer the client keeps instead.")
        history[-4] = dataclasses.replace(history[-4], content=history[-4].content + " (edited)")
        next_calls = [first_step(history, t + 1, model) for model in (ahead.model, oracle.model)]
    else:  # the next call's window is smaller than the one guessed (a lower limit)
        next_calls = [first_step(history, t + 1, model, limit=LIMIT * 3 // 4) for model in (ahead.model, oracle.model)]
    window = await ahead.call(next_calls[0])
    expected = await oracle.call(next_calls[1])

    assert window == expected
    asked, oracle_asked = [text for text, _ in ahead.model.asked], [text for text, _ in oracle.model.asked]
    assert len(asked) == len(set(asked))  # never a block twice
    assert set(oracle_asked) <= set(asked) and len(asked) <= len(oracle_asked) + 1  # one unused summary at most


class Read(InMemoryMessages):
    """A history that counts the messages read from it."""

    def __init__(self, messages: Sequence[Message]) -> None:
        super().__init__(messages)
        object.__setattr__(self, "read", 0)

    async def page(self, cursor: Any, limit: int) -> MessagePage:
        page = await super().page(cursor, limit)
        object.__setattr__(self, "read", self.read + len(page.messages))
        return page


@pytest.mark.parametrize("limit", [1_000_000, LIMIT])
async def test_the_work_ahead_reads_a_history_its_window_holds_whole_only_when_the_next_turn_may_not_fit(limit: int):
    """A long session under a large window (a 1M-token model) sends its whole history every turn: the next turn's
    history, the turn joined, fits too and summarises nothing, so the work ahead walks none of it (it walked it all
    again, each turn: a sixth of a turn's CPU at 2,000 native turns). A history the window cannot hold is walked."""
    client = Client(works_ahead=True)
    history: list[Message] = [m for t in range(1, 21) for m in agent_turn(t)]
    source = Read(history)
    ctx = first_step(history, 21, client.model, limit=limit)
    ctx = dataclasses.replace(ctx, session=dataclasses.replace(ctx.session, history=source))
    window = await client.call(ctx)
    read = source.read

    await client.answered(ctx, agent_turn(21))

    assert (len(window) > len(history)) == (limit > LIMIT)  # the large window holds every message, the 16K one not
    assert (source.read == read) == (limit > LIMIT)
    assert client.model.asked == [] or limit == LIMIT


async def test_a_newest_turn_asked_again_for_the_same_room_is_not_cut_again(monkeypatch: pytest.MonkeyPatch):
    """The work ahead cuts the newest turn for the next call when it outgrows a window's room (the condense rule's);
    that call reads the same turn back from the store (equal messages, other objects) and asks for the same room:
    the cut is made once (it cost ~0.6 ms of tokenising a call at 100 gateway turns) and is the same cut."""
    module = module_registry(entry_point_group=None).load().get("conversation_history")
    handler = sys.modules[type(module).__module__]
    made: list[int] = []
    cut_turn = handler.cut_turn

    def counted(units: Sequence[tuple[Message, ...]], room: int, tokens: Any) -> Any:
        made.append(room)
        return cut_turn(units, room, tokens)

    monkeypatch.setattr(handler, "cut_turn", counted)
    history = [m for t in range(1, 6) for m in agent_turn(t)]
    read_back = [dataclasses.replace(m) for m in history]
    windows = []
    for messages in (history, read_back, history):
        ctx = dataclasses.replace(make_ctx(messages=messages, query=question(6)), summarizer=None)
        ctx = ctx.for_module(Directives(), estimator_for(ctx.model))
        windows.append(await module.contribute(1_000, ctx))  # less than the newest turn's ~2,100 tokens

    assert made == [made[0]]  # cut once
    assert windows[0].units == windows[1].units == windows[2].units
    assert any("is not shown]" in m.content for unit in windows[0].units for m in unit)  # the turn came cut


async def test_a_summary_block_named_again_is_digested_once(monkeypatch: pytest.MonkeyPatch):
    """Every call's plans (its windows', and the work ahead's for the next call) name their summary blocks by a digest
    of the blocks' transcripts: ~10 blocks a call at 100 gateway turns, nearly all named before by the same messages.
    Each block is digested once while its messages are the same objects, and the windows are the oracle's."""
    ahead, oracle = Client(works_ahead=True), Client(works_ahead=False)
    module = ahead.handler.modules.get("conversation_history")
    handler = sys.modules[type(module).__module__]
    digested: list[str] = []
    content_key = handler.content_key

    def counted(*parts: Any) -> str:
        digested.append(parts[0])
        return content_key(*parts)

    monkeypatch.setattr(handler, "content_key", counted)
    _, windows = await session(ahead, range(1, 17))
    _, expected = await session(oracle, range(1, 17))

    assert windows == expected
    assert len(set(digested)) >= 3  # blocks were named (and summarised: the session drops block after block)
    assert len(digested) == len(set(digested))  # each once


async def test_the_work_ahead_makes_a_context_only_for_the_modules_that_work_ahead():
    """``ContextWindowHandler.ahead`` hands the next turn's context to each module that does work ahead (overrides
    ``ContextModule.ahead``: conversation_history among the built-ins) and makes no module context (options,
    directives, a metered summarizer: ~20 us each) for the others, which would return None. Before, every active
    module of the type got one (nine of Balanced's, a session call's work ahead twice a turn)."""
    client = Client(works_ahead=True)
    made: list[str] = []
    module_ctx = client.handler._module_ctx

    def counted(run: Any, slot: Any) -> AssemblyContext:
        made.append(slot.module_id)
        return module_ctx(run, slot)

    client.handler._module_ctx = counted  # type: ignore[method-assign]
    history = [m for t in range(1, 4) for m in agent_turn(t)]
    ctx = first_step(history, 4, client.model)
    await client.call(ctx)
    made.clear()
    await client.answered(ctx, agent_turn(4))
    assert made == ["conversation_history"]
