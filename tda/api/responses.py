"""POST /v1/responses: OpenAI's Responses API onto the chat gateway (``tda/gateway.py``), for the clients that speak
it (the OpenAI Agents SDK's default model, pydantic-ai's ``openai-responses:`` models, ``client.responses.create``).

The request's ``input`` items become the chat messages /v1/chat/completions would get: ``instructions`` the leading
system message, function calls an assistant message's tool calls, their outputs tool messages, reasoning items
dropped. A response id names the recorded call that produced it (``resp_<snapshot id>_<session id>``), so
``previous_response_id`` goes on from that call's conversation and reply, rebuilt from what its session recorded
(its instructions are not carried over, as OpenAI does). The session is ``X-TDA-Session``'s, else the previous
response's, else a new one, since OpenAI stores responses unless told not to: ``store: false`` without a session
is stateless, and its id cannot be continued.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from quart import Blueprint, Response
from quart_schema import document_request, tag_blueprint

from components.context_window.base import Message, ToolSchema
from components.context_window.budget import BudgetExceeded

from ..auth import end_user, require
from ..client_call import ClientCall
from ..context_features import features_header, responses_features, with_unsent_traced
from ..errors import Conflict, Invalid, NotFound, ServiceError, field_errors
from ..events import encode_sse
from ..gateway import answered, complete, reply_headers, split
from ..models import ProfileRow, SessionRow
from ..service import TDAService, service
from .chat import SESSION_HEADER, openai_error, over_budget, requested_ids, requested_model, resolve_ids
from .common import json_object, sized_work, validate_in_slices
from .openapi import openai_wire
from .streaming import start_turn
from .wire_fields import RESPONSES_FIELDS, refuse_unknown_fields

bp = Blueprint("responses", __name__, url_prefix="/v1")
tag_blueprint(bp, ["chat"])
bp.errorhandler(ServiceError)(openai_error)
bp.errorhandler(BudgetExceeded)(over_budget)

_RESPONSE_ID = re.compile(r"^resp_(\d{1,18})_([A-Za-z0-9][A-Za-z0-9_.-]{0,63})$")
IGNORED_ITEMS = ("reasoning", "compaction")
"""Input items with no chat equivalent: a reasoning model's own notes, which change nothing the model is sent, and
OpenAI's encrypted compaction summaries, which only OpenAI reads (kept out, and named in the snapshot:
``tda/context_features.py``)."""


class ResponsesRequest(BaseModel):
    """The fields tda reads. Those with a chat-completions equivalent reach the model as that; those tda acts on
    itself are named in the snapshot (``HANDLED_HERE``, ``tda/context_features.py``)."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field("tda", max_length=200)
    input: str | list[dict[str, Any]] = Field(max_length=100_000)
    instructions: str | None = Field(None, max_length=1_000_000)
    tools: list[dict[str, Any]] | None = Field(None, max_length=512)
    tool_choice: str | dict[str, Any] | None = None
    previous_response_id: str | None = Field(None, max_length=200)
    stream: bool = False
    max_output_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    top_logprobs: int | None = Field(None, ge=0, le=20)
    parallel_tool_calls: bool | None = None
    text: dict[str, Any] | None = None
    reasoning: dict[str, Any] | None = None
    metadata: dict[str, str] | None = None
    user: str | None = Field(None, max_length=256)
    store: bool | None = None
    truncation: str | None = None
    service_tier: str | None = None
    prompt_cache_key: str | None = Field(None, max_length=256)
    prompt_cache_retention: str | None = Field(None, max_length=16)
    safety_identifier: str | None = Field(None, max_length=256)
    background: bool | None = None
    conversation: Any = None
    prompt: Any = None
    context_management: Any = None
    moderation: dict[str, Any] | None = None
    prompt_cache_options: dict[str, Any] | None = None
    include: list[str] | None = None
    max_tool_calls: int | None = Field(None, ge=0)
    stream_options: dict[str, Any] | None = None


