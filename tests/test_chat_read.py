"""A chat body read on from the session's previous one (tda/api/chat.py's ``_read`` over a body that
``tda.security.checked_json`` parsed on from the previous): the messages are those of the body as sent, the same
objects where the body repeats the previous one, and a new message that is invalid is named at its place."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tda.api.chat import _read, _sent
from tda.errors import Invalid
from tda.security import checked_json


def _body(messages: list[dict[str, Any]]) -> str:
    return json.dumps({"model": "tda", "messages": messages})


def _turns(n: int, tag: str) -> list[dict[str, Any]]:
    call = {"id": f"call_{tag}", "type": "function", "function": {"name": "orders", "arguments": "{}"}}
    return [
        {"role": "system", "content": f"system {tag}"},
        *(
            m
            for i in range(n)
            for m in (
                {"role": "user", "content": f"question {tag} {i}"},
                {"role": "assistant", "content": None, "tool_calls": [{**call, "id": f"call_{tag}_{i}"}]},
                {"role": "tool", "tool_call_id": f"call_{tag}_{i}", "content": f"rows {tag} {i}"},
                {"role": "assistant", "content": f"answer {tag} {i}"},
            )
        ),
    ]


def _read_on(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    """The messages of ``first`` and then of ``second``, the second body parsed on from the first."""
    data, _, parsed = checked_json(_body(first), 64)
    _, before = _read(data)
    data, _, _ = checked_json(_body(second), 64, parsed)
    return before, _read(data)[1]


def test_a_conversation_sent_again_longer_and_edited_is_read_as_sent() -> None:
    """The oracle: the same body read on its own (parsed whole, nothing lent)."""
    sent = _turns(4, "edited")
    later = [*sent[:6], {"role": "user", "content": "question edited 1, reworded"}, *sent[7:], *_turns(1, "x")[1:]]
    before, after = _read_on(sent, later)
    alone = _read(json.loads(_body(later)))[1]
    assert after == alone
    assert [a is b for a, b in zip(before, after, strict=False)][:6] == [True] * 6  # made once
    assert after[6].content == "question edited 1, reworded"


def test_an_invalid_message_after_those_sent_before_is_named_at_its_place() -> None:
    sent = _turns(3, "invalid")
    with pytest.raises(Invalid) as refused:
        _read_on(sent, [*sent, {"role": "robot", "content": "hi"}])
    assert [e["loc"] for e in refused.value.details["errors"]] == [f"messages.{len(sent)}.role"]


def test_two_bodies_going_on_from_one_are_each_read_as_sent() -> None:
    """Two clients that go on from the same body (a conversation forked) each get the messages they sent: what a
    body lent is found by its objects, whichever body read them last. The oracle: each body read on its own."""
    sent = _turns(3, "fork")
    data, _, parsed = checked_json(_body(sent), 64)
    _read(data)
    left = [*sent, {"role": "user", "content": "left"}]
    right = [*sent[:5], {"role": "user", "content": "right, from turn 2"}]
    for fork in (left, right, left):
        data, _, _ = checked_json(_body(fork), 64, parsed)
        assert _read(data)[1] == _read(json.loads(_body(fork)))[1]


def test_the_messages_a_body_lent_are_taken_whole_not_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session's next call sends its conversation again and a message more: the messages it sent before (the
    earlier body's, lent by its parse) come as the run made then, and only the new ones are looked up or made one by
    one (``_SentMessages.messages``), as many at turn 100 as at turn 2."""
    handled: list[int] = []
    one_by_one = _sent.messages

    def counted(raw: list[Any], *rest: Any) -> list[Any]:
        handled.append(len(raw))
        return one_by_one(raw, *rest)

    monkeypatch.setattr(_sent, "messages", counted)
    chat, parsed = _turns(100, "long"), None
    for n in (9, 10, 400, 401):  # turn 2's calls, then turn 100's
        data, _, parsed = checked_json(_body(chat[:n]), 64, parsed)
        handled.clear()
        assert _read(data)[1] == _read(json.loads(_body(chat[:n])))[1]
    assert handled[0] == 1  # the one message this body added; the oracle's read above handles all 401
