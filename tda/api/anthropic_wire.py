"""Anthropic's Messages API wire format, translated to the gateway's chat messages and back.

In: ``system`` (a string or text blocks) becomes the leading system message; each message's blocks become chat
content parts (text, images as data or http URLs, PDFs as files, a text document as its text), ``tool_use``
blocks an assistant's tool calls, ``tool_result`` blocks tool messages (before the user message whose blocks
they led); ``thinking`` blocks stay in the assistant's parts as sent (an Anthropic model gets them back; litellm
keeps them in place). ``cache_control`` stays on the block it marks (on a tool result, on its last part); on a
tool, beside the tool. Only the body fields the Messages API defines are read: any other field (``api_base``,
``api_key``, ``extra_headers``, ...) is refused with a 422 naming it (``wire_fields``, as on the OpenAI routes), so
nothing a client sends picks the host or the credentials of the model call.

Out: the gateway's reply as a ``message`` (text then ``tool_use`` blocks), or as Anthropic's event stream:
``message_start``, each block's ``content_block_start`` / ``content_block_delta`` (``text_delta``,
``input_json_delta``) / ``content_block_stop``, ``message_delta`` (stop reason and usage), ``message_stop``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from components.context_window.base import Message, ToolSchema

from ..client_call import ClientCall
from ..errors import Invalid, field_errors
from ..events import encode_sse
from .common import validate_in_slices
from .wire_fields import refuse_unknown_fields

REFUSED_FIELDS = {
    "container": "tda runs no code-execution containers; leave container out",
    "mcp_servers": "tda calls no MCP servers for the model; send their tools as custom tools",
    "workspace_id": "the upstream's workspace is the profile's to choose (its upstream settings); leave it out",
    "fallbacks": "fallback models are the profile's (upstream.fallbacks); leave fallbacks out",
    "fallback_credit_token": "credentials for the upstream are the profile's; leave it out",
    "billing_policy": "billing at the upstream is the profile's; leave it out",
    "thread": "tda keeps conversations by X-TDA-Session; send the whole conversation and leave thread out",
}
"""Fields of the Messages API that tda can neither apply nor forward to every upstream, or that would let a client
choose where the model call goes or whose credentials it uses: refused, never dropped."""
FORWARDED = (
    "thinking",
    "top_k",
    "service_tier",
    "speed",
    "diagnostics",
    "inference_geo",
    "user_profile_id",
    "context_management",
    "compaction",
    "output_config",
    "output_format",
)
"""Fields sent on to the model as the client set them (litellm drops those a provider has no use for)."""
STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens", "content_filter": "refusal"}
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    529: "overloaded_error",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as sent: `false` is no number


class Metadata(_Strict):
    user_id: str | None = Field(None, max_length=256)


class AnthropicMessage(_Strict):
    role: Literal["user", "assistant"]
    content: str | list[dict[str, Any]] = Field(max_length=10_000)


class CountTokensRequest(_Strict):
    """The fields of ``POST /v1/messages/count_tokens`` (Anthropic's API reference, the SDK's beta fields too)."""

    model: str = Field(max_length=200)
    messages: list[AnthropicMessage] = Field(min_length=1, max_length=100_000)
    system: str | list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = Field(None, max_length=512)
    tool_choice: dict[str, Any] | None = None
    cache_control: dict[str, Any] | None = None
    thinking: dict[str, Any] | None = None
    speed: Literal["standard", "fast"] | None = None
    context_management: dict[str, Any] | None = None
    compaction: dict[str, Any] | None = None
    output_config: dict[str, Any] | None = None
    output_format: dict[str, Any] | None = None
    mcp_servers: list[Any] | None = None
    user_profile_id: str | None = Field(None, max_length=256)
    workspace_id: str | None = None


class MessagesRequest(CountTokensRequest):
    """The fields of ``POST /v1/messages``; no others are accepted. ``temperature``, ``top_p`` and ``top_k`` are
    the API's sampling fields for the models that take them (SDKs before 2.x send them)."""

    max_tokens: int = Field(ge=1)
    stream: bool = False
    stop_sequences: list[str] | None = Field(None, max_length=64)
    temperature: float | None = Field(None, ge=0, le=1)
    top_p: float | None = Field(None, ge=0, le=1)
    top_k: int | None = Field(None, ge=0)
    metadata: Metadata | None = None
    service_tier: Literal["auto", "standard_only"] | None = None
    diagnostics: dict[str, Any] | None = None
    inference_geo: str | None = Field(None, max_length=64)
    container: Any = None
    fallbacks: Any = None
    fallback_credit_token: Any = None
    billing_policy: Any = None
    thread: Any = None