HANDLED_HERE = {
    "store": "tda records the response in a session (X-TDA-Session's, the previous response's, or a new one) "
    "unless store is false without X-TDA-Session",
    "previous_response_id": "the conversation goes on from the one the response's session recorded, and its reply",
    "include": "no extra output data is added: a reply carries what chat completions returns (logprobs through "
    "top_logprobs)",
    "max_tool_calls": "changes nothing: tda runs no built-in tools (the client runs its function tools)",
    "background": "false: tda answers in the request",
    "stream_options": "tda's own event stream (no obfuscation fields are added)",
}
"""Fields tda acts on itself (or that change nothing it does): named in the snapshot when sent."""


@bp.post("/responses")
@openai_wire
@document_request(ResponsesRequest)
@require("client")
async def create_response() -> Any:
    """An OpenAI response (``stream: true`` for its server-sent events), with tda's context management."""
    svc = service()
    body = await sized_work(_parse, await json_object(), "input")
    _refuse_unsupported(body)
    tools = _tools(body.tools or [])
    tool_choice, params = _tool_choice(body.tool_choice) if tools else None, _params(body, bool(tools))
    inputs = await sized_work(lambda sent: input_messages(sent["input"]), {"input": body.input}, "input")
    messages = [*instructions_of(body.instructions), *inputs]
    session_id, profile_id = requested_ids(body.model)
    if body.previous_response_id is not None:
        previous = await previous_call(svc, body.previous_response_id)
        if session_id is not None and session_id != previous.session_id:
            msg = f"previous_response_id is of session {previous.session_id!r}, not {session_id!r}"
            raise Conflict(f"{msg}: send X-TDA-Session: {previous.session_id}, or no X-TDA-Session")
        session_id = previous.session_id
        leading = len(instructions_of(body.instructions))
        messages[leading:leading] = await answered(svc, previous)
    elif session_id is None and body.store is not False:
        session_id = f"resp-{uuid.uuid4().hex[:20]}"  # OpenAI stores responses unless told not to
    split(messages)  # a conversation without a user message is refused before anything is created
    features = responses_features(body.context_management, body.truncation, compactions(body.input))
    for name in sorted(HANDLED_HERE.keys() & body.model_fields_set):
        features = features.noting(name, "tda", HANDLED_HERE[name])
    model = await requested_model(svc, body.model, session_id, profile_id)
    profile, session = await resolve_ids(svc, session_id, profile_id, body.user)
    call = ClientCall(
        messages=messages,
        tools=tools,
        tool_choice=tool_choice,
        model=model,
        max_tokens=body.max_output_tokens,
        params=params,
        user=end_user(body.user) if body.user else None,  # whose cases: narrowed to the token
        timings={},  # kept with the snapshot: the trace's latency breakdown
        features=features,
    )
    call = await with_unsent_traced(svc, call, profile)
    headers = {SESSION_HEADER: session.id} if session is not None else {}
    headers |= features_header(call)
    shape = _Shape(body, created_at=int(time.time()), ids=uuid.uuid4().hex)
    shape.model = model or profile.model or svc.settings.model
    if body.stream:
        return await _streamed(svc, call, profile, session, shape, headers)
    result = await complete(svc, call, profile, session)
    return shape.response(result), 200, {**headers, **reply_headers(result)}


@bp.get("/responses/<other_than(compact):response_id>")
@openai_wire
@require("client")
async def get_response(response_id: str) -> Any:
    """A stored response, rebuilt from the call its session recorded (usage is not kept; it is left out)."""
    svc = service()
    row = await previous_call(svc, response_id, param=None)
    reply = (await answered(svc, row))[-1]
    gateway = row.inputs["gateway"]
    echo = {
        "instructions": "\n\n".join(m["content"] for m in gateway["instructions"] if isinstance(m["content"], str))
        or None,
        "tools": [_flat_tool(t) for t in gateway["tools"]],
        "metadata": gateway["params"].get("metadata") or {},
    }
    result = {"answer": reply.content, "tool_calls": list(reply.tool_calls), "finish_reason": "stop"}
    shape = _Shape(None, created_at=int(row.created_at.timestamp()), ids=f"{row.id}", echo=echo)
    shape.model = row.model
    return shape.response(result, response_id=response_id)


# --- the request ----------------------------------------------------------------------------------------


