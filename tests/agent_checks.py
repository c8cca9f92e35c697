"""Issue 32's items 1-4, checked on one model call as the upstream received it (session 49's held-out check, for
bench/agent_shapes_bench.py and tests/service/test_agent_shapes.py). Each check reads the conversation the client
sent for the call and the chat messages the upstream received (tests/agent_wires.py reads an Anthropic body back).
"""

from __future__ import annotations

import json
from typing import Any

from tests.agent_shapes import TURN, text_of

CUT_MARK = "[... the rest of this"
"""How tda ends a result (or a question) it cut: ``[... the rest of this result, N tokens, is not shown]``."""


def question_at(messages: list[dict[str, Any]]) -> int:
    """The index of the turn's question: the last user message that asks (not a tool result read back)."""
    return max(i for i, m in enumerate(messages) if m["role"] == "user" and TURN.match(text_of(m["content"])))


def history_part(received: list[dict[str, Any]]) -> str:
    """The window's messages before the turn's question, as JSON: what the provider's cache holds within a turn."""
    return json.dumps(received[: question_at(received)], sort_keys=True)


def orphans(received: list[dict[str, Any]]) -> list[str]:
    """Tool results without their call in the assistant message before their run, and calls left without a result:
    what OpenAI (and Anthropic) refuse."""
    wrong, open_calls = [], set[str]()
    for m in received:
        if m["role"] == "tool":
            if m["tool_call_id"] not in open_calls:
                wrong.append(f"result {m['tool_call_id']} without its call")
            open_calls.discard(m["tool_call_id"])
            continue
        wrong += [f"call {c} without its result" for c in sorted(open_calls)]
        open_calls = {c["id"] for c in m.get("tool_calls") or ()}
    return wrong + [f"call {c} without its result" for c in sorted(open_calls)]


def altered_results(sent: list[dict[str, Any]], received: list[dict[str, Any]]) -> list[str]:
    """Tool results sent neither byte for byte as the client sent them nor as their beginning with tda's note."""
    client = {m["tool_call_id"]: text_of(m["content"]) for m in sent if m["role"] == "tool"}
    wrong = []
    for m in received:
        if m["role"] != "tool":
            continue
        got, original = text_of(m["content"]), client.get(m["tool_call_id"])
        if original is None:
            wrong.append(f"result {m['tool_call_id']} the client never sent")
        elif got != original and not _cut_from(got, original):
            wrong.append(f"result {m['tool_call_id']} altered ({len(got)} of {len(original)} characters)")
    return wrong


def _cut_from(got: str, original: str) -> bool:
    """Whether ``got`` is ``original``'s beginning followed by tda's note of the rest."""
    at = got.rfind(CUT_MARK)
    return at >= 0 and original.startswith(got[:at].rstrip())


def newest_turn(sent: list[dict[str, Any]], received: list[dict[str, Any]]) -> str:
    """ "whole": the turn's question, every call and every result of its loop went as sent; "condensed": some were
    cut (or left out) and nothing older than the turn went beside them (the turn alone exceeds the room); else
    "broken: ..." naming what is missing."""
    asked = question_at(sent)
    turn, older = sent[asked:], sent[1:asked]
    got = {_key(m): m for m in received}
    missing = [_key(m) for m in turn if _key(m) not in got or _text(got[_key(m)]) != _text(m)]
    if not missing:
        return "whole"
    present_older = [m for m in received if m["role"] != "system" and _key(m) in {_key(o) for o in older}]
    cut_in_place = all(k in got and CUT_MARK in _text(got[k]) for k in missing)
    if cut_in_place and not present_older:
        return "condensed"
    return f"broken: {len(missing)} of the turn's {len(turn)} messages not sent whole, {len(present_older)} older sent"


def cut_header_breaks(cut: dict[str, Any], header: str | None) -> list[str]:
    """What is wrong with a reply's ``X-TDA-Cut``, streamed or not (a stream's goes with its first byte): it says
    what the reply's ``usage.tda`` says, the tokens received less sent (or 0)."""
    tokens = max(0, cut["tokens_received"] - cut["tokens_sent"])
    return [] if header == f"messages={cut['messages_cut']}; tokens={tokens}" else [f"X-TDA-Cut {header!r}"]


def _key(m: dict[str, Any]) -> tuple[Any, ...]:
    """A message's identity whatever its text became: role, result id, call ids, or (a question) its turn."""
    if m["role"] == "tool":
        return ("tool", m["tool_call_id"])
    if m.get("tool_calls"):
        return ("calls", tuple(c["id"] for c in m["tool_calls"]))
    match = TURN.match(text_of(m["content"]))
    return (m["role"], match.group(1) if match and m["role"] == "user" else text_of(m["content"]))


def _text(m: dict[str, Any]) -> str:
    return text_of(m.get("content"))
