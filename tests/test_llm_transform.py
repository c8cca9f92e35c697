"""Messages go to the OpenAI SDK as built (``tda.llm._send_messages_as_built``): the request the SDK sends is the
one its own typed-dict walk would have made, for every shape of chat message (the SDK's walk is the oracle)."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from openai._utils._transform import async_maybe_transform
from openai.resources.chat.completions import completions
from openai.types.chat import completion_create_params

from tda.llm import _send_messages_as_built

TEXT = st.text(max_size=8)
PART = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}),
    st.fixed_dictionaries(
        {"type": st.just("image_url"), "image_url": st.fixed_dictionaries({"url": TEXT}, optional={"detail": TEXT})}
    ),
    st.fixed_dictionaries(
        {"type": st.just("input_audio"), "input_audio": st.fixed_dictionaries({"data": TEXT, "format": TEXT})}
    ),
    st.fixed_dictionaries(
        {"type": st.just("file"), "file": st.fixed_dictionaries({}, optional={"file_data": TEXT, "filename": TEXT})}
    ),
)
CALL = st.fixed_dictionaries(
    {"id": TEXT, "type": st.just("function"), "function": st.fixed_dictionaries({"name": TEXT, "arguments": TEXT})}
)
CONTENT = st.one_of(TEXT, st.none(), st.lists(PART, max_size=3))
MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "developer"]), "content": CONTENT}),
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "content": CONTENT},
        optional={"tool_calls": st.lists(CALL, max_size=2), "name": TEXT, "refusal": TEXT},
    ),
    st.fixed_dictionaries({"role": st.just("tool"), "content": CONTENT, "tool_call_id": TEXT}),
    st.dictionaries(TEXT, st.recursive(TEXT | st.integers(), lambda x: st.lists(x) | st.dictionaries(TEXT, x))),
)


def walked(body: dict[str, Any], walk: Any) -> Any:
    return asyncio.run(walk(body, completion_create_params.CompletionCreateParamsNonStreaming))


@settings(max_examples=150, deadline=None)
@given(st.lists(MESSAGE, max_size=5))
def test_the_request_is_the_one_the_sdk_would_send(messages: list[dict[str, Any]]) -> None:
    _send_messages_as_built()  # the SDK's chat resources are loaded (imported above): it is set
    body = {
        "model": "gpt-4.1",
        "messages": messages,
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        "max_tokens": 5,
        "stream_options": {"include_usage": True},
    }
    assert completions.async_maybe_transform is not async_maybe_transform
    sent = walked(body, completions.async_maybe_transform)
    assert sent == walked(body, async_maybe_transform)
    assert list(sent) == list(walked(body, async_maybe_transform))  # the keys in the SDK's order
