"""A client's chat messages read as ``Message``s when first read (``ChatMessages``): whatever is read of them, and
whatever recall builds of them, is what the messages made at once give."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.context_window.base import ChatMessages, Message, Session, column, followed_by
from components.context_window.recall.messages import INDEX_SLICE, HistoryIndex, SessionRecall
from tda.integrations import Window

TEXTS = st.sampled_from(
    [
        "hi",
        "",
        "Maya: we moved to Leeds in May",
        "[8 May 2023] Theo: hey, long time",
        "2023-05-08 13:56: Maya: back from Lisbon?",
        "What did Theo cook?",
        "Invoice 1999 is paid. The fee was refunded.",
        "order 7 left the warehouse on Monday",
    ]
)
ROLES = st.sampled_from(["system", "user", "assistant", "tool"])
CALL = {"id": "call_1", "type": "function", "function": {"name": "order_status", "arguments": '{"order": 7}'}}
CHATS = st.one_of(
    st.builds(lambda role, text: {"role": role, "content": text}, ROLES, TEXTS),  # plain: most of a conversation
    st.builds(lambda text: {"role": "user", "content": text, "name": "Maya"}, TEXTS),
    st.builds(lambda text: {"role": "assistant", "content": text, "tool_calls": [CALL]}, TEXTS),
    st.builds(lambda text: {"role": "tool", "content": text, "tool_call_id": "call_1"}, TEXTS),
    st.builds(lambda text: {"role": "user", "content": [{"type": "text", "text": text}]}, TEXTS),
    st.just({"role": "assistant", "content": None}),
)
FIELDS = [f.name for f in fields(Message)]


@given(st.lists(CHATS, max_size=40), st.lists(st.tuples(st.integers(-45, 45), st.integers(-45, 45)), max_size=6))
def test_chat_messages_read_as_the_messages_made_at_once(chats, cuts):
    """Every message, view (and view of a view), field column and comparison; a message made through one view is the
    same object through every other."""
    made = [Message.from_chat(chat) for chat in chats]
    lazy = ChatMessages([dict(chat) for chat in chats])
    assert len(lazy) == len(made)
    for start, stop in cuts:
        view, expected, positions = lazy[start:stop], made[start:stop], range(len(made))[start:stop]
        assert [column(view, name) for name in FIELDS] == [[getattr(m, name) for m in expected] for name in FIELDS]
        assert view == expected and len(view) == len(expected)
        assert list(view[1:]) == expected[1:] and view[::-1] == expected[::-1] and view[1::-2] == expected[1::-2]
        for at in range(-len(expected), len(expected)):
            assert view[at] == expected[at]
            assert view[at] is lazy[positions[at]]
    assert list(lazy) == made and lazy == made and lazy[:] == lazy
    with pytest.raises(IndexError):
        lazy[len(made)]


@given(st.lists(CHATS, max_size=20), st.lists(CHATS, max_size=20), st.integers(0, 20))
def test_chat_messages_grow_and_views_keep_theirs(first, then, cut):
    lazy = ChatMessages([dict(chat) for chat in first])
    whole, part = lazy[:], lazy[:cut]
    lazy.extend([dict(chat) for chat in then])
    assert lazy == [Message.from_chat(chat) for chat in (*first, *then)]
    assert whole == [Message.from_chat(chat) for chat in first]
    assert part == [Message.from_chat(chat) for chat in first[:cut]]
    if len(lazy):
        with pytest.raises(ValueError):  # a view of part of them does not grow
            lazy[:-1].extend([{"role": "user", "content": "hi"}])


@given(st.lists(CHATS, max_size=20), st.lists(st.integers(0, 20), min_size=4, max_size=4))
def test_messages_followed_by_more_are_both_in_order(chats, cuts):
    """One view when the second goes on where the first ends, else both as a list."""
    made, lazy = [Message.from_chat(chat) for chat in chats], ChatMessages([dict(chat) for chat in chats])
    a, b, c, d = cuts
    assert followed_by(lazy[a:b], lazy[c:d]) == made[a:b] + made[c:d]
    assert followed_by(made[a:b], lazy[c:d]) == made[a:b] + made[c:d]
    assert followed_by([], lazy[c:d]) == made[c:d]


@pytest.mark.parametrize(
    "odd",
    [
        {"role": "robot", "content": "hi"},
        {"role": "user", "content": 7},
        {"content": "hi", "text": "x"},
        {"role": None},
    ],
)
def test_a_message_tda_cannot_read_fails_when_given_wherever_it_is(odd):
    """Plain messages are made later, but checked when given: the conversation fails at once, as if all were made."""
    chats = [{"role": "user", "content": f"hi {n}"} for n in range(300)]
    chats.insert(150, odd)
    with pytest.raises((ValueError, KeyError)):
        Message.from_chat(odd)
    with pytest.raises((ValueError, KeyError)):
        ChatMessages(chats)
    with pytest.raises((ValueError, KeyError)):
        asyncio.run(Window("balanced", model="gpt-4o").assemble([*chats, {"role": "user", "content": "and?"}]))


def _held(index: HistoryIndex) -> dict[str, Any]:
    """What recall reads of an index: its messages, the tests it made per message, its units and its words' scores."""
    words = sorted({w for m in index.messages for w in m.content.lower().split()})
    return {
        "messages": list(index.messages),
        "per message": [list(index.chars), index.dated, index.asking, list(index.said_by), list(index.unit_of)],
        "speakers": index.speakers,
        "units": [index.unit(first, None) for first in range(len(index))],
        "scores": [index.lexical_scores(word).tolist() for word in words],
        "coverage": [index.lexical.coverage([word]).tolist() for word in words],
    }


@given(st.lists(CHATS, max_size=3 * INDEX_SLICE // 2), st.booleans())
def test_recall_indexes_a_chat_conversation_as_its_messages_made_at_once(chats, grown):
    """A history given as ``ChatMessages`` (a library user's conversation: its fields read without making its
    messages, in slices) is indexed as the same messages made at once (and again after more come)."""
    made = [Message.from_chat(chat) for chat in chats]
    lazy = ChatMessages([dict(chat) for chat in chats])
    eager, chat = (asyncio.run(_indexed(history, grown)) for history in (made, lazy))
    assert _held(chat) == _held(eager)
    np.testing.assert_array_equal(chat.short(), eager.short())
    if chats:
        assert isinstance(chat.messages, ChatMessages)  # a view: none made but those read


async def _indexed(history: Sequence[Message], grown: bool) -> HistoryIndex:
    """Recall's index of ``history`` as a session's in-memory messages (its first half synced first when ``grown``)."""
    recall = SessionRecall()
    if grown:
        await recall.sync(Session("s", messages=history[: len(history) // 2]))
    return await recall.sync(Session("s", messages=history))
