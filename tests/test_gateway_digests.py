"""The gateway's conversation digests, computed once per call and carried over from a session's previous call:
always the digests of the conversation as sent, whatever the previous call sent (an independent sha256 over each
message's canonical JSON is the oracle)."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from collections import Counter
from types import SimpleNamespace
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message
from components.context_window.token_estimator import estimator_for
from tda import gateway
from tda.gateway import digested

ROLES = st.sampled_from(["user", "assistant", "tool"])
TEXT = st.text(alphabet='ab \n{}"é', max_size=6)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    role = draw(ROLES)
    if role == "tool":
        return Message("tool", draw(TEXT), tool_call_id=draw(st.sampled_from(["c1", "c2"])))
    if role == "assistant" and draw(st.booleans()):
        arguments = json.dumps({"q": draw(TEXT)})
        call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": arguments}}
        return Message("assistant", draw(TEXT), tool_calls=(call,))
    return Message(role, draw(TEXT))


def oracle(chat: list[Message]) -> str:
    """sha256 over each message's role, content, calls (arguments parsed), call id and name as sorted JSON, each
    followed by a NUL: the digest the session records (what stored sessions were keyed by)."""
    h = hashlib.sha256()
    for m in chat:
        calls = [
            {**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])}}
            for c in m.to_chat().get("tool_calls", [])
        ] or None
        row = [m.role, m.content, calls, m.tool_call_id, m.name]
        h.update(json.dumps(row, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode())
        h.update(b"\x00")
    return h.hexdigest()


@settings(max_examples=150, deadline=None)
@given(
    st.lists(messages(), max_size=8),
    st.lists(messages(), max_size=8),
    st.lists(messages(), max_size=8),
    st.sampled_from([1, 2, 3, gateway.CHECKPOINT]),
)
def test_digests_carried_over_are_those_of_the_conversation_sent(
    shared: list[Message], before: list[Message], after: list[Message], checkpoint: int
) -> None:
    with patch.object(gateway, "CHECKPOINT", checkpoint):  # states kept every few messages: the rest hashed on
        digests_carried_over_are_those_of_the_conversation_sent(shared, before, after)


def digests_carried_over_are_those_of_the_conversation_sent(
    shared: list[Message], before: list[Message], after: list[Message]
) -> None:
    earlier = digested([*shared, *before])
    sent = [Message.from_chat(m.to_chat()) for m in (*shared, *after)]  # new objects, as a new request parses them
    carried, fresh = digested(sent, earlier), digested(sent)
    assert carried.keys == fresh.keys
    assert carried.messages == tuple(sent)
    for n in range(len(sent) + 1):
        assert carried.through(n) == fresh.through(n) == oracle(sent[:n])
    ends = {oracle(sent[: i + 1]): i + 1 for i, m in enumerate(sent) if m.role == "assistant"}
    assert carried.turn_ends(len(sent)) == ends
    reply = Message("assistant", "done")
    assert carried.with_reply(reply) == oracle([*sent, reply])
    # The repeated messages are the earlier call's own objects (their per-object caches hold).
    repeated = next((i for i, (a, b) in enumerate(zip(earlier.messages, sent, strict=False)) if a != b), None)
    repeated = min(len(earlier.messages), len(sent)) if repeated is None else repeated
    assert all(carried.messages[i] is earlier.messages[i] for i in range(repeated))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(messages(), min_size=1, max_size=10),
    st.lists(st.tuples(st.integers(0, 9), st.booleans()), max_size=12),
    st.booleans(),
)
def test_window_cut_counts_the_client_messages_not_sent_byte_for_byte(
    chat: list[Message], picks: list[tuple[int, bool]], carried: bool
) -> None:
    """``messages_cut``: each message the client sent that the window did not send as it came (its oracle digest
    among the window's), whether the window's messages are the client's own or equal copies, changed or repeated,
    and whether the digests were carried over from an earlier call."""
    instructions = (Message("system", "be brief"),)
    chat = [*chat, Message("user", "the question")]
    conversation = gateway.Conversation(instructions, tuple(chat[:-1]), chat[-1], ())
    digests = digested(chat, digested(chat[:-1])) if carried else digested(chat)
    conversation = dataclasses.replace(conversation, digests=digests)
    window = [instructions[0].to_chat()]
    for index, changed in picks:
        sent = chat[index % len(chat)].to_chat()
        window.append({**sent, "content": sent["content"] + " [cut]"} if changed else sent)
    assembled = SimpleNamespace(messages=window, snapshot=SimpleNamespace(total_used=1))
    cut = gateway.window_cut(conversation, assembled, estimator_for("gpt-4o"))  # type: ignore[arg-type]

    def key(m: Message) -> str:
        return oracle([m])

    received = Counter(key(m) for m in (*instructions, *chat))
    sent = Counter(key(Message.from_chat(m)) for m in window)
    assert cut["messages_cut"] == len(instructions) + len(chat) - sum(min(n, received[k]) for k, n in sent.items())
    assert cut["messages_sent"] == len(window) and cut["messages_received"] == len(instructions) + len(chat)


def agent_turn(n: int) -> list[Message]:
    call = {"id": f"c{n}", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"n": n})}}
    return [
        Message("user", f"question {n}"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", json.dumps({"rows": list(range(n % 7))}), tool_call_id=f"c{n}"),
        Message("assistant", f"answer {n} é"),
    ]


async def test_a_carried_calls_cut_reads_the_window_and_the_new_messages_not_the_conversation() -> None:
    """A session's next call sends the conversation again with a few messages more: its ``usage.tda`` figures (the
    tokens received, which messages went as sent) are read from what the earlier call added up, not by counting and
    keying every message again; and they are what a count of the whole conversation gives."""
    tokens = estimator_for("gpt-4o")
    instructions = (Message("system", "be brief"),)
    turns = [m for n in range(60) for m in agent_turn(n)]

    def conversation(chat: list[Message]) -> gateway.Conversation:
        fresh = [Message.from_chat(m.to_chat()) for m in chat]  # new objects, as a new request parses them
        return gateway.Conversation(instructions, tuple(fresh[:-1]), fresh[-1], ())

    key = "test-session-cut"
    await gateway.with_digests(conversation([*turns[:-8], Message("user", "first")]), key, tokens)
    later = await gateway.with_digests(conversation([*turns, Message("user", "second")]), key, tokens)
    window = [instructions[0].to_chat(), *(m.to_chat() for m in later.chat[-9:])]
    called = later.chat[-4].to_chat()  # the newest tool call, sent with other arguments (a cut or an edit)
    window.append(
        {
            **called,
            "tool_calls": [{**c, "function": {"name": "lookup", "arguments": "{}"}} for c in called["tool_calls"]],
        }
    )
    assembled = SimpleNamespace(messages=window, snapshot=SimpleNamespace(total_used=1))
    with (
        patch.object(tokens, "count_message", wraps=tokens.count_message) as counts,
        patch.object(gateway, "_fields", wraps=gateway._fields) as fields,
        patch.object(gateway, "_key", wraps=gateway._key) as digested_again,
    ):
        cut = gateway.window_cut(later, assembled, tokens)  # type: ignore[arg-type]
    assert counts.call_count == len(instructions)  # the conversation's tokens were added up as it came
    assert fields.call_count == 0  # its messages' keys were kept as they came
    # the client's messages in the window found by their fields, tool calls too: only the instructions (kept apart
    # from the digests) and the changed call are digested
    assert digested_again.call_count == 2 * len(instructions) + 1
    received = [*instructions, *later.chat]
    assert cut["tokens_received"] == sum(tokens.count_chat(m.to_chat()) for m in received)
    assert cut["messages_received"] == len(received)
    sent = Counter(oracle([Message.from_chat(m)]) for m in window)
    each = Counter(oracle([m]) for m in received)
    assert cut["messages_cut"] == len(received) - sum(min(n, each[k]) for k, n in sent.items())


@settings(max_examples=100, deadline=None)
@given(st.lists(messages(), max_size=6), st.lists(messages(), max_size=6), st.lists(messages(), max_size=6))
def test_the_tokens_received_are_the_conversations_whatever_the_earlier_call_sent(
    shared: list[Message], before: list[Message], after: list[Message]
) -> None:
    """Carried over from an earlier call that sent something else after a common beginning (an edit, a fork), the
    tokens received are still those of the conversation sent, message by message."""
    tokens, key = estimator_for("gpt-4o"), "test-session-fork"

    def conversation(chat: list[Message]) -> gateway.Conversation:
        fresh = [Message.from_chat(m.to_chat()) for m in (*chat, Message("user", "q"))]
        return gateway.Conversation((), tuple(fresh[:-1]), fresh[-1], ())

    asyncio.run(gateway.with_digests(conversation([*shared, *before]), key, tokens))
    later = asyncio.run(gateway.with_digests(conversation([*shared, *after]), key, tokens))
    assembled = SimpleNamespace(messages=[], snapshot=SimpleNamespace(total_used=0))
    cut = gateway.window_cut(later, assembled, tokens)  # type: ignore[arg-type]
    assert cut["tokens_received"] == sum(tokens.count_chat(m.to_chat()) for m in later.chat)
    assert cut["messages_cut"] == len(later.chat)


def test_the_keys_kept_for_a_conversation_stay_bounded_by_it() -> None:
    """Conversations that share only their first message take turns under one key (a stateless client's): the keys
    carried from call to call are made again once they hold twice the conversation's messages, not kept forever."""
    first = Message("user", "hello")
    seen = digested([first])
    for n in range(200):
        seen = digested([first, *(Message("assistant", f"reply {n}-{i}") for i in range(5))], seen)
        assert len(seen.known) <= 2 * len(seen.messages) + len(seen.messages)
    assert seen.known[gateway._fields(seen.messages[-1])] == seen.keys[-1]


FIELD_TEXT = st.one_of(st.none(), st.text(max_size=8))
PART = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=6)),
    st.builds(lambda t: {"type": "thinking", "thinking": t, "signature": "s"}, st.text(max_size=6)),
    st.just({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}),
)
CALL = st.builds(
    lambda i, name, arguments: {"id": i, "type": "function", "function": {"name": name, "arguments": arguments}},
    st.text(max_size=4),
    st.text(max_size=4),
    st.one_of(st.text(max_size=8), st.builds(json.dumps, st.dictionaries(st.text(max_size=3), st.integers()))),
)


