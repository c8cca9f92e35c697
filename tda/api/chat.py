"""POST /v1/chat/completions: OpenAI's chat-completions wire format, onto the same turn code as /v1/sessions.

Point any OpenAI client at ``base_url=http://host:port/v1`` with a tda token as its API key. Headers:
``X-TDA-Session`` names the session (created on first use; without it every call gets a new one, answered
in the same header), ``X-TDA-Profile`` binds the profile of a new session (default: the profile ``default``,
created on first use). The client sends its whole chat each time; tda merges what is new, assembles the
window under the profile's type, calls the model through litellm and records the turn and its tool loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import re
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from quart import Blueprint, Response, request
from quart_schema import document_request, tag

from components.context_window.base import Message, ToolSchema
from components.context_window.budget import BudgetExceeded

from ..auth import actor, require
from ..errors import Conflict, Invalid, NotFound, ServiceError, field_errors
from ..llm import routing_error
from ..service import TDAService, service
from ..turns import TurnOptions, chat_turn
from .common import json_object
from .model_list import profile_of_model, session_base_url
from .openapi import openai_wire

bp = Blueprint("chat", __name__, url_prefix="/v1")
tag(["chat"])(bp)

SESSION_HEADER = "X-TDA-Session"
PROFILE_HEADER = "X-TDA-Profile"
DEFAULT_PROFILE = "default"
PROFILE_DEFAULT_MODEL = ("tda", "default", "")
"""Model names that mean "the profile's model" (a client must send some model name)."""
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_background: set[asyncio.Task[Any]] = set()


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class CalledFunction(_Loose):
    name: str = Field(min_length=1, max_length=128)
    arguments: str = Field("", max_length=1_000_000)


class ToolCall(_Loose):
    id: str = Field(min_length=1, max_length=100)
    type: Literal["function"] = "function"
    function: CalledFunction


class ChatMessage(_Loose):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = Field(None)
    tool_calls: list[ToolCall] | None = Field(None, max_length=128)
    tool_call_id: str | None = Field(None, min_length=1, max_length=100)
    name: str | None = Field(None, max_length=100)


class FunctionDefinition(_Loose):
    name: str = Field(min_length=1, max_length=128)
    description: str = Field("", max_length=100_000)
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ChatTool(_Loose):
    type: Literal["function"] = "function"
    function: FunctionDefinition


class ChatRequest(_Loose):
    """The fields tda reads; others OpenAI defines (temperature, seed, ...) are accepted and not used."""

    model: str = Field("tda", max_length=200)
    messages: list[ChatMessage] = Field(min_length=1, max_length=10_000)
    tools: list[ChatTool] | None = Field(None, max_length=512)
    tool_choice: Literal["none", "auto", "required"] | dict[str, Any] | None = None
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    n: int = Field(1, ge=1, le=1, description="one choice per call")


@bp.errorhandler(ServiceError)
async def openai_error(exc: ServiceError) -> tuple[dict[str, Any], int]:
    """Errors in OpenAI's shape, so SDKs show the message (the details tda adds stay alongside)."""
    return {"error": {"message": exc.message, "type": exc.code, "code": exc.code, "param": None, **exc.details}}, (
        exc.status
    )


@bp.errorhandler(BudgetExceeded)
async def over_budget(exc: BudgetExceeded) -> tuple[dict[str, Any], int]:
    return {"error": {"message": str(exc), "type": "budget_exceeded", "code": "budget_exceeded", "param": None}}, 422


