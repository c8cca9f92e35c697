"""Agent sessions shaped as real clients send them (issue 32's held-out check, session 49), for
bench/agent_shapes_bench.py and tests/service/test_agent_shapes.py.

tests/agent_session.py is one shape: user -> one tool call -> one result -> answer. Real agents also send several
calls in one assistant message (parallel calls) with results of every size (a 40K-token file read, a 5,000-row
query result, a one-line status), tool loops of 3-8 steps in one turn, assistant messages with text *and* calls,
``content: null``, and results as content parts. A ``Shape`` names such a mix; ``session`` makes its complete
turns and the newest turn's loop, deterministically. The wire forms of the same conversation (the Responses API's
items, Anthropic's blocks) are in tests/agent_wires.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": {arg: {"type": "string"}}, "required": [arg]},
        },
    }
    for name, description, arg in (
        ("read_file", "Read a file of the repository, whole.", "path"),
        ("run_query", "Run a read-only SQL query on the orders database; every row comes back.", "sql"),
        ("lookup_orders", "Look up a customer's orders as a JSON table.", "customer"),
        ("ping", "Check that a service answers: a one-line status.", "service"),
    )
]
SYSTEM = {"role": "system", "content": "You are the repository's and the order desk's agent. Use the tools."}


@dataclass(frozen=True)
class Shape:
    """A session's mix: ``turns`` complete turns before the newest, each with ``steps`` tool-loop steps of
    ``calls`` parallel calls (both cycled over turns), results of ``sizes`` (cycled over calls: "tiny", "table",
    "file" ~40K tokens, "rows" ~5,000 rows), and the newest turn's loop of ``loop`` steps."""

    name: str
    turns: int
    steps: tuple[int, ...] = (1,)
    calls: tuple[int, ...] = (1,)
    sizes: tuple[str, ...] = ("table",)
    loop: int = 1
    loop_sizes: tuple[str, ...] = ("table",)
    text_with_calls: bool = False
    """Assistant messages that call tools say something too (else ``content: null``)."""
    result_parts: bool = False
    """Tool results (and user questions) as lists of text parts rather than strings."""


SHAPES = {
    s.name: s
    for s in (
        Shape("parallel", turns=24, calls=(3, 1, 2, 4), sizes=("table", "tiny", "table", "tiny"), loop=2),
        Shape(
            "huge",
            turns=10,
            calls=(1, 2),
            sizes=("table", "tiny", "file", "tiny", "table", "rows"),
            loop=2,
            loop_sizes=("tiny", "file", "tiny"),
        ),
        Shape("loop", turns=16, steps=(3, 1, 5), calls=(1, 2), sizes=("table", "tiny"), loop=6),
        Shape(
            "mixed",
            turns=20,
            steps=(2, 1),
            calls=(2, 1),
            sizes=("table", "tiny", "table"),
            loop=3,
            text_with_calls=True,
            result_parts=True,
        ),
    )
}


def question(turn: int) -> str:
    return f"Turn {turn}: check customer CUST-{turn:03d}'s orders and the files they touch, then sum the open ones."


TURN = re.compile(r"^Turn (\d+):")


def call_id(turn: int, step: int, k: int) -> str:
    return f"call_{turn:03d}_{step}_{k}"


def result_text(size: str, turn: int, step: int, k: int) -> str:
    """A tool result of ``size``, distinct per call: "tiny" a status line; "table" ~1,000 tokens of JSON rows; "file"
    a ~40K-token source file; "rows" a 5,000-row query result (~35K tokens)."""
    seed = turn * 100 + step * 10 + k
    if size == "tiny":
        return f"service-{seed} ok ({seed % 97} ms)"
    if size == "table":
        rows = [
            {"order": f"ORD-{seed * 1000 + i:07d}", "status": ("open", "shipped")[(seed + i) % 2], "amount": i * 7 + 3}
            for i in range(40)
        ]
        return json.dumps(rows)
    if size == "file":
        return "".join(
            f"def handler_{seed}_{i}(request):\n    return request.size * {i} + {seed}\n" for i in range(2_000)
        )
    if size == "rows":
        header = "order_id,status,amount\n"
        return header + "".join(f"{seed * 10_000 + i},{('open', 'shipped')[i % 2]},{i % 997}\n" for i in range(5_000))
    raise ValueError(size)