Request = TypeVar("Request", bound=CountTokensRequest)


def parse(kind: type[Request], data: dict[str, Any]) -> Request:
    """The request, its fields those the API defines (the model's fields; any other is a 422 naming it)."""
    refuse_unknown_fields(data, kind.model_fields, "Anthropic's Messages API")
    try:
        return validate_in_slices(kind, data, "messages")
    except ValidationError as exc:
        raise Invalid("the request is invalid; fix the fields listed in errors", errors=field_errors(exc)) from None


def read(kind: type[Request], data: dict[str, Any], anthropic_beta: str | None = None) -> tuple[Request, ClientCall]:
    """The request and the gateway's call it makes: work that grows with the conversation, which the routes run in
    a worker thread when it is long (``sized_work``). The validated messages are let go here, in that thread:
    freeing 100,000 of them takes ~70 ms, which the event loop would spend at the end of the request."""
    body = parse(kind, data)
    call = client_call(body, anthropic_beta)
    body.messages = []
    return body, call


def invalid(loc: str, msg: str) -> Invalid:
    return Invalid(f"{loc}: {msg}", errors=[{"loc": loc, "msg": msg, "type": "value_error"}])


# --- the request -------------------------------------------------------------------------------------------


def client_call(body: CountTokensRequest, anthropic_beta: str | None = None) -> ClientCall:
    """The request as the gateway's call (model None: the route resolves it)."""
    for name, why in REFUSED_FIELDS.items():
        if getattr(body, name, None) is not None:
            raise invalid(name, why)
    tools = tuple(_tool(t, f"tools.{i}") for i, t in enumerate(body.tools or ()))
    tool_choice, parallel = _tool_choice(body.tool_choice) if tools else (None, None)
    params = {name: getattr(body, name, None) for name in FORWARDED}
    user = None
    if isinstance(body, MessagesRequest):
        user = body.metadata.user_id if body.metadata else None
        params |= {
            "temperature": body.temperature,
            "top_p": body.top_p,
            "stop": body.stop_sequences,
            "user": user,
        }
    if parallel is False:
        params["parallel_tool_calls"] = False
    messages = conversation(body.messages)
    if body.cache_control is not None and messages:  # automatic caching: the mark goes on the last block
        messages[-1] = _marked(messages[-1], body.cache_control)
    return ClientCall(
        messages=[*_system(body.system), *messages],
        tools=tools,
        tool_choice=tool_choice,
        max_tokens=body.max_tokens if isinstance(body, MessagesRequest) else None,
        params={k: v for k, v in params.items() if v is not None},
        user=user,
        anthropic_beta=anthropic_beta,
        timings={},  # kept with the snapshot: the trace's latency breakdown
    )


def _marked(message: Message, cache_control: dict[str, Any]) -> Message:
    """``message`` with ``cache_control`` on its last content part (its text made a part when it has none)."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
    if message.parts is not None:
        parts = [dict(p) for p in message.parts]
    parts[-1]["cache_control"] = cache_control
    return Message.from_chat({**message.to_chat(), "content": parts})


def _system(system: str | list[dict[str, Any]] | None) -> list[Message]:
    if not system:
        return []
    if isinstance(system, str):
        return [Message("system", system)]
    parts = [_part(block, f"system.{i}", ("text",)) for i, block in enumerate(system)]
    return [Message.from_chat({"role": "system", "content": parts})]


def conversation(messages: list[AnthropicMessage]) -> list[Message]:
    """Anthropic's messages as chat messages, in order."""
    out: list[Message] = []
    for i, m in enumerate(messages):
        loc = f"messages.{i}.content"
        out += _user(m.content, loc) if m.role == "user" else [_assistant(m.content, loc)]
    return out


