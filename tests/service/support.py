"""Fixture modules and bodies shared by the service tests (a unique module name: tests/ has no packages)."""

from __future__ import annotations

import json
import socket
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import openai

if TYPE_CHECKING:
    from tda.service import TDAService

ECHO = '''
from components.context_window.base import ContextModule, Message, text_contribution, Contribution, newest_first


class Echo(ContextModule):
    """System prompt plus the valid history: enough to watch budgets move."""

    async def contribute(self, budget, ctx):
        prompt = text_contribution(self.module_id, [ctx.profile.system_prompt], placement="system")
        history = tuple(reversed([(m,) async for _, m in newest_first(ctx.session.message_source()) if m.valid]))
        return Contribution(self.module_id, units=prompt.units + history, placement="history", trim_from="start")
'''

BOOM = """
from components.context_window.base import ContextModule


class Boom(ContextModule):
    async def contribute(self, budget, ctx):
        raise RuntimeError("fixture module failing on purpose")
"""


def write_module(folder: Path, module_id: str, cls: str, code: str, **manifest: Any) -> Path:
    target = folder / module_id
    target.mkdir(parents=True, exist_ok=True)
    data = {"module_id": module_id, "display_name": module_id.title(), "handler": {"class": cls}, **manifest}
    (target / "manifest.json").write_text(json.dumps(data))
    (target / "handler.py").write_text(textwrap.dedent(code))
    return target


FIXTURE_TYPE = {
    "id": "fixture",
    "name": "Fixture",
    "modules": {
        "fixture_echo": {"target_pct": 60, "min_pct": 0, "max_pct": 90, "priority": 90},
        "fixture_boom": {"target_pct": 20, "min_pct": 0, "max_pct": 50, "priority": 50},
    },
    "condensation_order": ["fixture_echo"],
}


