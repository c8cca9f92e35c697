"""POST /v1/chat/completions: OpenAI's chat-completions wire format onto the gateway (``tda/gateway.py``).

Point any OpenAI client at ``base_url=http://host:port/v1`` with a tda token as its API key. The client's
conversation, tools and parameters are what the model gets, under the profile's window type. Headers (both
optional): ``X-TDA-Profile`` (or the model name ``tda/<profile>``) picks the profile (default: the profile
``default``, created on first use); ``X-TDA-Session`` records the calls in that session (created on first use);
without it a call is stateless and leaves nothing behind. ``X-TDA-New-Turn: true`` records the call as a new turn
even when the session has seen its conversation (a recorded request sent again, as the trace page copies it),
where it would otherwise be a retry of that turn.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from quart import Blueprint, Response, request
from quart_schema import document_request, tag_blueprint

from components.context_window.base import Message, ToolSchema, text_of_parts
from components.context_window.budget import BudgetExceeded
from components.context_window.session_cache import BoundedCache

from ..auth import actor, end_user, require
from ..client_call import ClientCall
from ..context_features import features_header, with_unsent_traced
from ..errors import Conflict, Invalid, NotFound, ServiceError, field_errors
from ..events import encode_sse
from ..gateway import complete, reply_headers, same_run, split
from ..llm import Choice, routing_error
from ..models import ProfileRow, SessionRow
from ..service import TDAService, service
from .common import json_object, sized_work, validate_in_slices
from .model_list import default_profile, profile_of_model
from .openapi import openai_wire
from .streaming import start_turn
from .wire_fields import CHAT_FIELDS, refuse_unknown_fields

bp = Blueprint("chat", __name__, url_prefix="/v1")
tag_blueprint(bp, ["chat"])

SESSION_HEADER = "X-TDA-Session"
PROFILE_HEADER = "X-TDA-Profile"
NEW_TURN_HEADER = "X-TDA-New-Turn"
PROFILE_DEFAULT_MODEL = ("tda", "default", "")
"""Model names that mean "the profile's model" (a client must send some model name)."""
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


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
    description: str | None = Field(None, max_length=100_000)
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool | None = None


class ChatTool(_Loose):
    type: Literal["function"] = "function"
    function: FunctionDefinition


MAX_MESSAGES = 100_000
"""The most messages a chat request holds (``_parse`` validates a longer list whole: its error names the limit)."""


class ChatRequest(BaseModel):
    """The fields tda reads. Every other field chat completions defines (temperature, response_format, seed, stop,
    ...) is passed to the model as sent; litellm drops the ones a provider does not support. A field outside the
    wire format is refused (``wire_fields.py``): litellm would read ``api_base`` or ``api_key`` as where to call."""

    model_config = ConfigDict(extra="allow")

    model: str = Field("tda", max_length=200)
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    tools: list[ChatTool] | None = Field(None, max_length=512)
    tool_choice: Literal["none", "auto", "required"] | dict[str, Any] | None = None
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    n: int = Field(1, ge=1, le=128)
    user: str | None = Field(None, max_length=256)

    def params(self) -> dict[str, Any]:
        """What goes to the model as the client sent it."""
        params = dict(self.model_extra or {})
        if self.n != 1:
            params["n"] = self.n
        if self.user is not None:
            params["user"] = self.user
        return params


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
@require("client")
async def chat_completions() -> Any:
    """An OpenAI chat completion (``stream: true`` for server-sent chunks), with tda's context management."""
    svc = service()
    body, messages = await sized_work(_read, await json_object(), "messages")
    if body.stream and body.n > 1:
        msg = "n > 1 cannot be streamed by tda; send stream: false, or n: 1"
        raise Invalid(msg, errors=[{"loc": "n", "msg": msg, "type": "value_error"}])
    split(messages)  # a chat without a user message is refused before anything is created
    session_id, profile_id = requested_ids(body.model)
    new_turn = new_turn_requested()  # checked before a session is created
    model = await requested_model(svc, body.model, session_id, profile_id)
    profile, session = await resolve_ids(svc, session_id, profile_id, body.user)
    call = ClientCall(
        messages=messages,
        tools=tuple(ToolSchema.from_openai(t.model_dump(exclude_none=True)) for t in body.tools or ()),
        tool_choice=body.tool_choice,
        model=model,
        max_tokens=body.max_completion_tokens or body.max_tokens,
        params=body.params(),
        user=end_user(body.user) if body.user else None,  # whose cases: narrowed to the token
        timings={},  # kept with the snapshot: the trace's latency breakdown
        new_turn=new_turn,
    )
    call = await with_unsent_traced(svc, call, profile)
    headers = {SESSION_HEADER: session.id} if session is not None else {}
    headers |= features_header(call)
    if body.stream:
        usage = bool((body.stream_options or {}).get("include_usage"))
        return await _streamed(svc, call, profile, session, usage, headers)
    result = await complete(svc, call, profile, session)
    return _completion(result), 200, {**headers, **reply_headers(result)}


