"""A long agent session as a chat client sends it (issue 32's reproduction), for tests and bench/long_session_bench.py.

Each turn is user -> assistant tool call -> tool result -> assistant answer: 60 turns make 240 messages and about
170K tokens (the tool results are ~2,600-token JSON tables). ``tool_loop`` gives the two steps of the next turn.
"""

from __future__ import annotations

import json
from typing import Any

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "lookup_orders",
            "description": "Look up a customer's orders: one row per order with its status, amount and region.",
            "parameters": {
                "type": "object",
                "properties": {"customer": {"type": "string", "description": "The customer's id, e.g. CUST-12."}},
                "required": ["customer"],
            },
        },
    }
]
REGIONS = ("north", "south", "east", "west", "central")
STATUSES = ("open", "shipped", "returned", "cancelled")
ROWS = 55
"""Rows per tool result: ~2,600 tokens each."""


def customer(turn: int) -> str:
    return f"CUST-{turn:03d}"


def orders(turn: int, rows: int = ROWS) -> str:
    """The tool result of ``turn``: a JSON table of one customer's orders (deterministic)."""
    table = [
        {
            "order": f"ORD-{turn * 1000 + i:06d}",
            "customer": customer(turn),
            "status": STATUSES[(turn + i) % len(STATUSES)],
            "amount": round(10 + ((turn * 37 + i * 91) % 9000) / 7, 2),
            "region": REGIONS[(turn * 3 + i) % len(REGIONS)],
            "note": f"priority {(turn + i) % 5}, carrier {['DHL', 'UPS', 'FedEx'][i % 3]}",
        }
        for i in range(rows)
    ]
    return json.dumps(table)


def question(turn: int) -> str:
    return f"Turn {turn}: which orders of customer {customer(turn)} are still open, and what do they add up to?"


def call_id(turn: int) -> str:
    return f"call_{turn:04d}"


def tool_call(turn: int) -> dict[str, Any]:
    arguments = json.dumps({"customer": customer(turn)})
    return {"id": call_id(turn), "type": "function", "function": {"name": "lookup_orders", "arguments": arguments}}


def turn_messages(turn: int) -> list[dict[str, Any]]:
    """One complete turn: question, tool call, tool result, answer."""
    return [
        {"role": "user", "content": question(turn)},
        {"role": "assistant", "content": None, "tool_calls": [tool_call(turn)]},
        {"role": "tool", "tool_call_id": call_id(turn), "content": orders(turn)},
        {"role": "assistant", "content": f"Customer {customer(turn)} has open orders; see the table for totals."},
    ]


SYSTEM = {"role": "system", "content": "You are the order desk's agent. Use lookup_orders before you answer."}


def history(turns: int = 60) -> list[dict[str, Any]]:
    """The system message and ``turns`` complete turns."""
    return [SYSTEM, *(m for t in range(1, turns + 1) for m in turn_messages(t))]


def tool_loop(turns: int = 60) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The next turn's two steps as the client sends them: its question, then question + call + result."""
    step1 = [*history(turns), {"role": "user", "content": question(turns + 1)}]
    step2 = [*step1, *turn_messages(turns + 1)[1:3]]
    return step1, step2
