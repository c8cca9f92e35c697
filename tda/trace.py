"""A turn's trace: the window as it was sent (messages and tools, each with its module and token count).

The service does not store the assembled text (it can be large and is derived data): it assembles the stored
inputs again, as replay does, and says whether that reproduces the recorded snapshot exactly. Assembly is
deterministic, so for an unchanged history the text is the text that was sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from components.context_window.base import ToolSchema
from components.context_window.token_estimator import REPLY_PRIMING, estimator_for

from .attribution import attribution, owners_of, take
from .replay import comparable, diff, reassemble

if TYPE_CHECKING:
    from .service import TDAService


async def trace(svc: TDAService, snapshot_id: int, type_id: str | None = None) -> dict[str, Any]:
    """The trace of a recorded snapshot; with ``type_id``, the same turn assembled under that saved type instead."""
    row = await svc.store.sessions.snapshot(snapshot_id)
    other = await svc.store.types.get(type_id) if type_id else None
    assembled, ctx = await reassemble(svc, row, other.type if other else None)
    tokens = estimator_for(ctx.model)
    owners = owners_of(assembled.contributions.values())
    who = attribution(assembled, ctx.model, owners)
    messages = [{**chat, **w} for chat, w in zip(assembled.messages, who, strict=True)]
    schemas = [ToolSchema.from_openai(t) for t in assembled.tools]
    tool_tokens = [tokens.count_tool(s) for s in schemas]
    tools = [
        {"tool": t, "module_id": take(owners, t), "tokens": n}
        for t, n in zip(assembled.tools, tool_tokens, strict=True)
    ]
    return {
        "snapshot_id": row.id,
        "session_id": row.session_id,
        "turn": row.turn,
        "type_id": other.id if other else row.type_id,
        "type_version": other.version if other else row.type_version,
        "model": row.model,
        "query": row.inputs.get("query", ""),
        "identical": not diff(comparable(row.data), comparable(assembled.snapshot.to_dict())),
        "reply_priming": REPLY_PRIMING,
        "tools_overhead": tokens.count_tools(schemas) - sum(tool_tokens),
        "messages": messages,
        "tools": tools,
        "snapshot": assembled.snapshot.to_dict() if other else row.data,
        "model_call": row.data.get("model_call"),
        "timings_ms": row.data.get("timings_ms"),
        "request": request_of(row),
    }


def request_of(row: Any) -> dict[str, Any]:
    """The request that made this window, as its client sent it, to send again (``body`` None when the conversation
    was too long to keep). No credentials: the caller adds its own token."""
    inputs = row.inputs or {}
    gateway = inputs.get("gateway")
    if gateway is None:  # POST /v1/sessions/{id}/turns
        note = (
            "a later step of the turn's tool loop: this request starts the turn again"
            if "continuation" in inputs
            else ""
        )
        path = f"/v1/sessions/{quote(row.session_id, safe='')}/turns"
        return {"method": "POST", "path": path, "headers": {}, "body": {"query": inputs.get("query", "")}, "note": note}
    # Sent again, it is a new turn of the session: as a retry it would add to this turn's record.
    headers = {"X-TDA-Session": row.session_id, "X-TDA-New-Turn": "true"}
    if gateway.get("chat") is None:
        note = "the conversation had too many messages to keep, so the request cannot be rebuilt"
        return {"method": "POST", "path": "/v1/chat/completions", "headers": headers, "body": None, "note": note}
    # Snapshots older than the fields client_model and tool_choice name the resolved model and no tool_choice.
    model = gateway["client_model"] if "client_model" in gateway else inputs.get("model")
    body: dict[str, Any] = {"model": model or "tda", "messages": [*gateway["instructions"], *gateway["chat"]]}
    if gateway.get("tools"):
        body["tools"] = gateway["tools"]
    if gateway.get("tool_choice") is not None:
        body["tool_choice"] = gateway["tool_choice"]
    if gateway.get("max_tokens") is not None:
        body["max_tokens"] = gateway["max_tokens"]
    body.update(gateway.get("params") or {})  # temperature, seed, user, n, ... as sent
    return {"method": "POST", "path": "/v1/chat/completions", "headers": headers, "body": body, "note": ""}