def _parse(data: dict[str, Any]) -> ResponsesRequest:
    refuse_unknown_fields(data, RESPONSES_FIELDS, "the Responses API")
    try:
        return validate_in_slices(ResponsesRequest, data, "input")
    except ValidationError as exc:
        raise Invalid("the request is invalid; fix the fields listed in errors", errors=field_errors(exc)) from None


def _invalid(loc: str, msg: str) -> Invalid:
    return Invalid(f"{loc}: {msg}", errors=[{"loc": loc, "msg": msg, "type": "value_error"}], param=loc)


def _refuse_unsupported(body: ResponsesRequest) -> None:
    if body.background:
        raise _invalid("background", "tda answers in the request; send background: false (or leave it out)")
    if body.conversation is not None:
        raise _invalid("conversation", "tda has no Conversations API; send previous_response_id or X-TDA-Session")
    if body.prompt is not None:
        raise _invalid("prompt", "tda keeps no prompt templates; send the prompt as instructions")
    if isinstance(body.input, str) and not body.input:
        raise _invalid("input", "the input is empty; send the user's message")


def compactions(items: str | list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """The input's compaction items, by index (each needs its ``encrypted_content``)."""
    if isinstance(items, str):
        return []
    found = [(i, item) for i, item in enumerate(items) if item.get("type") == "compaction"]
    for i, item in found:
        if not isinstance(item.get("encrypted_content"), str):
            raise _invalid(f"input.{i}.encrypted_content", "a compaction item carries its encrypted_content")
    return found


def instructions_of(instructions: str | None) -> list[Message]:
    return [Message("system", instructions)] if instructions else []


def input_messages(items: str | list[dict[str, Any]]) -> list[Message]:
    """The input items as chat messages: consecutive function calls are one assistant message's tool calls (and
    join the assistant message just before them, as one reply), their outputs tool messages."""
    if isinstance(items, str):
        return [Message("user", items)]
    out: list[Message] = []
    for i, item in enumerate(items):
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            out.append(_message(item, f"input.{i}"))
        elif kind == "function_call":
            call = _function_call(item, f"input.{i}")
            if out and out[-1].role == "assistant":
                out[-1] = dataclasses.replace(out[-1], tool_calls=(*out[-1].tool_calls, call))
            else:
                out.append(Message("assistant", "", tool_calls=(call,)))
        elif kind == "function_call_output":
            out.append(_function_output(item, f"input.{i}"))
        elif kind not in IGNORED_ITEMS:
            msg = f"tda takes message, function_call, function_call_output and reasoning items, not {kind!r}"
            raise _invalid(f"input.{i}.type", msg)
    return out


def _message(item: dict[str, Any], loc: str) -> Message:
    role = item.get("role")
    if role not in ("user", "system", "developer", "assistant"):
        raise _invalid(f"{loc}.role", f"role {role!r} is not one of user, system, developer, assistant")
    content = item.get("content")
    if isinstance(content, str):
        return Message("system" if role == "developer" else role, content)
    if not isinstance(content, list):
        raise _invalid(f"{loc}.content", "content must be a string or a list of content parts")
    parts = [_part(p, f"{loc}.content.{j}") for j, p in enumerate(content)]
    if role != "user" or (all(p["type"] == "text" for p in parts) and len(parts) == 1):
        if any(p["type"] != "text" for p in parts):
            raise _invalid(f"{loc}.content", f"a {role} message's content is text only")
        return Message("system" if role == "developer" else role, "\n".join(p["text"] for p in parts))
    return Message.from_chat({"role": "user", "content": parts})


def _part(part: Any, loc: str) -> dict[str, Any]:
    """A Responses content part as its chat-completions equivalent."""
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in ("input_text", "output_text", "text", "refusal"):
        text = part.get("text", part.get("refusal"))
        if not isinstance(text, str):
            raise _invalid(loc, f"a {kind} part needs its text")
        return {"type": "text", "text": text}
    if kind == "input_image":
        if not isinstance(part.get("image_url"), str):
            raise _invalid(loc, "tda has no Files API: send the image as image_url (a URL or a data: URL)")
        image = {"url": part["image_url"], **({"detail": part["detail"]} if part.get("detail") else {})}
        return {"type": "image_url", "image_url": image}
    if kind == "input_file":
        file = {k: part[k] for k in ("file_data", "file_id", "filename") if isinstance(part.get(k), str)}
        if "file_data" not in file and "file_id" not in file:
            raise _invalid(loc, "an input_file needs file_data (base64, with filename) or file_id")
        return {"type": "file", "file": file}
    if kind == "input_audio" and isinstance(part.get("input_audio"), dict):
        return {"type": "input_audio", "input_audio": part["input_audio"]}
    raise _invalid(loc, f"content part type {kind!r} is not one of input_text, input_image, input_file, output_text")


def _function_call(item: dict[str, Any], loc: str) -> dict[str, Any]:
    for key in ("call_id", "name"):
        if not isinstance(item.get(key), str) or not item[key]:
            raise _invalid(f"{loc}.{key}", f"a function_call needs its {key}")
    arguments = item.get("arguments", "")
    if not isinstance(arguments, str):
        raise _invalid(f"{loc}.arguments", "arguments are a JSON text (a string)")
    return {"id": item["call_id"], "type": "function", "function": {"name": item["name"], "arguments": arguments}}


def _function_output(item: dict[str, Any], loc: str) -> Message:
    call_id, output = item.get("call_id"), item.get("output")
    if not isinstance(call_id, str) or not call_id:
        raise _invalid(f"{loc}.call_id", "a function_call_output needs the call_id of the call it answers")
    if isinstance(output, str):
        return Message("tool", output, tool_call_id=call_id)
    if not isinstance(output, list):
        raise _invalid(f"{loc}.output", "output must be a string or a list of content parts")
    parts = [_part(p, f"{loc}.output.{j}") for j, p in enumerate(output)]
    if all(p["type"] == "text" for p in parts):
        return Message("tool", "\n".join(p["text"] for p in parts), tool_call_id=call_id)
    return Message.from_chat({"role": "tool", "content": parts, "tool_call_id": call_id})


def _tools(tools: list[dict[str, Any]]) -> tuple[ToolSchema, ...]:
    out = []
    for i, tool in enumerate(tools):
        kind = tool.get("type")
        if kind != "function":
            msg = f"{kind!r} tools are hosted by OpenAI; tda sends the client's function tools only: drop it"
            raise _invalid(f"tools.{i}.type", msg)
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise _invalid(f"tools.{i}.name", "a function tool needs a name")
        try:
            out.append(ToolSchema.from_openai({"function": tool}))
        except (ValueError, TypeError) as exc:
            raise _invalid(f"tools.{i}", str(exc)) from None
    return tuple(out)


def _flat_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions tool in the Responses API's flat shape."""
    return {"type": "function", **tool["function"]}


def _tool_choice(choice: str | dict[str, Any] | None) -> Any:
    if choice is None or choice in ("none", "auto", "required"):
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    msg = "tool_choice is 'none', 'auto', 'required' or {'type': 'function', 'name': ...}"
    raise _invalid("tool_choice", msg)


def _params(body: ResponsesRequest, with_tools: bool) -> dict[str, Any]:
    """The request's parameters in chat-completions terms, as the client set them."""
    params: dict[str, Any] = {
        "temperature": body.temperature,
        "top_p": body.top_p,
        "metadata": body.metadata,
        "user": body.user,
        "service_tier": body.service_tier,
        "prompt_cache_key": body.prompt_cache_key,
        "prompt_cache_retention": body.prompt_cache_retention,
        "prompt_cache_options": body.prompt_cache_options,
        "moderation": body.moderation,
        "safety_identifier": body.safety_identifier,
        "parallel_tool_calls": body.parallel_tool_calls if with_tools else None,
    }
    if body.top_logprobs is not None:
        params.update(logprobs=True, top_logprobs=body.top_logprobs)
    if (effort := (body.reasoning or {}).get("effort")) is not None:
        params["reasoning_effort"] = effort
    text = body.text or {}
    params["verbosity"] = text.get("verbosity")
    params["response_format"] = _response_format(text.get("format"))
    return {k: v for k, v in params.items() if v is not None}


def _response_format(fmt: Any) -> dict[str, Any] | None:
    """``text.format`` as chat's ``response_format``."""
    if fmt is None or fmt == {"type": "text"}:
        return None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        if not isinstance(fmt.get("schema"), dict) or not isinstance(fmt.get("name"), str):
            raise _invalid("text.format", "a json_schema format needs a name and a schema (a JSON schema object)")
        schema = {k: fmt[k] for k in ("name", "description", "schema", "strict") if fmt.get(k) is not None}
        return {"type": "json_schema", "json_schema": schema}
    raise _invalid("text.format.type", f"format type {kind!r} is not one of text, json_object, json_schema")


async def previous_call(svc: TDAService, response_id: str, param: str | None = "previous_response_id") -> Any:
    """The snapshot of the call a response id names (404 in OpenAI's words for any other id)."""
    found = _RESPONSE_ID.match(response_id)
    missing = NotFound(
        f"Response with id {response_id!r} not found: tda continues the responses it stored (those of a session, "
        "or made without store: false); send the whole conversation as input instead",
        param=param,
    )
    if found is None:
        raise missing
    try:
        row = await svc.store.sessions.snapshot(int(found[1]))
    except NotFound:
        raise missing from None
    if row.session_id != found[2] or "gateway" not in (row.inputs or {}):
        raise missing
    return row


# --- the response ---------------------------------------------------------------------------------------


def _response_id(result: dict[str, Any]) -> str | None:
    if result.get("session_id") is None or result.get("snapshot_id") is None:
        return None
    return f"resp_{result['snapshot_id']}_{result['session_id']}"


def _status(finish_reason: str) -> tuple[str, dict[str, str] | None]:
    if finish_reason == "length":
        return "incomplete", {"reason": "max_output_tokens"}
    if finish_reason == "content_filter":
        return "incomplete", {"reason": "content_filter"}
    return "completed", None


class _Shape:
    """A response's fixed parts: its ids, creation time and the request's settings it repeats."""

    def __init__(
        self, body: ResponsesRequest | None, created_at: int, ids: str, echo: dict[str, Any] | None = None
    ) -> None:
        self.created_at = created_at
        self.message_id = f"msg_{ids}"
        self.call_prefix = f"fc_{ids}"
        self.id = f"resp_tda{ids}"
        """Until a recorded call names it: the id of a response that is not stored."""
        self.echo = echo or {}
        self.model = "tda"
        if body is not None:
            self.echo = {
                "instructions": body.instructions,
                "tools": [{"strict": None, **t} for t in body.tools or []],
                "tool_choice": body.tool_choice or "auto",
                "parallel_tool_calls": True if body.parallel_tool_calls is None else body.parallel_tool_calls,
                "previous_response_id": body.previous_response_id,
                "temperature": body.temperature,
                "top_p": body.top_p,
                "max_output_tokens": body.max_output_tokens,
                "metadata": body.metadata or {},
                "text": body.text or {"format": {"type": "text"}},
                "reasoning": body.reasoning,
                "truncation": body.truncation or "auto",  # tda's budgeting unless disabled (context_features)
                "store": body.store is not False,
                "user": body.user,
            }

    def response(
        self,
        result: dict[str, Any] | None,
        status: str | None = None,
        response_id: str | None = None,
        message_at: int = 0,
    ) -> dict[str, Any]:
        """The response object: in progress (no result yet), or with the result's output and usage."""
        out: dict[str, Any] = {
            "id": response_id or (result and _response_id(result)) or self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status or "in_progress",
            "error": None,
            "incomplete_details": None,
            "model": (result or {}).get("model") or self.model,
            "output": [],
            "usage": None,
            "tool_choice": "auto",
            "tools": [],
            "parallel_tool_calls": True,
            "metadata": {},
            **self.echo,
        }
        if result is not None:
            out["status"], out["incomplete_details"] = _status(result["finish_reason"])
            out["output"] = self.output(result, message_at)
            if "tokens_in" in result:
                out["usage"] = _usage(result)
        return out

    def output(self, result: dict[str, Any], message_at: int = 0) -> list[dict[str, Any]]:
        """The message (when there is text, or nothing else) at ``message_at`` among the function calls."""
        items = [self.function_call(i, c, "completed") for i, c in enumerate(result["tool_calls"])]
        if result["answer"] or not result["tool_calls"]:
            items.insert(message_at, self.message(result["answer"], "completed"))
        return items

    def message(self, text: str | None, status: str) -> dict[str, Any]:
        content = [] if text is None else [text_part(text)]
        return {"type": "message", "id": self.message_id, "status": status, "role": "assistant", "content": content}

    def function_call(
        self, index: int, call: dict[str, Any], status: str, arguments: str | None = None
    ) -> dict[str, Any]:
        function = call.get("function") or {}
        return {
            "type": "function_call",
            "id": f"{self.call_prefix}_{index}",
            "call_id": call.get("id") or "",
            "name": function.get("name") or "",
            "arguments": function.get("arguments") or "" if arguments is None else arguments,
            "status": status,
        }


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _usage(result: dict[str, Any]) -> dict[str, Any]:
    tokens_in, tokens_out = int(result["tokens_in"]), int(result["tokens_out"])
    usage: dict[str, Any] = {
        "input_tokens": tokens_in,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": tokens_out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tokens_in + tokens_out,
    }
    if result.get("cut"):  # what the window left out of the conversation sent (docs/service.md)
        usage["tda"] = result["cut"]
    return usage


# --- streaming ------------------------------------------------------------------------------------------


async def _streamed(
    svc: TDAService,
    call: ClientCall,
    profile: ProfileRow,
    session: SessionRow | None,
    shape: _Shape,
    headers: dict[str, str],
) -> Response:
    """The Responses API's events as the model answers; an error after it started arrives as ``response.failed``."""
    snapshot_id: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def snapshot_recorded(i: int) -> None:
        if not snapshot_id.done():
            snapshot_id.set_result(i)

    call = dataclasses.replace(call, on_snapshot=snapshot_recorded)
    streamed = await start_turn(svc, call, profile, session)

    async def events() -> AsyncIterator[bytes]:
        if session is not None:  # the id names the recorded call (stored before the model answers, as a rule)
            either: set[asyncio.Future[Any]] = {snapshot_id, streamed.turn}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if snapshot_id.done():
                shape.id = f"resp_{snapshot_id.result()}_{session.id}"
        stream = _Stream(shape)
        yield stream.event("response.created", response=shape.response(None))
        yield stream.event("response.in_progress", response=shape.response(None))
        async with contextlib.aclosing(streamed.deltas()) as deltas:
            async for delta in deltas:
                for sent in stream.delta(delta):
                    yield sent
        if (exc := streamed.error()) is not None:
            message = exc.message if isinstance(exc, ServiceError) else f"{type(exc).__name__}: {exc}"
            failed = {**shape.response(None, status="failed"), "error": {"code": "server_error", "message": message}}
            yield stream.event("response.failed", response=failed)
            return
        for sent in stream.finish(streamed.turn.result()):
            yield sent

    return streamed.response(events(), headers)


class _Stream:
    """The model's deltas as the Responses API's events, each with its ``type`` and ``sequence_number``: text as
    ``response.output_text.delta``, a function call's arguments as ``response.function_call_arguments.delta``,
    one output item at a time, each closed before the next opens (output indexes in the order they opened)."""

    def __init__(self, shape: _Shape) -> None:
        self.shape = shape
        self.sequence = 0
        self.order: list[int | None] = []
        """The output items as they opened: None the message, else a function call's place among the calls."""
        self.text: list[str] | None = None
        """The message's text so far while it is open."""
        self.calls: dict[int, int] = {}
        """The model's index of each function call opened -> its place among the calls."""
        self.open_call: tuple[int, dict[str, Any], list[str]] | None = None
        """The function call open: its place, its first delta and its arguments so far."""
        self.closed: set[int] = set()

    def event(self, kind: str, **fields: Any) -> bytes:
        body = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return encode_sse(body, kind)

    def delta(self, delta: dict[str, Any]) -> list[bytes]:
        out = []
        if text := delta.get("content"):
            if not self.order:
                out += self._open_message()
            if self.text is not None:  # text after a function call comes whole, with the completed response
                self.text.append(text)
                out.append(self.event("response.output_text.delta", **self._text_at(), delta=text, logprobs=[]))
        for call in delta.get("tool_calls") or ():
            out += self._call_delta(call)
        return out

    def finish(self, result: dict[str, Any]) -> list[bytes]:
        """The items still open closed with what the model sent in the end, those it did not stream sent whole,
        then ``response.completed`` (``response.incomplete`` when the reply was cut short)."""
        out = []
        if self.text is not None:
            out += self._close_message(result["answer"])
        elif None not in self.order and (result["answer"] or not result["tool_calls"]):
            out += [*self._open_message(), *self._close_message(result["answer"])]
        for place, call in enumerate(result["tool_calls"]):
            if place in self.closed:
                continue
            if place not in self.order:
                out += self._open_call(place, call)
            if self.open_call is None or self.open_call[0] != place or not self.open_call[2]:
                arguments = (call.get("function") or {}).get("arguments") or ""
                out.append(
                    self.event("response.function_call_arguments.delta", **self._call_at(place), delta=arguments)
                )
            out += self._close_call(place, call)
        message_at = self.order.index(None) if None in self.order else 0
        response = self.shape.response(result, message_at=message_at)
        kind = "response.completed" if response["status"] == "completed" else "response.incomplete"
        return [*out, self.event(kind, response=response)]

    def _call_delta(self, call: dict[str, Any]) -> list[bytes]:
        out = []
        index = call.get("index", 0)
        if index not in self.calls:
            if self.text is not None:
                out += self._close_message("".join(self.text))
            if self.open_call is not None:
                place, first, arguments = self.open_call
                out += self._close_call(place, _with_arguments(first, "".join(arguments)))
            self.calls[index] = len(self.calls)
            out += self._open_call(self.calls[index], call)
        if (fragment := (call.get("function") or {}).get("arguments")) and self.open_call is not None:
            place = self.calls[index]
            if self.open_call[0] == place:  # (a late fragment of a call already closed is in the completed response)
                self.open_call[2].append(fragment)
                out.append(self.event("response.function_call_arguments.delta", **self._call_at(place), delta=fragment))
        return out

    def _open_message(self) -> list[bytes]:
        self.order.append(None)
        self.text = []
        item = self.shape.message(None, "in_progress")
        return [
            self.event("response.output_item.added", output_index=self.order.index(None), item=item),
            self.event("response.content_part.added", **self._text_at(), part=text_part("")),
        ]

    def _close_message(self, text: str) -> list[bytes]:
        self.text = None
        item = self.shape.message(text, "completed")
        return [
            self.event("response.output_text.done", **self._text_at(), text=text, logprobs=[]),
            self.event("response.content_part.done", **self._text_at(), part=text_part(text)),
            self.event("response.output_item.done", output_index=self.order.index(None), item=item),
        ]

    def _open_call(self, place: int, call: dict[str, Any]) -> list[bytes]:
        self.order.append(place)
        self.open_call = (place, call, [])
        item = self.shape.function_call(place, call, "in_progress", arguments="")
        return [self.event("response.output_item.added", output_index=self.order.index(place), item=item)]

    def _close_call(self, place: int, call: dict[str, Any]) -> list[bytes]:
        self.open_call = None
        self.closed.add(place)
        done = self.shape.function_call(place, call, "completed")
        return [
            self.event(
                "response.function_call_arguments.done",
                **self._call_at(place),
                arguments=done["arguments"],
                name=done["name"],
            ),
            self.event("response.output_item.done", output_index=self.order.index(place), item=done),
        ]

    def _text_at(self) -> dict[str, Any]:
        return {"item_id": self.shape.message_id, "output_index": self.order.index(None), "content_index": 0}

    def _call_at(self, place: int) -> dict[str, Any]:
        return {"item_id": f"{self.shape.call_prefix}_{place}", "output_index": self.order.index(place)}


def _with_arguments(call: dict[str, Any], arguments: str) -> dict[str, Any]:
    return {**call, "function": {**(call.get("function") or {}), "arguments": arguments}}