def _tool_for(size: str) -> tuple[str, str]:
    return {
        "tiny": ("ping", "service"),
        "table": ("lookup_orders", "customer"),
        "file": ("read_file", "path"),
        "rows": ("run_query", "sql"),
    }[size]


def _content(text: str, parts: bool) -> Any:
    """``text`` as a string, or as two text parts (a client that sends parts) whose texts join back to it."""
    if not parts:
        return text
    cut = len(text) // 2
    return [{"type": "text", "text": text[:cut]}, {"type": "text", "text": text[cut:]}]


def _step(shape: Shape, turn: int, step: int, calls: int, sizes: list[str]) -> list[dict[str, Any]]:
    """One step of a loop: the assistant's calls, then their results (in order)."""
    tool_calls, results = [], []
    for k in range(calls):
        size = sizes[k % len(sizes)]
        name, arg = _tool_for(size)
        cid = call_id(turn, step, k)
        arguments = json.dumps({arg: f"{name}-{turn}-{step}-{k}"})
        tool_calls.append({"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}})
        content = _content(result_text(size, turn, step, k), shape.result_parts)
        results.append({"role": "tool", "tool_call_id": cid, "content": content})
    said = f"Step {step}: I call {calls} tool(s) for turn {turn}." if shape.text_with_calls else None
    return [{"role": "assistant", "content": said, "tool_calls": tool_calls}, *results]


def _sizes(shape: Shape, turn: int, newest: bool) -> list[str]:
    pool = shape.loop_sizes if newest else shape.sizes
    return [pool[(turn + i) % len(pool)] for i in range(len(pool))]


def turn_steps(shape: Shape, turn: int, newest: bool = False) -> list[list[dict[str, Any]]]:
    """A turn's loop, step by step (each its assistant call message and results)."""
    steps = shape.loop if newest else shape.steps[turn % len(shape.steps)]
    sizes = _sizes(shape, turn, newest)
    return [
        _step(shape, turn, step, shape.calls[(turn + step) % len(shape.calls)], sizes[step:] + sizes[:step])
        for step in range(1, steps + 1)
    ]


def answer(turn: int) -> dict[str, Any]:
    return {"role": "assistant", "content": f"Turn {turn} done: CUST-{turn:03d}'s open orders are summed above."}


def user(shape: Shape, turn: int) -> dict[str, Any]:
    return {"role": "user", "content": _content(question(turn), shape.result_parts)}


def complete_turn(shape: Shape, turn: int) -> list[dict[str, Any]]:
    return [user(shape, turn), *(m for step in turn_steps(shape, turn) for m in step), answer(turn)]


def history(shape: Shape) -> list[dict[str, Any]]:
    """The system message and the shape's complete turns."""
    return [SYSTEM, *(m for t in range(1, shape.turns + 1) for m in complete_turn(shape, t))]


def newest_calls(shape: Shape) -> list[list[dict[str, Any]]]:
    """What the client sends for the newest turn, call by call: the question, then each step's calls and results
    appended (a loop of ``loop`` steps is ``loop + 1`` calls; the last is answered by text)."""
    turn = shape.turns + 1
    sent = [*history(shape), user(shape, turn)]
    calls = [list(sent)]
    for step in turn_steps(shape, turn, newest=True):
        sent += step
        calls.append(list(sent))
    return calls


def reply_for(shape: Shape, turn: int, step: int) -> dict[str, Any]:
    """What the model answers to a turn's ``step``-th call (0: the question alone): the next step's calls, or the
    answer after the last."""
    steps = turn_steps(shape, turn, newest=turn == shape.turns + 1)
    return steps[step][0] if step < len(steps) else answer(turn)


def text_of(content: Any) -> str:
    """A message's text: a string as it is, parts' texts joined by newlines (as the Anthropic wire joins a
    tool_result's text blocks)."""
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content or ""


def script(shape: Shape) -> Any:
    """The fake upstream's script for ``shape``: a conversation (chat messages) -> the assistant message to answer
    with, found from the turn its last question names and the number of assistant messages after it."""

    def reply(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
        asked = [i for i, m in enumerate(messages) if m.get("role") == "user" and TURN.match(text_of(m["content"]))]
        if not asked:
            return None
        turn = int(TURN.match(text_of(messages[asked[-1]]["content"])).group(1))  # type: ignore[union-attr]
        step = sum(m.get("role") == "assistant" for m in messages[asked[-1] + 1 :])
        return reply_for(shape, turn, step)

    return reply