def _read(data: dict[str, Any]) -> tuple[ChatRequest, list[Message]]:
    """The request and its conversation as tda's messages (work that grows with what the conversation adds: the
    messages an earlier body lent, ``ParsedBody``, are taken as made then, in one slice)."""
    raw = data.get("messages")
    lent = _sent.lent(raw) if isinstance(raw, list) and len(raw) <= MAX_MESSAGES else []
    body, lent = _parse(data, lent)
    messages = [*lent, *_sent.messages(data["messages"][len(lent) :], body.messages, len(lent))]
    _sent.lend(data["messages"], messages)
    body.messages = []  # let go here (in the worker thread): freeing 100,000 validated messages takes ~70 ms
    return body, messages


class _SentMessages:
    """The messages clients sent lately, by what they say (``key``): a chat client sends its whole conversation on
    every call, and a message it sent before is the one made then, not made again (at turn 100 of an agent session,
    making the 400 messages again was ~5 ms of each call). A message is the same whatever call it came in (it is
    immutable and safe to share). Bounded by count and by the characters held. The leading messages a body lent
    from an earlier one (``ParsedBody``: that body's very objects, at the same places) are found as one run, by
    comparing objects (``lent``): neither validated, keyed nor looked up one by one."""

    def __init__(self, most: int, most_chars: int) -> None:
        self.most, self.most_chars, self.chars = most, most_chars, 0
        self._messages: OrderedDict[tuple[Any, ...], Message] = OrderedDict()
        self._bodies: BoundedCache[int, tuple[list[Any], list[Message]]] = BoundedCache(LENDING_BODIES)
        """By the id of a body's first message object: the body's messages as parsed (held, so that id is not
        reused) and as made."""
        self._lock = threading.Lock()  # calls read their messages in worker threads, side by side

    def lent(self, raw: list[Any]) -> list[Message]:
        """The messages made for ``raw``'s leading items that are the very objects, at the same places, of the last
        body read that began with the same object (a body lends its leading messages to the next as one slice)."""
        with self._lock:
            found = self._bodies.get(id(raw[0])) if raw else None
        if found is None or found[0][0] is not raw[0]:
            return []
        was, made = found
        return made[: same_run(was, raw)]

    def lend(self, raw: list[Any], made: list[Message]) -> None:
        """``made`` (``raw`` as messages) for the next body that lends ``raw``'s leading items (``lent``)."""
        if raw:
            with self._lock:
                self._bodies.put(id(raw[0]), (raw, made))

    def messages(self, raw: list[Any], validated: list[ChatMessage], first: int = 0) -> list[Message]:
        """The ``validated`` messages (``raw`` as the client sent them, from its message ``first`` on, whose place an
        error names), each as it was made for an earlier call when one sent the same."""
        keys = [self.key(r) for r in raw]
        with self._lock:
            found = [self._messages.get(key) if key is not None else None for key in keys]
            for key, message in zip(keys, found, strict=True):
                if message is not None:
                    self._messages.move_to_end(key)  # type: ignore[arg-type]  # a message found has a key
        made = [
            m if m is not None else _message(valid, i)
            for i, (m, valid) in enumerate(zip(found, validated, strict=False), start=first)
        ]
        self._keep([(k, m) for k, m, was in zip(keys, made, found, strict=True) if k is not None and was is None])
        return made

    @staticmethod
    def key(raw: Any) -> tuple[Any, ...] | None:
        """What makes ``_message``'s result: the fields ``ChatMessage`` reads (its others are ignored), each of which
        is text or absent once the message is valid; the calls by their ``repr`` (JSON's values spell theirs apart,
        and a quarter of ``json.dumps``'s time). None: a message with content parts (not kept)."""
        content = raw.get("content")
        if not isinstance(content, str | None):
            return None
        calls = raw.get("tool_calls")
        calls_key = None if calls is None else repr(calls)
        return raw.get("role"), content, raw.get("tool_call_id"), raw.get("name"), calls_key

    def _keep(self, made: list[tuple[tuple[Any, ...], Message]]) -> None:
        with self._lock:
            for key, message in made:
                size = _size(key)
                if size > self.most_chars // 8 or key in self._messages:
                    continue
                self._messages[key] = message
                self.chars += size
            while len(self._messages) > self.most or self.chars > self.most_chars:
                gone, _ = self._messages.popitem(last=False)
                self.chars -= _size(gone)


def _size(key: tuple[Any, ...]) -> int:
    """The characters a ``_SentMessages`` key holds (its message holds the same text)."""
    return len(key[1] or "") + len(key[4] or "")