def _user(content: str | list[dict[str, Any]], loc: str) -> list[Message]:
    """A user message: its tool results (tool messages, first), then the rest of its blocks as one message."""
    if isinstance(content, str):
        return [Message("user", content)]
    results = [_tool_result(b, f"{loc}.{j}") for j, b in enumerate(content) if _kind(b) == "tool_result"]
    rest = [_part(b, f"{loc}.{j}", USER_BLOCKS) for j, b in enumerate(content) if _kind(b) != "tool_result"]
    return [*results, Message.from_chat({"role": "user", "content": rest})] if rest else results


def _assistant(content: str | list[dict[str, Any]], loc: str) -> Message:
    """An assistant message: ``tool_use`` blocks its tool calls; one plain text block its content, any other
    blocks (several texts, thinking, a cache mark) its parts as sent."""
    if isinstance(content, str):
        return Message("assistant", content)
    calls = [_tool_use(b, f"{loc}.{j}") for j, b in enumerate(content) if _kind(b) == "tool_use"]
    parts = [_part(b, f"{loc}.{j}", ASSISTANT_BLOCKS) for j, b in enumerate(content) if _kind(b) != "tool_use"]
    if not parts or (len(parts) == 1 and set(parts[0]) == {"type", "text"}):
        return Message("assistant", parts[0]["text"] if parts else "", tool_calls=tuple(calls))
    return Message.from_chat({"role": "assistant", "content": parts, "tool_calls": calls})


def _kind(block: Any) -> str | None:
    return block.get("type") if isinstance(block, dict) else None


USER_BLOCKS = ("text", "image", "document")
ASSISTANT_BLOCKS = ("text", "thinking", "redacted_thinking")


