"""How the framework integrations find the window's unchanged messages among their own objects (``in_own_objects``):
by each message's identity, as tda reads it."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message
from tda.integrations.window import _identity, in_own_objects

ANY_VALUE = st.one_of(st.none(), st.text(max_size=6), st.integers(0, 3), st.booleans())


@st.composite
def chat_messages(draw: st.DrawFn) -> dict[str, Any]:
    """A chat dict as a framework hands it: any text, content parts or none, calls, ids and names of any type, keys
    tda does not read."""
    message: dict[str, Any] = {"role": draw(st.sampled_from(["user", "assistant", "tool", "system", "developer"]))}
    content = draw(
        st.one_of(
            ANY_VALUE, st.lists(st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=4)), max_size=2)
        )
    )
    if content is not None or draw(st.booleans()):
        message["content"] = content
    if draw(st.booleans()):
        message["tool_calls"] = draw(
            st.lists(
                st.builds(lambda n: {"id": n, "function": {"name": n, "arguments": "{}"}}, st.text(max_size=3)),
                max_size=1,
            )
        )
    for key in ("tool_call_id", "name", "extra"):
        value = draw(ANY_VALUE)
        if value is not None:
            message[key] = value
    return message


@settings(max_examples=400, deadline=None)
@given(chat_messages())
def test_equivalence_a_text_message_s_identity_is_its_chat_dict_s_sorted_json(message: dict[str, Any]) -> None:
    """Equivalence (an optimisation): the identity written out for a message of text alone is the sorted JSON of the
    chat dict tda reads from it, as every message's was, so the same messages are matched."""
    assert outcome(_identity, message) == outcome(read_as_json, message)


def read_as_json(message: dict[str, Any]) -> str:
    return json.dumps(Message.from_chat(message).to_chat(), sort_keys=True, default=str)


def outcome(identity: Any, message: dict[str, Any]) -> Any:
    """The identity, or the error it raised (a message tda refuses is refused either way)."""
    try:
        return identity(message)
    except (ValueError, TypeError) as exc:
        return type(exc)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(chat_messages().filter(lambda m: not isinstance(outcome(read_as_json, m), type)), max_size=6),
    st.randoms(use_true_random=False),
)
def test_the_window_s_unchanged_messages_are_the_framework_s_own_objects(
    chat: list[dict[str, Any]], random: Any
) -> None:
    """Each message of the window that is a sent one, as tda reads it, is that sent message's own object (the first
    not taken yet of those alike); any other is made."""
    sent = [(m, object()) for m in chat]
    window = [dict(m) for m in chat]
    random.shuffle(window)
    window.append({"role": "user", "content": "a summary no one sent"})
    found = in_own_objects(window, sent, lambda m: ("made", m["content"]))
    assert found[-1] == ("made", "a summary no one sent")
    read = [read_as_json(m) for m in chat]
    for message, got in zip(window[:-1], found[:-1], strict=True):
        same = [origin for (m, origin), key in zip(sent, read, strict=True) if key == read[chat.index(message)]]
        assert got in same
