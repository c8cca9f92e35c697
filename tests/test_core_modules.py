"""The three core modules: system prompt, tool definitions, conversation history."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message
from modules.conversation_history.handler import SUMMARY_BLOCK, SUMMARY_SOURCE_MESSAGES, TAIL_MARKER
from tests.fresh_builtins import new_builtins
from tests.support import conversation, make_ctx, make_tools, module_ctx, tool_call_exchange, words


@pytest.fixture
def modules(builtin_registry):
    return builtin_registry.modules


async def test_system_prompt_fills_placeholders_and_keeps_unknown_braces(modules):
    ctx = make_ctx(tools=make_tools(2), system_prompt="Hi {profile_name}. {tools_context} Keep {this} and {}.")
    c = await modules["system_prompt"].contribute(10, module_ctx(ctx))
    assert c.text() == "Hi p. You can call these tools: tool_0, tool_1. Keep {this} and {}."
    assert c.placement == "system" and not modules["system_prompt"].manifest.capabilities.condensable


async def test_tools_choose_the_richest_level_that_fits(modules):
    tools_module = modules["tool_definitions"]
    ctx = module_ctx(make_ctx(tools=make_tools(10)))
    est = ctx.tokens
    full = await tools_module.contribute(100_000, ctx)
    full_cost = est.count_tools(full.tool_schemas())
    assert full.strategy == "full" and len(full.tool_schemas()) == 10
    condensed = await tools_module.contribute(full_cost - 1, ctx)
    assert condensed.strategy == "condensed" and condensed.placement == "tools"
    assert [t.name for t in condensed.tool_schemas()] == [f"tool_{i}" for i in range(10)]  # all still callable
    schema = condensed.tool_schemas()[-1]
    assert schema.description == "Tool number 9 does a useful thing."
    assert "description" not in schema.parameters["properties"]["arg_0"]
    assert list(schema.parameters["required"]) == ["arg_0"]
    names = await tools_module.contribute(40, ctx)
    assert names.strategy == "names_only" and names.placement == "system"
    assert est.count_text_message(names.text()) <= 40 and 0 < names.metadata["listed"] < 10
    assert names.metadata["left_out"] == [f"tool_{i}" for i in range(10)]


async def test_tools_stay_full_on_later_turns_unless_configured_otherwise(modules):
    later = make_ctx(tools=make_tools(3), messages=conversation(2))
    assert (await modules["tool_definitions"].contribute(100_000, module_ctx(later))).strategy == "full"
    lean = module_ctx(later, config={"after_first_turn": "names_only"})
    assert (await modules["tool_definitions"].contribute(100_000, lean)).strategy == "names_only"
    forced = module_ctx(later, force_full=True, config={"after_first_turn": "names_only"})
    assert (await modules["tool_definitions"].contribute(100_000, forced)).strategy == "full"
    purged = make_ctx(tools=make_tools(3), messages=[replace(m, valid=False) for m in conversation(2)])
    again = module_ctx(purged, config={"after_first_turn": "names_only"})
    assert (await modules["tool_definitions"].contribute(100_000, again)).strategy == "full"  # purge resets to full


async def test_tools_condense_one_level_at_a_time(modules):
    ctx = module_ctx(make_ctx(tools=make_tools(4)))
    full = await modules["tool_definitions"].contribute(100_000, ctx)
    smaller = await modules["tool_definitions"].condense(full, 100_000, ctx)
    assert smaller.strategy == "condensed"
    assert (await modules["tool_definitions"].condense(smaller, 100_000, ctx)).strategy == "partial"


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 3000), st.integers(0, 12))
async def test_tools_never_exceed_their_budget(budget, n):
    (module,) = new_builtins("tool_definitions")  # a new instance each example, without a registry load each
    ctx = module_ctx(make_ctx(tools=make_tools(n)))
    c = await module.contribute(budget, ctx)
    cost = ctx.tokens.count_tools(c.tool_schemas()) + (ctx.tokens.count_text_message(c.text()) if c.texts() else 0)
    assert cost <= budget


async def test_history_keeps_the_newest_valid_messages_in_order(modules):
    messages = conversation(30)
    messages[-3] = Message("user", "withdrawn", turn=29, valid=False)
    ctx = module_ctx(make_ctx(messages=messages))
    c = await modules["conversation_history"].contribute(1_000, ctx)
    sent = c.messages()
    assert all(m.valid for m in sent) and "withdrawn" not in [m.content for m in sent]
    # The newest messages from the cache block's start, then (behind a marker) those just before it, each in order.
    marker = next(i for i, m in enumerate(sent) if m.content == TAIL_MARKER)
    newest, before = sent[:marker], sent[marker + 1 :]
    assert newest[-1] == messages[-1] and newest[-2] == messages[-2]
    for part in (newest, before):
        assert [m.turn for m in part if m.role != "system"] == sorted(m.turn for m in part if m.role != "system")
    assert before[-1].turn < next(m.turn for m in newest if m.role != "system")
    assert sum(ctx.tokens.count_message(m) for m in sent) <= 1_000


async def test_history_summarises_what_it_drops_within_the_budget(modules):
    ctx = module_ctx(make_ctx(messages=conversation(40)))
    c = await modules["conversation_history"].contribute(1_500, ctx)
    summary = c.messages()[0]
    assert summary.role == "system" and summary.content.startswith("Summary of the")
    assert "- User: question" in summary.content
    assert c.strategy == "sliding_window+summary" and c.metadata["summary"] is True
    assert sum(ctx.tokens.count_message(m) for m in c.messages()) <= 1_500


async def test_history_uses_the_summarizer_provider_when_configured(modules):
    class Fake:
        calls = 0

        async def summarize(self, text, *, max_tokens, instruction=""):
            Fake.calls += 1
            return "They discussed questions 1 to 30."

    import dataclasses

    ctx = module_ctx(dataclasses.replace(make_ctx(messages=conversation(40)), summarizer=Fake()))
    c = await modules["conversation_history"].contribute(1_500, ctx)
    assert "They discussed questions 1 to 30." in c.messages()[0].content
    first = Fake.calls
    assert 1 <= first <= SUMMARY_SOURCE_MESSAGES // SUMMARY_BLOCK  # one call per block looked back at
    await modules["conversation_history"].contribute(1_500, ctx)
    assert Fake.calls == first  # cached per session and block
    purged = await modules["conversation_history"].purge("s", "u")
    assert purged["purged"] >= 1


class ScriptedSummarizer:
    """A fake model that records what it is asked to summarise and answers with the block's first and last line
    numbers (so a summary shown for the wrong block would show)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def summarize(self, text, *, max_tokens, instruction=""):
        self.asked.append(text)
        numbers = [line.split(":")[1].split()[-1] for line in text.splitlines()]
        return f"- They went over {numbers[0]} to {numbers[-1]}.\n- Nothing else was said."