class ScriptedModel:
    """The mock model, scripted reply by reply (the way simonw/llm scripts a fake model). Each reply is a text, an
    exception (the provider failing), a list of ``(call_id, tool_name, arguments)`` tool calls, or a tuple of a text
    and such calls (a reply with both); a text goes through the OpenAI SDK at the mock's in-process upstream
    (tda/mock_upstream.py), anything else through litellm as ``mock_response``, so the service's real paths run.
    ``sent`` keeps what each call was sent."""

    def __init__(self, *replies: Any) -> None:
        from tda.llm import LLM

        self.replies = list(replies)
        self.sent: list[dict[str, Any]] = []
        model = self

        class _LLM(LLM):
            def mock_reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
                return model._next()

            async def complete(self, model_name: str, messages: Any, tools: Any, **kwargs: Any) -> Any:
                model.sent.append({"model": model_name, "messages": messages, "tools": tools, **kwargs})
                return await super().complete(model_name, messages, tools, **kwargs)

        self.llm = _LLM(mock=True)

    def _next(self) -> Any:
        reply = self.replies.pop(0) if self.replies else "Done."
        if isinstance(reply, str | Exception):  # litellm raises an exception given as the mock response
            return reply
        from litellm import ModelResponse

        text, reply = reply if isinstance(reply, tuple) else (None, reply)
        calls = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, name, args in reply
        ]
        message = {"role": "assistant", "content": text, "tool_calls": calls}
        return ModelResponse(
            choices=[{"index": 0, "finish_reason": "tool_calls", "message": message}],
            usage={"prompt_tokens": 0, "completion_tokens": 9, "total_tokens": 9},
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """The app served on 127.0.0.1 (the ``served`` fixture), its scripted model, and the official SDK pointed at it."""

    def __init__(self, svc: TDAService, model: ScriptedModel, base_url: str, token: str) -> None:
        self.svc, self.model, self.base_url, self.token = svc, model, base_url, token
        self.clients: list[openai.AsyncOpenAI] = []

    def client(self, key: str | None = None) -> openai.AsyncOpenAI:
        """The official SDK, pointed at tda: base_url and a tda token as the API key are all it takes."""
        client = openai.AsyncOpenAI(base_url=self.base_url, api_key=key or self.token, max_retries=0, timeout=30)
        self.clients.append(client)
        return client

    async def get(self, path: str, method: str = "GET") -> Any:
        import httpx

        async with httpx.AsyncClient(base_url=self.base_url.removesuffix("/v1"), timeout=30) as http:
            r = await http.request(method, path, headers={"Authorization": f"Bearer {self.token}"})
            assert r.status_code == 200, r.text
            return r.json()


NUL_REQUESTS = [
    # (method, path, JSON body, the location the 422 must name)
    ("POST", "/v1/context-window-types", {"id": "nul_type", "name": "Nul\u0000"}, "name"),  # + a valid type's fields
    ("POST", "/v1/profiles", {"id": "nul_p2", "type": "llm_only", "system_prompt": "a\u0000b"}, "system_prompt"),
    ("POST", "/v1/sessions", {"id": "nul_s2", "profile_id": "nul_p", "title": "t\u0000"}, "title"),
    (
        "POST",
        "/v1/sessions/nul_s/messages",
        {"messages": [{"role": "user", "content": "\u0000", "turn": 1}]},
        "messages.0.content",
    ),
    (
        "POST",
        "/v1/sessions/nul_s/messages",
        {"messages": [{"role": "user", "content": "x", "turn": 1, "n\u0000": 1}]},
        "messages.0.'n\\\\u0000'",
    ),
    ("POST", "/v1/sessions/nul_s/attachments", {"name": "notes.txt", "text": "a\u0000"}, "text"),
    ("POST", "/v1/sessions/nul_s/turns", {"query": "what is\u0000 this"}, "query"),
    ("PATCH", "/v1/sessions/nul_s", {"title": "\u0000"}, "title"),
    (
        "POST",
        "/v1/chat/completions",
        {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi\u0000"}]},
        "messages.0.content",
    ),
    ("GET", "/v1/sessions/nul%00s", None, "path"),
    ("GET", "/v1/sessions?user_id=a%00", None, "query.user_id"),
]


async def check_nul_is_refused_before_anything_is_written(client: Any, headers: dict[str, str]) -> None:
    """Every text a client sends may hold a NUL (JSON's \\u0000): 422 naming where, and nothing stored; the same
    on SQLite and PostgreSQL (which cannot store NUL in text, and answered 500 after a half-written turn)."""
    r = await client.post("/v1/profiles", json={"id": "nul_p", "type": "llm_only"}, headers=headers)
    assert r.status_code == 201, await r.get_json()
    r = await client.post("/v1/sessions", json={"id": "nul_s", "profile_id": "nul_p"}, headers=headers)
    assert r.status_code == 201, await r.get_json()
    balanced = await (await client.get("/v1/context-window-types/balanced", headers=headers)).get_json()
    valid_type = {k: v for k, v in balanced.items() if k not in ("version", "updated_at", "etag", "is_default")}
    for method, path, body, loc in NUL_REQUESTS:
        if path == "/v1/context-window-types":
            body = {**valid_type, **body}
        r = await client.open(path, method=method, json=body, headers=headers)
        reply = await r.get_json()
        assert r.status_code == 422, (path, reply)
        error = reply["error"] if isinstance(reply["error"], dict) else reply  # OpenAI's shape on its routes
        assert error["errors"][0]["loc"] == loc and "NUL" in error["message"], (path, reply)
        assert error is reply or error["param"] == loc
    session = await (await client.get("/v1/sessions/nul_s", headers=headers)).get_json()
    assert session["title"] == ""
    for listing in ("turns", "snapshots", "messages", "attachments"):
        r = await client.get(f"/v1/sessions/nul_s/{listing}", headers=headers)
        assert r.status_code == 200 and not [v for v in (await r.get_json()).values() if v and isinstance(v, list)]
    for missing in ("/v1/sessions/nul_s2", "/v1/profiles/nul_p2", "/v1/context-window-types/nul_type"):
        assert (await client.get(missing, headers=headers)).status_code == 404, missing


LOOKUP_ORDERS = {
    "type": "function",
    "function": {
        "name": "lookup_orders",
        "description": "Look up a customer's orders.",
        "parameters": {"type": "object", "properties": {"customer": {"type": "string"}}, "required": ["customer"]},
    },
}


async def check_a_tool_loop_is_recorded_whole(client: Any, headers: dict[str, str], model: ScriptedModel) -> None:
    """A chat client's session turn whose tool loop runs two more steps, through the API (the same on SQLite and
    PostgreSQL): the turn's row adds up its steps as the client was told them (the tokens of each call's usage,
    every tool result in order, the last step's answer), its messages are the conversation as sent, in order, and
    every step's snapshot is priced with its call. The step after the first is recorded on what the turn holds
    (``extend_turn``), so a lost or doubled step shows here."""
    rows = [{"order": 1, "status": "open"}, {"order": 2, "status": "closed"}]
    model.replies = [
        [("call_1", "lookup_orders", {"customer": "ACME"})],
        [("call_2", "lookup_orders", {"customer": "Initech"})],
        "ACME has 1 open order; Initech none.",
    ]
    r = await client.post("/v1/profiles", json={"id": "loop_p", "type": "tool_enabled"}, headers=headers)
    assert r.status_code == 201, await r.get_json()
    call_headers = {**headers, "X-TDA-Session": "loop_s", "X-TDA-Profile": "loop_p"}
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Which of ACME's and Initech's orders are open?"}]
    usages = []
    for step in range(3):
        body = {"model": "tda", "messages": messages, "tools": [LOOKUP_ORDERS]}
        r = await client.post("/v1/chat/completions", json=body, headers=call_headers)
        completion = await r.get_json()
        assert r.status_code == 200, completion
        usages.append(completion["usage"])
        reply = {k: v for k, v in completion["choices"][0]["message"].items() if v is not None}
        messages.append(reply)
        if step < 2:
            result = json.dumps(rows[step:])
            messages.append({"role": "tool", "tool_call_id": reply["tool_calls"][0]["id"], "content": result})
    turns = (await (await client.get("/v1/sessions/loop_s/turns", headers=headers)).get_json())["turns"]
    assert [(t["turn"], t["outcome"], t["answer"]) for t in turns] == [(1, "success", messages[-1]["content"])]
    turn = turns[0]
    assert turn["tokens_in"] == sum(u["prompt_tokens"] for u in usages)
    assert turn["tokens_out"] == sum(u["completion_tokens"] for u in usages)
    assert [r["rows"] for r in turn["results"]] == [rows, rows[1:]]
    stored = (await (await client.get("/v1/sessions/loop_s/messages", headers=headers)).get_json())["messages"]
    assert [(m["role"], m["content"] or "") for m in stored] == [(m["role"], m.get("content") or "") for m in messages]
    assert [c["id"] for m in stored for c in m["tool_calls"]] == ["call_1", "call_2"]
    session = await (await client.get("/v1/sessions/loop_s", headers=headers)).get_json()
    assert session["message_count"] == len(messages)
    snapshots = (await (await client.get("/v1/sessions/loop_s/snapshots", headers=headers)).get_json())["snapshots"]
    assert len(snapshots) == 3 and all(s["turn"] == 1 and s["snapshot"].get("model_call") for s in snapshots)
    assert snapshots[-1]["id"] == turn["snapshot_id"]
