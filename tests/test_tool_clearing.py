"""Old tool results cleared to a short reference (the call and its pairing kept), in batches so the window's prefix
stays byte-stable, and recalled when the question needs them. Oracles: litellm.token_counter for the figure in the
reference, a separately written pairing check (OpenAI's rule: an assistant message with tool_calls is followed at
once by one tool message per call id, and a tool message only ever answers such a call), and the lines planted in
the results. The figure in a reference is checked by the cookbook formula over tiktoken (tests/oracle.py): on texts
over ~2,000 characters litellm.token_counter counts a few tokens more, as it encodes them in fixed-size chunks."""

from __future__ import annotations

import statistics
from typing import Any

import litellm
import pytest

from components.context_window.base import Message
from components.context_window.handler import ContextWindowHandler
from components.context_window.window_type import ContextWindowType
from tda.builtins import DEFAULT_TYPES
from tests.oracle import cookbook_message_tokens
from tests.support import make_ctx, module_ctx

CARRIERS = ["ups", "fedex", "dhl", "usps", "tnt", "aramex", "gls", "dpd"]


def result_text(turn: int, lines: int = 40) -> str:
    return "\n".join(
        f"order {turn * 1000 + i}: shipped from warehouse {i % 7} by {CARRIERS[(turn + i) % 8]}" for i in range(lines)
    )


def exchange(turn: int, lines: int = 40) -> list[Message]:
    call = {"id": f"call_{turn}", "type": "function", "function": {"name": "search_orders", "arguments": "{}"}}
    return [
        Message("user", f"Which orders shipped in batch {turn}?", turn=turn),
        Message("assistant", "", turn=turn, tool_calls=(call,)),
        Message("tool", result_text(turn, lines), turn=turn, tool_call_id=f"call_{turn}"),
        Message("assistant", f"Batch {turn} has {lines} orders.", turn=turn),
    ]


def chat(turns: int, lines: int = 40) -> list[Message]:
    return [m for t in range(1, turns + 1) for m in exchange(t, lines)]


def pairing_errors(messages: list[dict[str, Any]]) -> list[str]:
    """OpenAI's rule, written apart from tda's units: every tool_calls id answered by the tool messages right after,
    and no tool message anywhere else."""
    errors, i = [], 0
    while i < len(messages):
        m = messages[i]
        if m["role"] == "tool":
            errors.append(f"tool message {m.get('tool_call_id')} at {i} answers no call just before it")
            i += 1
            continue
        i += 1
        if m["role"] == "assistant" and m.get("tool_calls"):
            wanted = {c["id"] for c in m["tool_calls"]}
            answered = set()
            while i < len(messages) and messages[i]["role"] == "tool":
                answered.add(messages[i]["tool_call_id"])
                i += 1
            if answered != wanted:
                errors.append(f"calls {sorted(wanted)} answered by {sorted(answered)}")
    return errors


def clearing_type(**config: Any) -> ContextWindowType:
    """Balanced with ``config`` for conversation_history; without recall of older history unless ``recall_pct``
    is given (it brings older units back by relevance: a separate feature with its own tests)."""
    base = DEFAULT_TYPES["balanced"]
    history = base.modules["conversation_history"]
    slot = history.model_copy(update={"config": {**history.config, "recall_pct": 0, **config}})
    return base.model_copy(update={"modules": {**base.modules, "conversation_history": slot}})


@pytest.fixture
def history(builtin_registry):
    return builtin_registry.get("conversation_history")


async def test_old_results_become_references_naming_tool_turn_and_size(history):
    messages = chat(14)
    ctx = module_ctx(make_ctx(messages=messages), config={"clear_tool_results_after_turns": 4, "cache_block": 0})
    c = await history.contribute(60_000, ctx)
    results = {m.turn: m.content for m in c.messages() if m.role == "tool"}
    # turn 15 is assembled: the horizon is (15 - 4) // 4 * 4 = 8 -> turns 1..8 cleared, 9..14 whole
    for turn in range(1, 9):
        original = next(m for m in messages if m.role == "tool" and m.turn == turn)
        as_sent = {"role": "tool", "content": original.content, "tool_call_id": original.tool_call_id}
        tokens = cookbook_message_tokens(as_sent)  # what the result cost as sent
        assert results[turn] == f"[result of search_orders at turn {turn}, {tokens:,} tokens, cleared]"
    assert all(results[t] == result_text(t) for t in range(9, 15))
    meta = c.metadata["tool_results_cleared"]
    assert meta["count"] == 8 and [r["turn"] for r in meta["results"]] == list(range(1, 9))
    assert c.metadata["tool_results_recalled"] == []  # the default query names nothing in them


