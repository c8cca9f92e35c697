"""``prefix_stable_tokens``: what a provider's prompt cache can reuse of the previous window, measured in the order
the provider reads the prompt and by the model's tokenizer. Oracles: the providers' documented orders, written out
here (Anthropic's prompt-caching guide: tools, then system, then messages; OpenAI: the function definitions after
the system text), the cookbook count of a message (tests/oracle.py), and the rule that a cache is the model's own
(gpt-4o's o200k and gpt-4-turbo's cl100k share no token ids)."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.context_window.base import ToolSchema
from components.context_window.handler import ContextWindowHandler
from components.context_window.token_estimator import estimator_for, function_definition
from components.context_window.window_type import ContextWindowType
from tests.oracle import cookbook_message_tokens
from tests.support import make_ctx

WTYPE = ContextWindowType.model_validate(
    {
        "id": "prefix",
        "name": "Prefix",
        "modules": {
            "system_prompt": {"target_pct": 10, "min_pct": 0, "max_pct": 20, "priority": 95},
            "tool_definitions": {"target_pct": 60, "min_pct": 0, "max_pct": 80, "priority": 85},
        },
        "condensation_order": ["tool_definitions"],
    }
)
MODELS = ["gpt-4o", "gpt-4-turbo", "claude-sonnet-4-5", "gemini/gemini-2.0-flash"]


def tools(names: list[str]) -> list[ToolSchema]:
    return [
        ToolSchema(name, f"Look up {name} records.", {"type": "object", "properties": {"id": {"type": "string"}}})
        for name in names
    ]


def ctx(model: str, names: list[str], prompt: str = "You look things up.") -> Any:
    return dataclasses.replace(make_ctx(tools=tools(names), system_prompt=prompt, limit=50_000), model=model)


NAMES = ["orders", "refunds", "invoices", "customers"]


async def test_a_new_model_shares_no_cache_even_for_the_same_window(builtin_registry):
    """Round 3: 128 tokens reported stable after the session went from gpt-4o (o200k) to gpt-4-turbo (cl100k)."""
    h = ContextWindowHandler(builtin_registry)
    await h.assemble(ctx("gpt-4o", NAMES), WTYPE)
    switched = await h.assemble(ctx("gpt-4-turbo", NAMES), WTYPE)
    assert switched.snapshot.prefix_stable_tokens == 0
    again = await h.assemble(ctx("gpt-4-turbo", NAMES), WTYPE)
    assert again.snapshot.prefix_stable_tokens > 0


async def test_on_claude_a_changed_first_tool_leaves_nothing_stable(builtin_registry):
    """Round 3: 169 tokens on Claude when only a tool changed; Anthropic reads the tools before the system prompt."""
    h = ContextWindowHandler(builtin_registry)
    await h.assemble(ctx("claude-sonnet-4-5", NAMES), WTYPE)
    renamed = await h.assemble(ctx("claude-sonnet-4-5", ["shipments", *NAMES[1:]]), WTYPE)
    assert renamed.snapshot.prefix_stable_tokens == 0
    # the same change on OpenAI keeps the system message, read before the tools
    h2 = ContextWindowHandler(builtin_registry)
    await h2.assemble(ctx("gpt-4o", NAMES), WTYPE)
    openai = await h2.assemble(ctx("gpt-4o", ["shipments", *NAMES[1:]]), WTYPE)
    system = [m for m in openai.messages if m["role"] == "system"]
    assert openai.snapshot.prefix_stable_tokens == sum(cookbook_message_tokens(m) for m in system)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    st.sampled_from(MODELS),
    st.sampled_from(MODELS),
    st.one_of(st.none(), st.integers(0, len(NAMES) - 1)),
    st.booleans(),
)
async def test_the_stable_prefix_follows_the_providers_order(builtin_registry, first_model, model, renamed, new_prompt):
    """Two windows of one session; the second may change the model, rename one tool, change the system prompt.
    The stable prefix is what the provider's order (written out here) keeps in front of the first change."""
    h = ContextWindowHandler(builtin_registry)
    await h.assemble(ctx(first_model, NAMES), WTYPE)
    names = [f"{n}_v2" if i == renamed else n for i, n in enumerate(NAMES)]
    later = await h.assemble(ctx(model, names, "You look up records." if new_prompt else "You look things up."), WTYPE)
    stable = later.snapshot.prefix_stable_tokens
    tokens = estimator_for(model)
    system = sum(tokens.count_chat(m) for m in later.messages if m["role"] == "system")
    every_tool = sum(tokens.count(function_definition(t)) for t in tools(names)) + tokens.tools_overhead
    kept_tools = sum(tokens.count(function_definition(t)) for t in tools(names)[: renamed or 0])
    query = later.snapshot.query_tokens
    if model != first_model:
        expected = 0  # a cache is the model's own
    elif "claude" in model:  # tools, then system, then messages
        expected = kept_tools if renamed is not None else every_tool + (0 if new_prompt else system + query)
    elif new_prompt:  # system, then tools, then messages
        expected = 0
    else:
        expected = system + kept_tools if renamed is not None else system + every_tool + query
    assert stable == expected


HISTORY_TYPE = ContextWindowType.model_validate(
    {
        "id": "prefix-history",
        "name": "Prefix and history",
        "modules": {
            "system_prompt": {"target_pct": 10, "min_pct": 0, "max_pct": 20, "priority": 95},
            "tool_definitions": {"target_pct": 20, "min_pct": 0, "max_pct": 40, "priority": 85},
            "conversation_history": {"target_pct": 60, "min_pct": 0, "max_pct": 80, "priority": 70},
        },
        "condensation_order": ["conversation_history"],
    }
)


async def test_an_openai_window_s_stable_prefix_looks_at_no_item_s_kind_one_call_at_a_time(
    builtin_registry, monkeypatch
):
    """The stable prefix of a window sent as it is (OpenAI's order) was found after sorting every item into tools,
    system text and the rest, a Python call per item each time (issue 32 item 5: the window's ~120 messages at 100
    gateway turns, on every call): the work grew with the window. Now the kinds are looked up in C: as many calls
    for a 200-message history as for a 10-message one, and the same figure."""
    from components.context_window import handler as handler_module
    from components.context_window.base import Message

    calls = {"n": 0}
    kind = handler_module._is_tool

    def counted(item: Any) -> bool:
        calls["n"] += 1
        return kind(item)

    monkeypatch.setattr(handler_module, "_is_tool", counted)

    async def second_window(turns: int) -> tuple[int, int]:
        history = [Message("user" if i % 2 == 0 else "assistant", f"line {i} about orders") for i in range(turns)]
        h = ContextWindowHandler(builtin_registry)
        await h.assemble(
            dataclasses.replace(ctx("gpt-4o", NAMES), session=make_ctx(messages=history).session), HISTORY_TYPE
        )
        calls["n"] = 0
        later = await h.assemble(
            dataclasses.replace(ctx("gpt-4o", NAMES), session=make_ctx(messages=history).session), HISTORY_TYPE
        )
        assert len(later.messages) > turns // 2  # the history is in the window
        return calls["n"], later.snapshot.prefix_stable_tokens

    short, long = await second_window(10), await second_window(200)
    assert long[0] == short[0]
    assert long[1] > short[1] > 0
