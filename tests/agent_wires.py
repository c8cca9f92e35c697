"""One chat conversation in the three wire formats tda's gateway speaks (issue 32's held-out check, session 49):
chat completions as it is, the Responses API's input items, Anthropic's Messages blocks; and back, what an upstream
received read as chat messages. For tests/agent_shapes.py's sessions."""

from __future__ import annotations

import json
from typing import Any

from tests.gateway.upstream import anthropic_as_messages


def as_responses(messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """The Responses API's ``instructions`` and ``input``: messages, ``function_call`` items (one per call, in
    order) and ``function_call_output`` items (a result's parts as ``input_text`` parts)."""
    instructions, items = None, []
    for m in messages:
        if m["role"] == "system":
            instructions = m["content"]
        elif m["role"] == "tool":
            items.append({"type": "function_call_output", "call_id": m["tool_call_id"], "output": _output(m)})
        elif m["role"] == "assistant":
            if m.get("content"):
                items.append({"role": "assistant", "content": m["content"]})
            for call in m.get("tool_calls") or ():
                function = call["function"]
                items.append({"type": "function_call", "call_id": call["id"], **function})
        else:
            items.append({"role": m["role"], "content": _input_parts(m["content"])})
    return instructions, items


def _input_parts(content: Any) -> Any:
    if isinstance(content, list):
        return [{"type": "input_text", "text": p["text"]} for p in content]
    return content


def _output(m: dict[str, Any]) -> Any:
    return _input_parts(m["content"])


def responses_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "function", **t["function"]} for t in tools]


def as_anthropic(messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """Anthropic's ``system`` and ``messages``: an assistant's text and ``tool_use`` blocks, its results as one user
    message of ``tool_result`` blocks (a result's parts as text blocks)."""
    system, out = None, []
    for m in messages:
        if m["role"] == "system":
            system = m["content"]
        elif m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if out and out[-1]["role"] == "user" and _all_results(out[-1]["content"]):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m["role"] == "assistant":
            blocks = [{"type": "text", "text": m["content"]}] if m.get("content") else []
            blocks += [
                {
                    "type": "tool_use",
                    "id": c["id"],
                    "name": c["function"]["name"],
                    "input": json.loads(c["function"]["arguments"]),
                }
                for c in m.get("tool_calls") or ()
            ]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "user", "content": m["content"]})
    return system, out


def _all_results(content: Any) -> bool:
    return isinstance(content, list) and all(b.get("type") == "tool_result" for b in content)


def anthropic_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "input_schema": t["function"]["parameters"],
        }
        for t in tools
    ]


def received_messages(path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """What an upstream received, as chat messages (an Anthropic-shaped body's blocks read back)."""
    if path.endswith("/messages"):
        return anthropic_as_messages(body)
    return list(body.get("messages") or ())