async def test_large_results_are_cleared_whatever_their_age_but_never_the_turn_being_answered(builtin_registry):
    big, small = exchange(1, lines=200), exchange(2, lines=5)
    call = {"id": "call_now", "type": "function", "function": {"name": "search_orders", "arguments": "{}"}}
    loop = (
        Message("assistant", "", turn=3, tool_calls=(call,)),
        Message("tool", result_text(3, 200), turn=3, tool_call_id="call_now"),
    )
    ctx = make_ctx(messages=[*big, *small], query="Summarise what you found just now", limit=32_000)
    ctx = ctx.__class__(**{**ctx.__dict__, "continuation": loop})
    out = await ContextWindowHandler(builtin_registry).assemble(ctx, clearing_type(clear_tool_results_over_tokens=500))
    tools = [m for m in out.messages if m["role"] == "tool"]
    assert tools[0]["content"].startswith("[result of search_orders at turn 1,") and tools[0]["content"].endswith(
        "tokens, cleared]"
    )
    assert tools[1]["content"] == result_text(2, 5)  # small: kept
    assert tools[2]["content"] == result_text(3, 200)  # the pending loop's result: always whole
    assert pairing_errors(out.messages) == []


@pytest.mark.parametrize(
    ("after", "over", "limit", "recall_pct"),
    [
        (1, 0, 6_000, 0),
        (3, 0, 12_000, 0),
        (0, 200, 4_000, 0),
        (2, 300, 9_000, 0),
        (2, 0, 9_000, 60),
        (0, 200, 6_000, 60),
    ],
)
async def test_every_window_keeps_calls_and_results_paired(builtin_registry, after, over, limit, recall_pct):
    """With and without recall of older history (recall_pct), whatever the rules."""
    handler = ContextWindowHandler(builtin_registry)
    wtype = clearing_type(
        clear_tool_results_after_turns=after, clear_tool_results_over_tokens=over, recall_pct=recall_pct
    )
    for turns in range(2, 30, 3):
        ctx = make_ctx(messages=chat(turns), query=f"Where is order {turns * 1000 - 3}?", limit=limit)
        out = await handler.assemble(ctx, wtype)
        assert pairing_errors(out.messages) == [], (turns, out.messages)
        assert out.snapshot.total_used <= out.snapshot.available_budget


def shared_prefix(now: list[dict[str, Any]], before: list[dict[str, Any]]) -> int:
    same = 0
    for a, b in zip(now, before, strict=False):
        if a != b:
            break
        same += 1
    return same


def tokens(messages: list[dict[str, Any]]) -> int:
    return litellm.token_counter(model="gpt-4o", messages=messages) - 3 if messages else 0


async def test_results_are_cleared_in_batches_so_the_prefix_stays_byte_stable(builtin_registry):
    """A result is cleared when the horizon steps (every N turns), not one more every turn: between steps the window
    sent starts with the previous one's bytes; measured as in issue 23 (median share of the previous window that is a
    byte-identical prefix), the clearing keeps it at the level of the cache-block trimming alone."""
    handler = ContextWindowHandler(builtin_registry)
    measured = {}
    for config in ({}, {"clear_tool_results_after_turns": 4}):
        wtype = clearing_type(**config)
        previous: list[dict[str, Any]] = []
        ratios, changed_on = [], []
        for turn in range(8, 48):
            ctx = make_ctx(messages=chat(turn - 1, lines=12), query=f"Anything new in batch {turn}?", limit=30_000)
            out = await handler.assemble(ctx, wtype)
            window = out.messages
            if previous:
                ratios.append(tokens(window[: shared_prefix(window, previous)]) / tokens(previous))
                before = {m.get("tool_call_id"): m["content"] for m in previous if m["role"] == "tool"}
                now = [(m["tool_call_id"], m["content"]) for m in window if m["role"] == "tool"]
                if any(before.get(call, content) != content for call, content in now):
                    changed_on.append(turn)
            previous = window
        measured[bool(config)] = (statistics.median(ratios), changed_on)
    median, changed_on = measured[True]
    print("median prefix without/with clearing, turns a result was cleared:", measured)
    assert changed_on and all(turn % 4 == 0 for turn in changed_on), changed_on  # only when the horizon steps
    assert median >= 0.7 and median >= measured[False][0] - 0.05, measured


