"""The history as an async, paged source: the history module reads only the pages its window needs, gives the
same window as from a list, and trusts counts stored with a message instead of re-tokenising it."""

from __future__ import annotations

import dataclasses
from typing import Any

import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import (
    InMemoryMessages,
    Message,
    MessagePage,
    Session,
    newest_first,
)
from components.context_window.token_estimator import TokenEstimator, counts_to_store
from tda.builtins import module_registry
from tests.fresh_builtins import new_builtins
from tests.support import conversation, make_ctx, module_ctx, tool_call_exchange


class CountingSource:
    """A MessageSource over a list that records how many messages it handed out (like a database would read)."""

    def __init__(self, messages: list[Message]) -> None:
        self._memory = InMemoryMessages(messages)
        self.read = 0
        self.pages = 0

    @property
    def total(self) -> int:
        return self._memory.total

    @property
    def last_turn(self) -> int:
        return self._memory.last_turn

    async def page(self, cursor: Any, limit: int) -> MessagePage:
        page = await self._memory.page(cursor, limit)
        self.read += len(page.messages)
        self.pages += 1
        return page


def _paged(ctx, source):
    return dataclasses.replace(ctx, session=dataclasses.replace(ctx.session, messages=(), history=source))


async def test_a_walk_yields_every_message_newest_first_with_its_list_position():
    messages = conversation(150)  # 300 messages: several pages
    walked = [(i, m) async for i, m in newest_first(InMemoryMessages(messages))]
    assert walked == [(i, messages[i]) for i in range(len(messages) - 1, -1, -1)]


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(0, 700),
    end=st.integers(-5, 720),
    count=st.integers(0, 300),
    phase=st.sampled_from([None, "focus", "operate"]),
    data=st.data(),
)
async def test_the_messages_before_a_position_are_those_a_list_holds_there(size, end, count, phase, data):
    """``positioned_older_than`` over a paged source (pages newer than ``end`` passed over, the page holding it read
    from ``end`` back) gives what slicing the list gives: the valid messages the phase may see, with positions."""
    from components.context_window.phases import visible
    from modules.conversation_history.handler import positioned_older_than

    phases = data.draw(st.lists(st.sampled_from([None, "ideate", "focus", "operate"]), min_size=size, max_size=size))
    invalid = data.draw(st.sets(st.integers(0, max(size - 1, 0)), max_size=size // 10 + 1))
    messages = [Message("user", f"m{i}", phase=phases[i], valid=i not in invalid) for i in range(size)]
    expected = [
        (i, m) for i, m in enumerate(messages) if end - count <= i < end and m.valid and visible(m.phase, phase)
    ]
    assert await positioned_older_than(InMemoryMessages(messages), end, count, phase) == expected


async def test_the_window_reads_only_the_newest_pages_of_a_long_history(builtin_registry):
    history = builtin_registry.modules["conversation_history"]
    messages = conversation(5_000)  # 10,000 messages
    source = CountingSource(messages)
    ctx = module_ctx(_paged(make_ctx(messages=()), source))
    c = await history.contribute(2_000, ctx)
    kept = c.messages()
    assert messages[-1] in kept and c.metadata["messages_total"] == 10_000  # older ones may follow, behind a marker
    # What the window holds, plus the summary's look-back, rounded up to the pages: far from 10,000.
    assert len(kept) < 60 and source.read <= 32 + 128 and source.pages <= 2


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 80), st.integers(0, 6_000), st.booleans())
async def test_a_paged_source_gives_the_same_window_as_a_list(turns, budget, with_tools):

    (history,) = new_builtins("conversation_history")  # a new instance each example, without a registry load each
    messages = conversation(turns, words_per_message=15)
    if with_tools:
        messages[turns // 2 : turns // 2] = tool_call_exchange(turns // 2, "call_x", 20)
    listed = module_ctx(dataclasses.replace(make_ctx(messages=messages), session=Session("a", messages=messages)))
    paged = module_ctx(_paged(make_ctx(messages=()), CountingSource(messages)))
    paged = dataclasses.replace(paged, session=dataclasses.replace(paged.session, id="b"))
    a = await history.contribute(budget, listed)
    b = await history.contribute(budget, paged)
    assert a.messages() == b.messages() and a.metadata == b.metadata


def test_the_turn_number_comes_from_the_source_header():
    source = CountingSource(conversation(7))
    assert Session("s", history=source).turn_number == 8 and source.pages == 0


def test_stored_counts_follow_the_cookbook_accounting_per_encoding():
    message = Message("assistant", "Looking it up — 42 kettles.", name="agent")
    counts = counts_to_store(message)
    for name in ("o200k_base", "cl100k_base"):
        enc = tiktoken.get_encoding(name)
        # OpenAI cookbook: 3 per message, every field's tokens, 1 more for a name.
        expected = 3 + len(enc.encode("assistant")) + len(enc.encode(message.content)) + 1 + len(enc.encode("agent"))
        assert counts[name] == expected


def test_a_message_with_stored_counts_costs_the_same_and_is_not_tokenised_again():
    plain = Message("user", "How many kettles came back in March, and why?")
    stored = dataclasses.replace(plain, tokens=counts_to_store(plain))
    fresh, reading = TokenEstimator("o200k_base"), TokenEstimator("o200k_base")
    misses = reading.misses, fresh.misses
    assert reading.count_message(stored) == fresh.count_message(plain) == stored.tokens["o200k_base"]
    assert reading.misses == misses[0] and fresh.misses > misses[1]  # nothing tokenised to read the stored count


def test_a_stored_count_for_another_encoding_is_not_used():
    plain = Message("user", "Returns by region, please.")
    only_cl100k = dataclasses.replace(plain, tokens={"cl100k_base": 999})
    est = TokenEstimator("o200k_base")
    assert est.count_message(only_cl100k) == TokenEstimator("o200k_base").count_message(plain)


async def test_a_store_following_the_documented_contract_is_counted_as_the_provider_counts():
    """``Message.tokens`` is the whole message's count: a store that fills it from the cookbook formula (written
    independently in tests/oracle.py) gets a window whose total is the oracle's count of what was sent."""
    from components.context_window.handler import ContextWindowHandler
    from tda.builtins import DEFAULT_TYPES
    from tests.oracle import cookbook_message_tokens, cookbook_tokens

    plain = conversation(20, 30)  # 40 messages
    stored = [
        dataclasses.replace(m, tokens={"o200k_base": cookbook_message_tokens(m.to_chat(), "gpt-4o")}) for m in plain
    ]
    handler = ContextWindowHandler(module_registry(entry_point_group=None).load(), remember_sessions=0)
    windows = []
    for history in (plain, stored):
        ctx = make_ctx(limit=100_000, history=InMemoryMessages(tuple(history)))
        windows.append(await handler.assemble(ctx, DEFAULT_TYPES["balanced"]))
    plain_window, stored_window = windows
    assert stored_window.messages == plain_window.messages and len(stored_window.messages) >= 42
    assert stored_window.snapshot.total_used == plain_window.snapshot.total_used
    assert stored_window.snapshot.total_used == cookbook_tokens(stored_window.messages, "gpt-4o")


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 60), st.integers(0, 5_000), st.integers(0, 5_000), st.booleans(), st.booleans())
async def test_a_second_window_in_one_assembly_is_the_window_built_afresh(turns, first, second, with_tools, clearing):
    """A surplus re-ask (more budget) or a condense (less) in the same assembly goes on from the walk already made;
    what it gives must be what a fresh walk at that budget gives."""

    (history,) = new_builtins("conversation_history")  # a new instance each example, without a registry load each
    messages = conversation(turns, words_per_message=15)
    if with_tools:
        messages[turns // 2 : turns // 2] = tool_call_exchange(turns // 2, "call_x", 60)
    config = {"recall_pct": 0, **({"clear_tool_results_over_tokens": 40} if clearing else {})}
    shared = module_ctx(_paged(make_ctx(messages=()), CountingSource(messages)), config=config)
    await history.contribute(first, shared)
    again = await history.contribute(second, shared)
    fresh = await history.contribute(
        second, module_ctx(_paged(make_ctx(messages=()), CountingSource(messages)), config=config)
    )
    assert again.messages() == fresh.messages() and again.metadata == fresh.metadata