SENT_MESSAGES = 8_192
SENT_CHARS = 16_000_000
"""What ``_sent`` holds at most: messages, and characters of their text (a few long conversations)."""
LENDING_BODIES = 32
"""Bodies whose messages ``_sent`` holds as made, for the next body that lends them (one a conversation: each call
takes its conversation's place)."""
_sent = _SentMessages(SENT_MESSAGES, SENT_CHARS)


def _parse(data: dict[str, Any], lent: list[Message]) -> tuple[ChatRequest, list[Message]]:
    """The request validated, with the messages ``lent`` (``_SentMessages.lent``: the leading ones) left out of its
    validation when the others alone are valid (its ``messages`` then holds those, or the first when none is new),
    else validated whole (the errors name the whole list's places, and no message is taken as lent)."""
    refuse_unknown_fields(data, CHAT_FIELDS, "chat completions")
    try:
        if lent:
            with contextlib.suppress(ValidationError):
                messages = data["messages"][len(lent) :] or data["messages"][:1]
                return validate_in_slices(ChatRequest, {**data, "messages": messages}, "messages"), lent
        return validate_in_slices(ChatRequest, data, "messages"), []
    except ValidationError as exc:
        raise Invalid("the request is invalid; fix the fields listed in errors", errors=field_errors(exc)) from None


def _message(m: ChatMessage, index: int) -> Message:
    if m.role == "tool" and not m.tool_call_id:
        raise Invalid(
            f"messages[{index}] is a tool result without tool_call_id; say which call it answers",
            errors=[{"loc": f"messages.{index}.tool_call_id", "msg": "required for role 'tool'", "type": "missing"}],
        )
    role = "system" if m.role == "developer" else m.role
    content = m.content
    if isinstance(content, list) and not all(isinstance(p.get("type"), str) for p in content):
        msg = "every content part needs a 'type' (text, image_url, input_audio, file)"
        raise Invalid(f"messages[{index}]: {msg}", errors=[{"loc": f"messages.{index}.content", "msg": msg}])
    parts = tuple(content) if isinstance(content, list) else None
    text = text_of_parts(parts) if parts is not None else content if isinstance(content, str) else ""
    return Message(
        role=role,
        content=text,
        parts=parts,
        tool_calls=tuple(c.model_dump() for c in m.tool_calls or ()),
        tool_call_id=m.tool_call_id,
        name=m.name,
    )


async def requested_model(svc: TDAService, name: str, session_id: str | None, profile_id: str | None) -> str | None:
    """The litellm model a request names, or None for the profile's model. Checked before anything is created: a
    name litellm cannot route is a 422, except at an upstream with a base URL, where any name is a model there."""
    if name in PROFILE_DEFAULT_MODEL or profile_of_model(name):
        return None
    why = await routing_error(name)
    if why and not svc.llm.upstream.merged((await _profile_of(svc, session_id, profile_id)).upstream).base_url:
        msg = f"model {name!r} names no provider litellm knows ({why}); send 'tda' for the profile's model"
        raise Invalid(msg, errors=[{"loc": "model", "msg": msg, "type": "value_error"}])
    return name


async def _profile_of(svc: TDAService, session_id: str | None, profile_id: str | None) -> Any:
    """The profile a call will run under (nothing is created to find out); ``upstream`` {} when none exists yet."""
    with contextlib.suppress(NotFound):
        if session_id is not None:
            return await svc.store.profiles.current((await svc.store.sessions.get(session_id)).profile_id)
        return await svc.store.profiles.current(profile_id or default_profile())
    return ProfileRow(id=profile_id or default_profile(), upstream={})


def requested_ids(model: str) -> tuple[str | None, str | None]:
    """The session and profile ids a call's headers (and model name ``tda/<profile>``) name, checked."""
    session_id = request.headers.get(SESSION_HEADER)
    profile_id = request.headers.get(PROFILE_HEADER)
    by_model = profile_of_model(model)
    if by_model is not None and profile_id not in (None, by_model):
        msg = f"model 'tda/{by_model}' names profile {by_model!r}, {PROFILE_HEADER} names {profile_id!r}; send one"
        raise Invalid(msg, errors=[{"loc": "model", "msg": msg, "type": "value_error"}])
    profile_id = by_model or profile_id
    for header, value in ((SESSION_HEADER, session_id), (PROFILE_HEADER, profile_id)):
        if value is not None and not _ID.match(value):
            msg = "use 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
            raise Invalid(f"{header} {value!r} is not an id: {msg}", errors=[{"loc": header, "msg": msg}])
    return session_id, profile_id


