"""Reading what reached the fake upstream, and what the client sent, for the gateway tests."""

from __future__ import annotations

import base64
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import openai

from components.context_window.metering import DEFAULT_INSTRUCTION
from modules.conversation_history.handler import SUMMARY_INSTRUCTION
from modules.knowledge_context.handler import FILTER_INSTRUCTION, REFORMULATE_INSTRUCTION
from tests.gateway.upstream import Recorded, responses_as_messages

BALANCE = "250.00 EUR"
"""Not the leak test's figure: that one must appear in its own session only."""
SYSTEM_PROMPT = "You are Penny, the bank's balance assistant. Always answer in one sentence."


def balance_of(account: str) -> str:
    """What the get_balance tool returns (every framework's tool wraps this)."""
    return f"Account {account}: balance {BALANCE}"


GET_BALANCE = {
    "type": "function",
    "function": {
        "name": "get_balance",
        "description": "The current balance of a bank account.",
        "parameters": {
            "type": "object",
            "properties": {"account": {"type": "string", "description": "The account number."}},
            "required": ["account"],
        },
    },
}


AUXILIARY_INSTRUCTIONS = (DEFAULT_INSTRUCTION, SUMMARY_INSTRUCTION, FILTER_INSTRUCTION, REFORMULATE_INSTRUCTION)
"""How each auxiliary call tda makes starts its one message (``metering.prompt_of``)."""


def is_auxiliary(request: Recorded) -> bool:
    """A call tda made of its own (a summary, a rewrite), not one a client's request was sent as."""
    first = (request.body.get("messages") or [{}])[0].get("content")
    return isinstance(first, str) and first.startswith(AUXILIARY_INSTRUCTIONS)


def text_of(content: Any) -> str:
    """A message's text, whether a string or a list of content parts."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def messages_of(recorded: Recorded) -> list[dict[str, Any]]:
    """The conversation an upstream request carried, as chat messages (a Responses API input is read as such)."""
    if recorded.path == "/responses":
        return responses_as_messages(recorded.body)
    return recorded.body.get("messages") or []


def leading_instructions(recorded: Recorded) -> str:
    """The text of the system/developer messages before the first user message sent upstream."""
    out = []
    for message in messages_of(recorded):
        if message.get("role") not in ("system", "developer"):
            break
        out.append(text_of(message.get("content")))
    return "\n".join(out)


def tool_names(recorded: Recorded) -> list[str]:
    return [(t.get("function") or t).get("name") for t in recorded.body.get("tools") or []]


def tool_results(recorded: Recorded) -> list[dict[str, Any]]:
    return [m for m in messages_of(recorded) if m.get("role") == "tool"]


def user_texts(recorded: Recorded) -> list[str]:
    return [text_of(m.get("content")) for m in messages_of(recorded) if m.get("role") == "user"]


def answered_call_ids(recorded: Recorded) -> set[str]:
    """Tool call ids of the assistant messages sent upstream."""
    calls = [c for m in messages_of(recorded) if m.get("role") == "assistant" for c in m.get("tool_calls") or []]
    return {c.get("call_id") or c["id"] for c in calls}


@dataclass
class ClientCalls:
    """Counts the model calls a client makes (an httpx event hook on the client's own HTTP client)."""

    paths: list[str] = field(default_factory=list)

    async def _record(self, request: httpx.Request) -> None:
        if request.method == "POST":
            self.paths.append(request.url.path)

    def http_client(self, headers: dict[str, str] | None = None) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=30, headers=headers or {}, event_hooks={"request": [self._record]})

    @property
    def model_calls(self) -> int:
        return sum(p.endswith(("/chat/completions", "/responses")) for p in self.paths)


def png_data_url(width: int = 2, height: int = 2) -> str:
    """A small valid PNG (red and blue pixels), as a data URL: written here with zlib, no imaging library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + (b"\xff\x00\x00" if y % 2 else b"\x00\x00\xff") * width for y in range(height))
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
    return "data:image/png;base64," + base64.b64encode(png).decode()


@dataclass
class Gateway:
    """The running tda: its /v1 base URL and an admin token (the API key clients send)."""

    base_url: str
    token: str
    log: Path | None = None
    """The server's output (None: no tda in between, the harness's control)."""
    clients: list[openai.AsyncOpenAI] = field(default_factory=list)

    def client(self) -> openai.AsyncOpenAI:
        """The official SDK pointed at tda: base_url and a tda token as the API key are all it takes."""
        client = openai.AsyncOpenAI(base_url=self.base_url, api_key=self.token, max_retries=0, timeout=30)
        self.clients.append(client)
        return client

    async def get(self, path: str) -> httpx.Response:
        async with httpx.AsyncClient(base_url=self.base_url.removesuffix("/v1"), timeout=30) as http:
            return await http.get(path, headers={"Authorization": f"Bearer {self.token}"})

    async def post(self, path: str, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
        async with httpx.AsyncClient(base_url=self.base_url.removesuffix("/v1"), timeout=30) as http:
            auth = {"Authorization": f"Bearer {self.token}"}
            return await http.post(path, json=body, headers=auth | (headers or {}))

    async def session(self, session_id: str) -> dict[str, Any]:
        r = await self.get(f"/v1/sessions/{session_id}")
        assert r.status_code == 200, r.text
        return r.json()