@pytest.mark.parametrize("cache_block", [0, 6, "auto"])
async def test_a_growing_conversation_asks_for_about_one_summary_per_block(modules, cache_block):
    """Over consecutive turns of a growing conversation, each block of older messages is summarised once: the
    summariser is called about once per ``SUMMARY_BLOCK`` messages dropped (plus the first look-back), whatever
    room each turn gives the summary, and every window stays within its budget."""
    history = modules["conversation_history"]
    model = ScriptedSummarizer()
    turns = range(20, 60)  # two messages a turn: 80 more messages, 8 blocks
    for i, n in enumerate(turns):
        budget = (1_500, 1_800, 1_300)[i % 3]  # the room differs turn to turn (a longer query, another module)
        ctx = replace(make_ctx(messages=conversation(n)), summarizer=model)
        ctx = replace(ctx, session=replace(ctx.session, id="growing"))
        ctx = module_ctx(ctx, config={"cache_block": cache_block})
        c = await history.contribute(budget, ctx)
        assert sum(ctx.tokens.count_message(m) for m in c.messages()) <= budget
        assert c.metadata["summary"] is True and "They went over" in c.messages()[0].content
    assert len(model.asked) == len(set(model.asked))  # no block summarised twice
    new_messages = 2 * len(turns)
    assert len(model.asked) <= SUMMARY_SOURCE_MESSAGES // SUMMARY_BLOCK + new_messages // SUMMARY_BLOCK + 1