@st.composite
def any_messages(draw: st.DrawFn) -> Message:
    """Any message a client may send: text (any characters), parts, calls, ids and names of any type."""
    role = draw(st.sampled_from(["user", "assistant", "tool", "system"]))
    other = st.one_of(FIELD_TEXT, st.integers(0, 3), st.floats(allow_nan=False))  # not checked by the component
    parts = draw(st.one_of(st.none(), st.lists(PART, min_size=1, max_size=3)))
    chat: dict[str, object] = {"role": role, "content": parts if parts is not None else draw(FIELD_TEXT)}
    calls = draw(st.lists(CALL, max_size=2))
    if calls:
        chat["tool_calls"] = calls
    for name in ("tool_call_id", "name"):
        value = draw(other)
        if value is not None:
            chat[name] = value
    return Message.from_chat(chat)


def identity_as_first_written(m: Message) -> bytes:
    """``_identity`` as sessions recorded before its text path: the JSON of a row made from the chat dict."""
    chat = m.to_chat()
    calls = []
    for call in chat.get("tool_calls") or ():
        function = call.get("function") or {}
        try:
            calls.append(
                {**call, "function": {**function, "arguments": json.loads(function.get("arguments") or "null")}}
            )
        except ValueError:
            calls.append(call)
    content = chat["content"]
    if (
        m.role == "assistant"
        and m.parts is not None
        and all(p.get("type") in ("text", "thinking", "redacted_thinking") for p in m.parts)
    ):
        content = m.content
    row = [chat["role"], content, calls or None, chat.get("tool_call_id"), chat.get("name")]
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str).encode()


@settings(max_examples=400, deadline=None)
@given(any_messages())
def test_equivalence_the_identity_written_out_is_the_json_sessions_were_keyed_by(m: Message) -> None:
    """Equivalence (an optimisation): a text message's identity written out without its chat dict and the encoder
    (``_text_identity``) is byte for byte the JSON every message's was, whatever its characters, ids and names: the
    digests sessions stored still find their turns."""
    assert gateway._identity(m) == identity_as_first_written(m)


def test_a_text_message_s_identity_makes_no_chat_dict() -> None:
    """A conversation's text messages (most of a long one) are identified without a chat dict each (a resent
    100-turn chat's 300 of 400 messages: ~1 ms of its first call)."""
    chat = [
        Message("user", "a question"),
        Message("assistant", "an answer", name="bot"),
        Message("tool", "4", tool_call_id="c"),
    ]
    with patch.object(Message, "to_chat", side_effect=AssertionError("made a chat dict")):
        keys = [gateway._identity(m) for m in chat]
    assert keys == [
        b'["user","a question",null,null,null]',
        b'["assistant","an answer",null,null,"bot"]',
        b'["tool","4",null,"c",null]',
    ]
