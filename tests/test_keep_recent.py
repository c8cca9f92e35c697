"""Anthropic's clear_tool_uses_20250919 as tda applies it (tool_results.clearing.keep_recent): once the trigger is
reached, every tool result but those of the newest ``keep`` tool uses goes as a reference, oldest first, excluded
tools never. Oracles: a separately written pairing check (every call still answered by its own result, in place),
the results as generated, and the cookbook token formula over tiktoken (tests/oracle.py) for the tokens cleared."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message
from components.context_window.token_estimator import estimator_for
from components.context_window.tool_results.clearing import KeepRecent, keep_recent
from tests.oracle import cookbook_message_tokens

TOOLS = ["search_orders", "read_file", "get_balance"]
COUNT = estimator_for("gpt-4o").count_message


def agent_loop(tools: list[str], lines: int = 30) -> list[Message]:
    """One user question, then a tool use per entry of ``tools`` (its call, then its result), as an agent's loop."""
    out = [Message("user", "Reconcile the March orders.")]
    for n, tool in enumerate(tools):
        call = {"id": f"call_{n}", "type": "function", "function": {"name": tool, "arguments": f'{{"page": {n}}}'}}
        out.append(Message("assistant", "", tool_calls=(call,)))
        text = "\n".join(
            f"{tool} row {n}.{i}: order {n * 100 + i} shipped, amount {i * 7}.50 EUR" for i in range(lines)
        )
        out.append(Message("tool", text, tool_call_id=f"call_{n}"))
    return out


def paired(messages: list[Message] | tuple[Message, ...]) -> bool:
    """OpenAI's and Anthropic's rule: each call is answered at once by its result, and a result answers a call."""
    for i, m in enumerate(messages):
        if m.tool_calls:
            ids = [c["id"] for c in m.tool_calls]
            if [r.tool_call_id for r in messages[i + 1 : i + 1 + len(ids)]] != ids:
                return False
    return True


@settings(max_examples=60, deadline=None)
@given(
    tools=st.lists(st.sampled_from(TOOLS), min_size=0, max_size=9),
    keep=st.integers(0, 5),
    exclude=st.sets(st.sampled_from(TOOLS), max_size=2),
)
def test_only_the_results_before_the_newest_kept_go_and_every_call_keeps_its_result(
    tools: list[str], keep: int, exclude: set[str]
) -> None:
    sent = agent_loop(tools)
    rule = KeepRecent(trigger_tokens=0, keep=keep, exclude=frozenset(exclude))
    kept = keep_recent(sent, rule, COUNT)

    assert len(kept.messages) == len(sent) and paired(kept.messages)
    clearable = [n for n, tool in enumerate(tools) if n < len(tools) - keep and tool not in exclude]
    cleared_ids = [c.original.tool_call_id for c in kept.cleared]
    assert cleared_ids == [f"call_{n}" for n in clearable]
    for before, after in zip(sent, kept.messages, strict=True):
        if before.tool_call_id in cleared_ids:
            assert after.content.startswith("[result of ") and after.content.endswith(" tokens, cleared]")
        else:
            assert after == before  # the rest byte for byte
    saved = sum(
        cookbook_message_tokens(b.to_chat()) - cookbook_message_tokens(a.to_chat())
        for b, a in zip(sent, kept.messages, strict=True)
    )
    assert kept.tokens == saved


def test_nothing_is_cleared_below_the_trigger_or_short_of_clear_at_least() -> None:
    sent = agent_loop(["search_orders"] * 5)
    total = sum(COUNT(m) for m in sent)
    below = keep_recent(sent, KeepRecent(trigger_tokens=total, keep=1), COUNT)
    over = keep_recent(sent, KeepRecent(trigger_tokens=total - 1, keep=1), COUNT)
    short = keep_recent(sent, KeepRecent(trigger_tokens=0, keep=1, at_least=total), COUNT)
    by_uses = keep_recent(sent, KeepRecent(trigger_tokens=None, trigger_tool_uses=5, keep=1), COUNT)
    over_uses = keep_recent(sent, KeepRecent(trigger_tokens=None, trigger_tool_uses=4, keep=1), COUNT)

    assert below.messages == tuple(sent) and not below.cleared
    assert len(over.cleared) == 4
    assert short.messages == tuple(sent) and not short.cleared
    assert not by_uses.cleared and len(over_uses.cleared) == 4


def test_clear_tool_inputs_empties_the_cleared_calls_arguments_only() -> None:
    sent = agent_loop(["search_orders", "read_file", "search_orders"])
    kept = keep_recent(sent, KeepRecent(trigger_tokens=0, keep=1, inputs=frozenset({"read_file"})), COUNT)
    arguments = [c["function"]["arguments"] for m in kept.messages for c in m.tool_calls]
    assert arguments == ['{"page": 0}', "{}", '{"page": 2}']
    everything = keep_recent(sent, KeepRecent(trigger_tokens=0, keep=1, inputs=True), COUNT)
    assert [c["function"]["arguments"] for m in everything.messages for c in m.tool_calls] == [
        "{}",
        "{}",
        '{"page": 2}',
    ]