@pytest.mark.parametrize("turns", [40, 41, 42, 43, 44])
async def test_block_summaries_are_shown_for_their_own_messages(modules, turns):
    """The summary shown holds the whole blocks before the window's start, in order, then the dropped part of the
    block it starts in as extracted lines (no model call); a module that made them earlier (warm) shows the same
    as a new one (cold)."""
    model = ScriptedSummarizer()
    messages = conversation(turns)
    ctx = replace(make_ctx(messages=messages), summarizer=model)
    fresh = modules["conversation_history"]
    warm = type(fresh)(fresh.manifest)
    await warm.contribute(1_500, module_ctx(ctx))
    again = await warm.contribute(1_500, module_ctx(ctx))
    cold = await type(fresh)(fresh.manifest).contribute(1_500, module_ctx(ctx))
    assert again.messages() == cold.messages()
    first_kept = again.metadata["first_kept_index"]
    end = -(-first_kept // SUMMARY_BLOCK) * SUMMARY_BLOCK  # the block the window starts in, when it is whole
    end = end if end <= len(messages) else end - SUMMARY_BLOCK
    header, *lines = again.messages()[0].content.splitlines()
    written = [line.removeprefix("- They went over ").rstrip(".") for line in lines if "went over" in line]
    spans = [tuple(int(n) for n in line.split(" to ")) for line in written]
    assert len(set(model.asked)) == len(spans) == SUMMARY_SOURCE_MESSAGES // SUMMARY_BLOCK  # a call per block
    assert len(model.asked) == 2 * len(spans)  # once by the warm module (twice asked), once by the cold one
    assert spans[-1][1] == messages[end - 1].turn  # the last whole block, at or just before the window's start
    assert all(b[0] in (a[1], a[1] + 1) for a, b in pairwise(spans))  # consecutive blocks, oldest first
    if end < first_kept:  # the messages between are said to be left out
        assert f"the {first_kept - end} just before those shown" in header
    else:
        assert header.startswith(f"Summary of the last {SUMMARY_SOURCE_MESSAGES} messages before those shown")


@pytest.mark.parametrize(("turns", "budget", "target"), [(40, 3_000, 1_500), (40, 1_500, 600), (5, 3_000, 1_500)])
async def test_history_under_a_condense_rule_is_what_condensing_would_make(modules, turns, budget, target):
    history = modules["conversation_history"]
    ctx = make_ctx(messages=conversation(turns))
    plain = module_ctx(ctx, condense_strategy="summarize")
    full = await history.contribute(budget, plain)
    size = sum(plain.tokens.count_message(m) for m in full.messages())
    two_steps = await history.condense(full, target, plain) if size > target else full
    at_once = await history.contribute(budget, module_ctx(ctx, condense_strategy="summarize", condense_to=target))
    assert at_once.messages() == two_steps.messages() and at_once.strategy == two_steps.strategy
    assert at_once.condensed is (two_steps is not full)  # marked only when it was condensed


async def test_tool_calls_and_results_stay_together_and_orphans_are_left_out(modules):
    messages = conversation(2) + tool_call_exchange(3, "call_a", 50) + conversation(1)
    orphan = Message("tool", "stray result", tool_call_id="nobody", turn=4)
    ctx = module_ctx(make_ctx(messages=[orphan, *messages]))
    full = (await modules["conversation_history"].contribute(100_000, ctx)).messages()
    assert orphan not in full
    call_index = next(i for i, m in enumerate(full) if m.tool_calls)
    assert full[call_index + 1].tool_call_id == "call_a"
    for budget in range(0, 400, 7):
        kept = (await modules["conversation_history"].contribute(budget, ctx)).messages()
        has_call = any(m.tool_calls for m in kept)
        has_result = any(m.role == "tool" for m in kept)
        assert has_call == has_result, budget


async def test_a_result_answering_another_call_never_joins_a_unit(modules):
    call = {"id": "call_a", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    messages = [
        Message("user", "look it up", turn=1),
        Message("assistant", "", turn=1, tool_calls=(call,)),
        Message("tool", "the answer to call_a", turn=1, tool_call_id="call_a"),
        Message("tool", "a stray result for call_z", turn=1, tool_call_id="call_z"),
        Message("assistant", "done", turn=1),
    ]
    kept = (
        await modules["conversation_history"].contribute(10_000, module_ctx(make_ctx(messages=messages)))
    ).messages()
    assert [m.tool_call_id for m in kept if m.role == "tool"] == ["call_a"]
    unanswered = [messages[0], messages[1], messages[3], messages[4]]  # call_a's own result is missing
    kept = (
        await modules["conversation_history"].contribute(10_000, module_ctx(make_ctx(messages=unanswered)))
    ).messages()
    assert not any(m.tool_calls or m.role == "tool" for m in kept)


async def test_history_cost_does_not_depend_on_history_length(modules):
    recent = conversation(100)
    # Sliding (cache_block 0): cache blocks align to absolute positions, which the filler shifts.
    short = module_ctx(make_ctx(messages=recent), config={"cache_block": 0})
    long = module_ctx(
        make_ctx(messages=[Message("user", "old filler", turn=0)] * 20_000 + recent), config={"cache_block": 0}
    )
    a = await modules["conversation_history"].contribute(2_000, short)
    b = await modules["conversation_history"].contribute(2_000, long)
    assert a.messages()[1:] == b.messages()[1:]  # the same window (after the summary), whatever lies behind it


async def test_a_message_too_big_for_the_window_is_left_out_whole_never_cut(modules):
    ctx = module_ctx(make_ctx(messages=[*conversation(3), Message("user", words(5000), turn=4)]))
    c = await modules["conversation_history"].contribute(500, ctx)
    assert all(m.content != words(5000) for m in c.messages())
    assert sum(ctx.tokens.count_message(m) for m in c.messages()) <= 500


async def test_history_shows_only_what_the_ifoc_phase_may_see(modules):
    made_in = ["ideate", "focus", "operate", None]
    messages = [Message("user", f"said in {p}", turn=i + 1, phase=p) for i, p in enumerate(made_in)]
    seen = {}
    for phase in ("ideate", "focus", "operate", "complete", None):
        ctx = module_ctx(make_ctx(messages=messages, phase=phase))
        c = await modules["conversation_history"].contribute(10_000, ctx)
        seen[phase] = [m.content for m in c.messages()]
    assert seen["ideate"] == ["said in ideate", "said in None"]
    assert seen["focus"] == ["said in ideate", "said in focus", "said in None"]
    assert seen["operate"] == ["said in focus", "said in operate", "said in None"]
    assert seen["complete"] == ["said in operate", "said in None"]
    assert len(seen[None]) == 4


async def test_history_start_moves_in_cache_blocks_so_the_prefix_stays_identical(modules):
    """As a chat grows past its budget, the window's start stays put for turns at a time (a byte-identical prefix
    for the provider's prompt cache) and jumps a block at once; sliding (0) moves it every turn. What the block's
    start leaves out of the sliding window follows the stable part behind a marker (the window stays full); what
    still does not fit is reported as held back."""
    history = modules["conversation_history"]
    starts, held, tails, previous = [], [], [], None
    for turns in range(20, 32):
        messages = conversation(turns)
        blocked = await history.contribute(1_500, module_ctx(make_ctx(messages=messages), config={"cache_block": 6}))
        sliding = await history.contribute(1_500, module_ctx(make_ctx(messages=messages), config={"cache_block": 0}))
        start, slide_start = blocked.metadata["first_kept_index"], sliding.metadata["first_kept_index"]
        assert start % 6 == 0 and slide_start <= start < slide_start + 6
        sent = blocked.messages()
        marker = next((i for i, m in enumerate(sent) if m.content == TAIL_MARKER), len(sent))
        assert [m for m in sent[:marker] if m.role != "system"] == list(messages[start:])  # newest whole, in order
        # what the block's start left out of the sliding window follows the marker, in order: the window stays full
        slid = [m for m in sliding.messages() if m.role != "system"]
        tail = sent[marker + 1 :]
        assert tail == slid[: len(tail)] and slid[len(tail) :] == list(messages[start:])[-(len(slid) - len(tail)) :]
        tails.append(len(tail))
        count = module_ctx(make_ctx()).tokens.count_message
        kept = [m for m in sent if m.role != "system"]
        assert blocked.metadata["held_back_tokens"] == sum(map(count, slid)) - sum(map(count, kept))
        if starts and starts[-1] == start:  # summary included: the previous window's stable part opens this one
            assert sent[:marker][: len(previous)] == previous
        starts.append(start)
        previous = sent[:marker]
        held.append(blocked.metadata["held_back_tokens"])
    moves = sum(a != b for a, b in pairwise(starts))
    assert moves <= len(starts) // 3  # 2 messages a turn, 6 a block: the start moves at most every third turn
    assert max(tails) > 0 and min(tails) == 0 and min(held) == 0


async def test_a_bad_cache_block_names_the_option(modules):
    ctx = module_ctx(make_ctx(messages=conversation(30)), config={"cache_block": "six"})
    with pytest.raises(ValueError, match="cache_block"):
        await modules["conversation_history"].contribute(1_500, ctx)


async def test_auto_cache_blocks_are_half_the_window_from_a_few_nested_sizes(modules):
    """The default ("auto"): the largest of 2, 4, 6, 8, 12, 16, 24, ... within half the messages a sliding window
    keeps; what the window used is in its metadata."""
    from modules.conversation_history.handler import block_size

    assert [block_size({}, n) for n in (0, 3, 12, 13, 17, 50, 100)] == [2, 2, 6, 6, 8, 24, 48]
    assert block_size({"cache_block": 0}, 50) == 0 and block_size({"cache_block": 10}, 4) == 10
    c = await modules["conversation_history"].contribute(3_000, module_ctx(make_ctx(messages=conversation(60))))
    assert c.metadata["cache_block"] >= 2 and c.metadata["first_kept_index"] % c.metadata["cache_block"] == 0
