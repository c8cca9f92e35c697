"""What a client may send as provider context features is answered with a result or a 422 naming the field, never
anything else (a 500): Anthropic's ``context_management`` edits as tda applies them, and the Responses API's
``context_management``, ``truncation`` and compaction items, fuzzed with hypothesis over JSON values. Applied edits
keep every tool call answered by its result and never make the conversation longer (tda's own token counts)."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from components.context_window.base import Message
from components.context_window.token_estimator import estimator_for
from tda.client_call import ClientCall
from tda.context_features import applied_by_tda, checked_edits, responses_features
from tda.errors import Invalid
from tests.test_keep_recent import agent_loop, paired

MODEL = "gpt-4o"
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
SETTING = st.fixed_dictionaries(
    {"type": st.sampled_from(["input_tokens", "tool_uses", "thinking_turns", "all", "x"])},
    optional={"value": st.integers(0, 400) | JSON},
)
EDIT = st.fixed_dictionaries(
    {"type": st.sampled_from(["clear_tool_uses_20250919", "clear_thinking_20251015", "compact_20260112", "other"])},
    optional={
        "trigger": SETTING,
        "keep": SETTING | st.just("all"),
        "clear_at_least": SETTING,
        "exclude_tools": st.lists(st.sampled_from(["search_orders", "read_file"])) | st.integers(),
        "clear_tool_inputs": st.booleans() | st.lists(st.sampled_from(["search_orders", "read_file"])) | st.integers(),
    },
)
THOUGHT = {"type": "thinking", "thinking": "Check the ledger first.", "signature": "sig"}


def _conversation() -> list[Message]:
    thinking = Message.from_chat({"role": "assistant", "content": [THOUGHT, {"type": "text", "text": "Looking."}]})
    return [*agent_loop(["search_orders", "read_file", "search_orders", "read_file"], lines=8), thinking]


@settings(max_examples=300, deadline=None)
@given(context_management=st.fixed_dictionaries({"edits": st.lists(EDIT, max_size=3)}) | JSON)
@example({"edits": [{"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 1}}]})  # applied
@example({"edits": [{"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 0}}]})
def test_any_edits_are_applied_or_refused_by_name(context_management: Any) -> None:
    sent = _conversation()
    call = ClientCall(messages=sent, params={"context_management": context_management})
    try:
        edited = applied_by_tda(call, checked_edits(context_management), MODEL)
    except Invalid as refused:
        assert refused.details["errors"][0]["loc"].startswith("context_management")
        return
    count = estimator_for(MODEL).count_message
    assert "context_management" not in edited.params
    assert paired(edited.messages) and len(edited.messages) == len(sent)
    assert sum(map(count, edited.messages)) <= sum(map(count, sent))
    for edit in edited.features.applied_edits:
        assert edit["cleared_input_tokens"] > 0


@settings(max_examples=300, deadline=None)
@given(
    context_management=JSON,
    truncation=st.none() | st.sampled_from(["auto", "disabled", "middle", ""]),
    item=st.fixed_dictionaries({"type": st.just("compaction")}, optional={"id": JSON, "encrypted_content": JSON}),
)
def test_any_responses_features_are_read_or_refused_by_name(
    context_management: Any, truncation: Any, item: Any
) -> None:
    try:
        features = responses_features(context_management, truncation, [(0, item)])
    except Invalid as refused:
        assert refused.details["errors"][0]["loc"].startswith(("context_management", "truncation"))
        return
    assert features.truncation == truncation
    assert features.context_limit is None or features.context_limit >= 1
    assert "input.compaction" in {h["field"] for h in features.handled}