@bp.post("/chat/completions")
@openai_wire
@document_request(ChatRequest)
@require("admin")
async def chat_completions() -> Any:
    """An OpenAI chat completion (``stream: true`` for server-sent chunks), with tda's context management."""
    svc = service()
    body = _parse(await json_object())
    by_model = profile_of_model(body.model)  # "tda/<profile_id>" selects the profile
    session_id = await _session(svc, by_model)
    options = TurnOptions(
        tools=tuple(ToolSchema.from_openai(t.model_dump()) for t in body.tools) if body.tools is not None else None,
        tool_choice=body.tool_choice,
        model=None if body.model in PROFILE_DEFAULT_MODEL or by_model else body.model,
        max_tokens=body.max_completion_tokens or body.max_tokens,
    )
    why = options.model is not None and await routing_error(options.model)
    if why and not await session_base_url(svc, session_id):  # at a base URL any name is a model (openai/<name>)
        msg = f"model {options.model!r} names no provider litellm knows ({why}); send 'tda' for the profile's model"
        raise Invalid(msg, errors=[{"loc": "model", "msg": msg, "type": "value_error"}])
    conversation = [_message(m, i) for i, m in enumerate(body.messages)]
    headers = {SESSION_HEADER: session_id}
    if body.stream:
        usage = bool((body.stream_options or {}).get("include_usage"))
        return await _streamed(svc, session_id, conversation, options, usage, headers)
    result = await chat_turn(svc, session_id, conversation, options, actor())
    return _completion(result), 200, {**headers, **_tda_headers(result)}


def _parse(data: dict[str, Any]) -> ChatRequest:
    try:
        return ChatRequest.model_validate(data)
    except ValidationError as exc:
        raise Invalid("the request is invalid; fix the fields listed in errors", errors=field_errors(exc)) from None


def _message(m: ChatMessage, index: int) -> Message:
    if m.role == "tool" and not m.tool_call_id:
        raise Invalid(
            f"messages[{index}] is a tool result without tool_call_id; say which call it answers",
            errors=[{"loc": f"messages.{index}.tool_call_id", "msg": "required for role 'tool'", "type": "missing"}],
        )
    content = m.content
    if isinstance(content, list):  # content parts: tda reads the text ones
        content = "".join(str(part.get("text", "")) for part in content if part.get("type", "text") == "text")
    role = "system" if m.role == "developer" else m.role
    return Message(
        role=role,  # type: ignore[arg-type]
        content=content or "",
        tool_calls=tuple(c.model_dump() for c in m.tool_calls or ()),
        tool_call_id=m.tool_call_id,
    )


async def _session(svc: TDAService, by_model: str | None = None) -> str:
    """The session the headers name, created on first use (bound to the named or the default profile).
    ``by_model``: the profile the request's ``model`` names (``tda/<profile_id>``)."""
    session_id = request.headers.get(SESSION_HEADER) or f"chat-{uuid.uuid4().hex[:16]}"
    profile_id = request.headers.get(PROFILE_HEADER)
    if by_model is not None and profile_id not in (None, by_model):
        msg = f"model 'tda/{by_model}' names profile {by_model!r}, {PROFILE_HEADER} names {profile_id!r}; send one"
        raise Invalid(msg, errors=[{"loc": "model", "msg": msg, "type": "value_error"}])
    profile_id = by_model or profile_id
    for header, value in ((SESSION_HEADER, session_id), (PROFILE_HEADER, profile_id)):
        if value is not None and not _ID.match(value):
            msg = "use 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
            raise Invalid(f"{header} {value!r} is not an id: {msg}", errors=[{"loc": header, "msg": msg}])
    try:
        row = await svc.store.sessions.get(session_id)
    except NotFound:
        profile = await _profile(svc, profile_id)
        with contextlib.suppress(Conflict):  # another request created it meanwhile
            await svc.store.sessions.create({"id": session_id, "profile_id": profile}, actor())
        return session_id
    if profile_id is not None and row.profile_id != profile_id:
        raise Conflict(f"session {session_id!r} is bound to profile {row.profile_id!r}, not {profile_id!r}")
    return session_id


async def _profile(svc: TDAService, profile_id: str | None) -> str:
    if profile_id is not None:
        await svc.store.profiles.get(profile_id)  # 404 names it
        return profile_id
    try:
        await svc.store.profiles.get(DEFAULT_PROFILE)
    except NotFound:
        fields = {"name": "Default", "type": "tool_enabled", "system_prompt": "You are a helpful assistant."}
        with contextlib.suppress(Conflict):
            await svc.store.profiles.create(DEFAULT_PROFILE, fields, actor())
    return DEFAULT_PROFILE


# --- OpenAI's response shapes ------------------------------------------------------------------------