def _part(block: Any, loc: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    """One content block as a chat content part (its ``cache_control`` kept on it)."""
    kind = _kind(block)
    if kind not in allowed:
        raise invalid(f"{loc}.type", f"tda takes {', '.join(allowed)} blocks here, not {kind!r}")
    if kind in ("thinking", "redacted_thinking"):
        return dict(block)  # signed by the model that wrote it: sent back exactly as it came
    if kind == "text":
        if not isinstance(block.get("text"), str):
            raise invalid(f"{loc}.text", "a text block needs its text")
        part: dict[str, Any] = {"type": "text", "text": block["text"]}
    elif kind == "image":
        part = {"type": "image_url", "image_url": {"url": _source_url(block.get("source"), f"{loc}.source")}}
    else:
        part = _document(block.get("source"), f"{loc}.source")
    if block.get("cache_control") is not None:
        part["cache_control"] = block["cache_control"]
    return part


def _source_url(source: Any, loc: str) -> str:
    """An image or PDF source as a URL: base64 data as a data URL, a URL as itself."""
    kind = _kind(source)
    if kind == "base64" and isinstance(source.get("data"), str) and isinstance(source.get("media_type"), str):
        return f"data:{source['media_type']};base64,{source['data']}"
    if kind == "url" and isinstance(source.get("url"), str):
        return str(source["url"])
    raise invalid(loc, "tda has no Files API: send the source as base64 (with its media_type) or as a url")


def _document(source: Any, loc: str) -> dict[str, Any]:
    if _kind(source) == "text" and isinstance(source.get("data"), str):
        return {"type": "text", "text": source["data"]}
    if _kind(source) == "base64":
        return {"type": "file", "file": {"file_data": _source_url(source, loc)}}
    raise invalid(loc, "send a document as base64 data (a PDF) or as text (source.type 'text')")


def _tool_use(block: dict[str, Any], loc: str) -> dict[str, Any]:
    if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
        raise invalid(loc, "a tool_use block needs its id and name")
    arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
    return {"id": block["id"], "type": "function", "function": {"name": block["name"], "arguments": arguments}}


def _tool_result(block: dict[str, Any], loc: str) -> Message:
    call_id, content = block.get("tool_use_id"), block.get("content", "")
    if not isinstance(call_id, str) or not call_id:
        raise invalid(f"{loc}.tool_use_id", "a tool_result needs the tool_use_id of the call it answers")
    if isinstance(content, str):
        parts = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        parts = [_part(b, f"{loc}.content.{j}", USER_BLOCKS) for j, b in enumerate(content)]
    else:
        raise invalid(f"{loc}.content", "a tool_result's content is a string or a list of blocks")
    if block.get("cache_control") is not None and parts:
        parts[-1] = {**parts[-1], "cache_control": block["cache_control"]}
    if all(set(p) == {"type", "text"} for p in parts):
        return Message("tool", "\n".join(p["text"] for p in parts), tool_call_id=call_id)
    return Message.from_chat({"role": "tool", "content": parts, "tool_call_id": call_id})


def _tool(tool: dict[str, Any], loc: str) -> ToolSchema:
    if tool.get("type") not in (None, "custom"):
        msg = f"{tool.get('type')!r} tools are run by Anthropic; tda sends the client's custom tools only"
        raise invalid(f"{loc}.type", msg)
    if not isinstance(tool.get("name"), str) or not isinstance(tool.get("input_schema"), dict):
        raise invalid(loc, "a tool needs a name and an input_schema (a JSON schema object)")
    strict = tool.get("strict")
    try:
        return ToolSchema(
            tool["name"],
            str(tool.get("description") or ""),
            tool["input_schema"],
            strict if isinstance(strict, bool) else None,
            cache_control=tool.get("cache_control"),
        )
    except ValueError as exc:
        raise invalid(loc, str(exc)) from None


def _tool_choice(choice: dict[str, Any] | None) -> tuple[Any, bool | None]:
    """Anthropic's tool_choice as chat's, and whether parallel tool use is allowed (None: not said)."""
    if choice is None:
        return None, None
    parallel = False if choice.get("disable_parallel_tool_use") else None
    kind = choice.get("type")
    if kind in ("auto", "none"):
        return kind, parallel
    if kind == "any":
        return "required", parallel
    if kind == "tool" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}, parallel
    raise invalid("tool_choice", "tool_choice is {'type': 'auto' | 'any' | 'none'} or {'type': 'tool', 'name': ...}")


# --- the reply ---------------------------------------------------------------------------------------------