def new_turn_requested() -> bool:
    """Whether the call asks to be a new turn of its session (``X-TDA-New-Turn``), checked."""
    value = request.headers.get(NEW_TURN_HEADER, "false").strip().lower()
    if value not in ("true", "false", "1", "0"):
        msg = f"{NEW_TURN_HEADER} {value!r} is not a yes or no: send true (record a new turn) or false"
        raise Invalid(msg, errors=[{"loc": NEW_TURN_HEADER, "msg": msg, "type": "value_error"}])
    return value in ("true", "1")


async def resolve_ids(
    svc: TDAService, session_id: str | None, profile_id: str | None, user: str | None
) -> tuple[ProfileRow, SessionRow | None]:
    """The profile and session of a call (no session: stateless). A named session is created on first use, for
    the caller's token and the user the request names (OpenAI's ``user``: it narrows, never widens, ``end_user``)."""
    if session_id is None:
        return await _profile(svc, profile_id), None
    try:
        session = await svc.store.sessions.get(session_id)
    except NotFound:
        profile = await _profile(svc, profile_id)
        fields = {"id": session_id, "profile_id": profile.id, "user_id": end_user(user)}
        with contextlib.suppress(Conflict):  # another request created it meanwhile
            await svc.store.sessions.create(fields, actor())
        return profile, await svc.store.sessions.get(session_id)
    if profile_id is not None and session.profile_id != profile_id:
        raise Conflict(f"session {session_id!r} is bound to profile {session.profile_id!r}, not {profile_id!r}")
    return await svc.store.profiles.current(session.profile_id), session


async def _profile(svc: TDAService, profile_id: str | None) -> ProfileRow:
    if profile_id is not None:
        return await svc.store.profiles.current(profile_id)  # 404 names it
    try:
        return await svc.store.profiles.current(default_profile())
    except NotFound:
        # A gateway's default: the client brings its own system prompt, and no call is shown another session's
        # turns (an admin can share champion cases on purpose).
        fields = {"name": "Default", "type": "tool_enabled", "system_prompt": "", "case_sharing": "session"}
        with contextlib.suppress(Conflict):
            await svc.store.profiles.create(default_profile(), fields, actor())
    return await svc.store.profiles.get(default_profile())


# --- OpenAI's response shapes ------------------------------------------------------------------------


def _completion_id(result: dict[str, Any]) -> str:
    if result["session_id"] is None:
        return f"chatcmpl-tda-{uuid.uuid4().hex}"
    return f"chatcmpl-tda-{result['session_id']}-{result['snapshot_id']}"


def _usage(result: dict[str, Any]) -> dict[str, Any]:
    prompt, completion = int(result["tokens_in"]), int(result["tokens_out"])
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    cached = (result.get("model_call") or {}).get("cache_read_tokens")
    if cached:  # as OpenAI reports a prompt-cache hit
        usage["prompt_tokens_details"] = {"cached_tokens": int(cached)}
    if result.get("cut"):  # what the window left out of the conversation sent (docs/service.md)
        usage["tda"] = result["cut"]
    return usage


def _completion(result: dict[str, Any]) -> dict[str, Any]:
    first = Choice(result["answer"], result["tool_calls"], result["finish_reason"], result["logprobs"])
    return {
        "id": _completion_id(result),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": result["model"],
        "choices": [_choice(i, c) for i, c in enumerate((first, *result["more"]))],
        "usage": _usage(result),
    }


def _choice(index: int, choice: Choice) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": choice.text or None}
    if choice.tool_calls:
        message["tool_calls"] = choice.tool_calls
    return {"index": index, "message": message, "finish_reason": choice.finish_reason, "logprobs": choice.logprobs}


def _chunk(chunk_id: str, model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": chunk_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }
    return encode_sse(body)


async def _streamed(
    svc: TDAService,
    call: ClientCall,
    profile: ProfileRow,
    session: SessionRow | None,
    usage: bool,
    headers: dict[str, str],
) -> Response:
    """Server-sent chunks as the model answers; an error after it started arrives as an ``error`` event."""
    streamed = await start_turn(svc, call, profile, session)
    model = call.model or profile.model or svc.settings.model
    chunk_id = f"chatcmpl-tda-{uuid.uuid4().hex}"

    async def events() -> AsyncIterator[bytes]:
        yield _chunk(chunk_id, model, {"role": "assistant", "content": ""})
        async with contextlib.aclosing(streamed.deltas()) as deltas:
            async for delta in deltas:
                yield _chunk(chunk_id, model, delta)
        if (exc := streamed.error()) is not None:
            message = exc.message if isinstance(exc, ServiceError) else f"{type(exc).__name__}: {exc}"
            yield encode_sse({"error": {"message": message, "type": getattr(exc, "code", "internal_error")}})
        else:
            result = streamed.turn.result()
            yield _chunk(chunk_id, result["model"], {}, result["finish_reason"])
            if usage:
                yield encode_sse(
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

    return streamed.response(events(), headers)