def _completion_id(result: dict[str, Any]) -> str:
    return f"chatcmpl-tda-{result['session_id']}-{result['snapshot_id']}"


def _usage(result: dict[str, Any]) -> dict[str, int]:
    prompt, completion = int(result["tokens_in"]), int(result["tokens_out"])
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _completion(result: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": result["answer"] or None}
    if result["tool_calls"]:
        message["tool_calls"] = result["tool_calls"]
    return {
        "id": _completion_id(result),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": result["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": result["finish_reason"], "logprobs": None}],
        "usage": _usage(result),
    }


def _tda_headers(result: dict[str, Any]) -> dict[str, str]:
    return {"X-TDA-Turn": str(result["turn"]), "X-TDA-Snapshot": str(result["snapshot_id"])}


def _chunk(chunk_id: str, model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": chunk_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }
    return _sse(body)


def _sse(body: Any) -> bytes:
    return f"data: {json.dumps(body, separators=(',', ':'))}\n\n".encode()


async def _streamed(
    svc: TDAService,
    session_id: str,
    conversation: list[Message],
    options: TurnOptions,
    usage: bool,
    headers: dict[str, str],
) -> Response:
    """Run the turn in a task that hands deltas over a queue. Errors before the model starts answering (a bad
    chat, an unknown profile) are plain HTTP errors; later ones arrive as an ``error`` event. A client that goes
    away does not cancel the turn: it is still recorded."""
    deltas: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    turn = asyncio.create_task(chat_turn(svc, session_id, conversation, _with_delta(options, deltas.put), actor()))
    _background.add(turn)
    turn.add_done_callback(_background.discard)
    first = asyncio.create_task(deltas.get())
    await asyncio.wait({turn, first}, return_when=asyncio.FIRST_COMPLETED)
    if turn.done() and turn.exception() is not None and not first.done():
        first.cancel()
        raise turn.exception()  # type: ignore[misc]
    model = options.model or await _model_of(svc, session_id)
    chunk_id = f"chatcmpl-tda-{session_id}-{uuid.uuid4().hex[:8]}"

    async def events() -> AsyncIterator[bytes]:
        yield _chunk(chunk_id, model, {"role": "assistant", "content": ""})
        pending: asyncio.Task[dict[str, Any]] | None = first
        try:
            while pending is not None:
                await asyncio.wait({turn, pending}, return_when=asyncio.FIRST_COMPLETED)
                if pending.done():
                    yield _chunk(chunk_id, model, pending.result())
                    pending = asyncio.create_task(deltas.get())
                elif turn.done():
                    pending.cancel()
                    pending = None
        finally:  # the client went away: stop waiting for deltas (the turn itself goes on and is recorded)
            if pending is not None:
                pending.cancel()
        while not deltas.empty():
            yield _chunk(chunk_id, model, deltas.get_nowait())
        if turn.exception() is not None:
            exc = turn.exception()
            message = exc.message if isinstance(exc, ServiceError) else f"{type(exc).__name__}: {exc}"
            yield _sse({"error": {"message": message, "type": getattr(exc, "code", "internal_error")}})
        else:
            result = turn.result()
            yield _chunk(chunk_id, result["model"], {}, result["finish_reason"])
            if usage:
                yield _sse(
                    {
                        "id": chunk_id,
                        "object": "chat.completion.chunk",
                        "created": int(time.time()),
                        "model": result["model"],
                        "choices": [],
                        "usage": _usage(result),
                    }
                )
        yield b"data: [DONE]\n\n"

    response = Response(events(), mimetype="text/event-stream", headers={**headers, "Cache-Control": "no-cache"})
    response.timeout = None
    return response


async def _model_of(svc: TDAService, session_id: str) -> str:
    """The model the session's turns call when the request names none (its profile's, else the service's)."""
    profile = await svc.store.profiles.get((await svc.store.sessions.get(session_id)).profile_id)
    return profile.model or svc.settings.model


def _with_delta(options: TurnOptions, put: Any) -> TurnOptions:
    return dataclasses.replace(options, on_delta=put)