def message_of(
    message_id: str, result: Mapping[str, Any], context_management: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The gateway's result as Anthropic's ``message`` (``context_management``: its report of the edits applied)."""
    content = [dict(b) for b in result.get("thinking") or ()]
    content += [{"type": "text", "text": result["answer"]}] if result["answer"] else []
    content += [_tool_use_block(c) for c in result["tool_calls"]]
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": result["model"],
        "content": content,
        "stop_reason": stop_reason(result),
        "stop_sequence": None,
        "usage": usage(result),
        **({"context_management": dict(context_management)} if context_management is not None else {}),
    }


def stop_reason(result: Mapping[str, Any]) -> str:
    return "tool_use" if result["tool_calls"] else STOP_REASONS.get(str(result["finish_reason"]), "end_turn")


def usage(result: Mapping[str, Any]) -> dict[str, Any]:
    """Anthropic's usage: ``input_tokens`` are those neither read from nor written to the prompt cache; ``tda``
    what the window left out of the conversation sent, as on the OpenAI routes (docs/agents.md)."""
    call = result.get("model_call") or {}
    read, written = int(call.get("cache_read_tokens") or 0), int(call.get("cache_write_tokens") or 0)
    counted: dict[str, Any] = {
        "input_tokens": max(0, int(result["tokens_in"]) - read - written),
        "output_tokens": int(result["tokens_out"]),
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
    }
    if result.get("cut"):
        counted["tda"] = result["cut"]
    return counted


def _tool_use_block(call: Mapping[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    return {"type": "tool_use", "id": call["id"], "name": function.get("name", ""), "input": _input(function)}


def _input(function: Mapping[str, Any]) -> Any:
    """A call's arguments as the object Anthropic's ``input`` is (a model's unparseable text kept whole)."""
    arguments = function.get("arguments") or "{}"
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return {"arguments": arguments}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}


def error_body(status: int, message: str, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Anthropic's error shape (tda's details, such as the fields at fault, alongside the message)."""
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message, **(details or {})}}


def sse(event: str, data: Mapping[str, Any]) -> bytes:
    return encode_sse(data, event=event)


class StreamedBlocks:
    """The gateway's streamed deltas as Anthropic's events: a block opens when the text starts or a tool call
    does, and closes when the next one opens or the message ends."""

    def __init__(self, message_id: str, model: str) -> None:
        self.message_id, self.model = message_id, model
        self.index = -1
        self.open: tuple[str, int] | None = None
        """The open block: ("text", 0), ("tool", the call's index in the model's stream) or ("thinking", n)."""
        self.thoughts = 0
        """Thinking blocks signed so far: the next thinking text opens a new block."""

    def start(self) -> bytes:
        message: dict[str, Any] = {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        return sse("message_start", {"type": "message_start", "message": message})

    def delta(self, delta: Mapping[str, Any]) -> list[bytes]:
        out: list[bytes] = []
        for thought in delta.get("thinking_blocks") or ():
            out += self._thinking(thought)
        if delta.get("content"):
            if self.open != ("text", 0):
                out += self._next(("text", 0), {"type": "text", "text": ""})
            out.append(self._delta({"type": "text_delta", "text": delta["content"]}))
        for call in delta.get("tool_calls") or ():
            function = call.get("function") or {}
            key = ("tool", int(call.get("index") or 0))
            if self.open != key:
                block: dict[str, Any] = {
                    "type": "tool_use",
                    "id": call.get("id") or "",
                    "name": function.get("name"),
                    "input": {},
                }
                out += self._next(key, block)
            if function.get("arguments"):
                out.append(self._delta({"type": "input_json_delta", "partial_json": function["arguments"]}))
        return out

    def _thinking(self, block: Mapping[str, Any]) -> list[bytes]:
        """A Claude model's thinking, streamed as it sent it: text deltas, then the block's signature."""
        if block.get("type") == "redacted_thinking":
            self.thoughts += 1
            return [*self._next(("thinking", self.thoughts), dict(block)), *self._close()]
        out: list[bytes] = []
        key = ("thinking", self.thoughts)
        if self.open != key:
            out += self._next(key, {"type": "thinking", "thinking": "", "signature": ""})
        if block.get("thinking"):
            out.append(self._delta({"type": "thinking_delta", "thinking": block["thinking"]}))
        if block.get("signature"):
            out.append(self._delta({"type": "signature_delta", "signature": block["signature"]}))
            self.thoughts += 1
        return out

    def end(self, result: Mapping[str, Any], context_management: Mapping[str, Any] | None = None) -> list[bytes]:
        out = self._close()
        reason = {"stop_reason": stop_reason(result), "stop_sequence": None}
        delta: dict[str, Any] = {"type": "message_delta", "delta": reason, "usage": usage(result)}
        if context_management is not None:  # the edits applied, as Anthropic reports them
            delta["context_management"] = dict(context_management)
        out.append(sse("message_delta", delta))
        out.append(sse("message_stop", {"type": "message_stop"}))
        return out

    def _next(self, key: tuple[str, int], block: dict[str, Any]) -> list[bytes]:
        out = self._close()
        self.index += 1
        self.open = key
        out.append(
            sse("content_block_start", {"type": "content_block_start", "index": self.index, "content_block": block})
        )
        return out

    def _close(self) -> list[bytes]:
        if self.open is None:
            return []
        self.open = None
        return [sse("content_block_stop", {"type": "content_block_stop", "index": self.index})]

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return sse("content_block_delta", {"type": "content_block_delta", "index": self.index, "delta": delta})