async def test_a_cleared_result_the_question_needs_is_recalled_after_the_history(history):
    """The reference stays where it is (the history's bytes do not change); the part of the result that names what
    the question asks is shown in one note after the history, within the module's budget."""
    messages = chat(14)
    config = {"clear_tool_results_after_turns": 4, "cache_block": 0}
    asked = module_ctx(make_ctx(messages=messages, query="Which carrier shipped order 3017?"), config=config)
    c = await history.contribute(12_000, asked)
    sent = c.messages()
    results = {m.turn: m.content for m in sent if m.role == "tool"}
    assert all(results[t].endswith("cleared]") for t in range(1, 9))
    note = sent[-1]
    planted = next(line for line in result_text(3).splitlines() if line.startswith("order 3017:"))
    assert note.role == "user" and planted in note.content
    assert "[result of search_orders at turn 3 (call call_3), the 1 of " in note.content
    assert "order 5017" not in note.content  # only the part the question names, not every result's lines
    assert [(r["turn"], r["shown"].endswith("parts")) for r in c.metadata["tool_results_recalled"]] == [(3, True)]
    assert sum(asked.tokens.count_message(m) for m in sent) <= 12_000
    assert pairing_errors([m.to_chat() for m in sent]) == []
    # asked about nothing in them: no note, every old result stays a reference
    other = module_ctx(make_ctx(messages=messages, query="Thanks, that is all."), config=config)
    c = await history.contribute(12_000, other)
    assert c.metadata["tool_results_recalled"] == [] and c.messages()[-1].role == "assistant"


async def test_recall_keeps_the_history_prefix_byte_stable(builtin_registry):
    """Follow-up questions about different cleared results change only what comes after the history."""
    handler = ContextWindowHandler(builtin_registry)
    wtype = clearing_type(clear_tool_results_after_turns=4).model_copy(update={"dynamic_adjustments": []})
    windows = []
    for order in (3017, 5021, 2030):
        ctx = make_ctx(messages=chat(14), query=f"Which carrier shipped order {order}?", limit=60_000)
        out = await handler.assemble(ctx, wtype)
        note = out.messages[-2]["content"]  # right before the query
        assert str(order) in note and len(note) < 1_000  # the matching part only
        windows.append(out.messages[:-2])
    assert windows[0] == windows[1] == windows[2]


async def test_a_bad_clearing_option_names_the_option(history):
    ctx = module_ctx(make_ctx(messages=chat(3)), config={"clear_tool_results_after_turns": "four"})
    with pytest.raises(ValueError, match="clear_tool_results_after_turns"):
        await history.contribute(5_000, ctx)


def test_the_cleared_parts_index_grown_from_the_last_turns_scores_as_one_built_afresh():
    """An agent's cleared results grow each turn; the index extended with the new parts ranks exactly as one built
    over all of them (and a history that changed its opening parts is not served the old index)."""
    from components.context_window.relevance import BM25Index
    from components.context_window.tool_results.clearing import parts_index

    earlier = tuple(f"order {n}: blue widget shipped to Oslo on day {n}" for n in range(30))
    later = (*earlier, "order 99: red gadget refunded", "order 100: green gizmo shipped to Bergen")
    parts_index(earlier)
    grown = parts_index(later)
    fresh = BM25Index(later)
    query = ["gizmo", "bergen", "ship"]
    assert len(grown) == len(later)
    assert list(grown.scores_for_terms(query)) == pytest.approx(list(fresh.scores_for_terms(query)))
    changed = ("order 1: something else", *later[1:])
    assert list(parts_index(changed).scores_for_terms(["someth"])) == pytest.approx(
        list(BM25Index(changed).scores_for_terms(["someth"]))
    )
