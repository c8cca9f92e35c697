"""POST /v1/responses/compact: OpenAI's compaction endpoint (the Agents SDK's compaction session calls it), answered
with tda's own condensation of the conversation.

OpenAI answers with the conversation's user messages and one ``compaction`` item: an encrypted summary only its
Responses API can read. tda answers with the window it would send the profile's model for the same request (the
profile's type condensing what does not fit), as plain output items the client sends back as ``input``: messages
(a summary the type made among them), function calls and their outputs. The leading instructions are left out, as
OpenAI leaves them out (they go with each request). Nothing is called or recorded; ``usage`` counts the
conversation received (``input_tokens``) and the items made of it (``output_tokens``), as tda counts the model's
tokens (plus any model calls the type's modules made to condense).
OpenAI's compaction items in the input are kept out of the window and named in ``provider_features``.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from quart import Blueprint
from quart_schema import document_request, tag_blueprint

from components.context_window.base import Message
from components.context_window.budget import BudgetExceeded
from components.context_window.token_estimator import estimator_for

from ..auth import require
from ..client_call import ClientCall
from ..context_features import responses_features
from ..errors import Conflict, Invalid, NotFound, ServiceError, field_errors
from ..gateway import answered, split, window, window_cut
from ..service import TDAService, service
from .chat import openai_error, over_budget, requested_ids, requested_model, resolve_ids
from .common import json_object, sized_work, validate_in_slices
from .openapi import openai_json
from .responses import compactions, input_messages, instructions_of, previous_call, text_part
from .wire_fields import COMPACT_FIELDS, refuse_unknown_fields

bp = Blueprint("responses_compact", __name__, url_prefix="/v1")
tag_blueprint(bp, ["chat"])
bp.errorhandler(ServiceError)(openai_error)
bp.errorhandler(BudgetExceeded)(over_budget)


class CompactRequest(BaseModel):
    """The fields of ``POST /v1/responses/compact``. The prompt-cache fields and ``service_tier`` are accepted and
    change nothing: no model is called."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field("tda", max_length=200)
    input: str | list[dict[str, Any]] | None = Field(None, max_length=100_000)
    instructions: str | None = Field(None, max_length=1_000_000)
    previous_response_id: str | None = Field(None, max_length=200)
    prompt_cache_key: str | None = Field(None, max_length=256)
    prompt_cache_options: dict[str, Any] | None = None
    prompt_cache_retention: str | None = Field(None, max_length=16)
    service_tier: str | None = None


@bp.post("/responses/compact")
@openai_json
@document_request(CompactRequest)
@require("client")
async def compact_response() -> Any:
    """The conversation compacted: the window tda would send for it, as output items to send back as ``input``."""
    svc = service()
    body = await sized_work(_parse, await json_object(), "input")
    kept_out = responses_features(None, None, compactions(body.input or [])).handled
    inputs = await sized_work(lambda sent: input_messages(sent["input"]), {"input": body.input or []}, "input")
    messages = [*instructions_of(body.instructions), *inputs]
    session_id, profile_id = requested_ids(body.model)
    if body.previous_response_id is not None:
        previous = await previous_call(svc, body.previous_response_id)
        if session_id is not None and session_id != previous.session_id:
            raise Conflict(f"previous_response_id is of session {previous.session_id!r}, not {session_id!r}")
        session_id = previous.session_id
        leading = len(instructions_of(body.instructions))
        messages[leading:leading] = await answered(svc, previous)
    split(messages)  # a conversation without a user message is refused
    profile = await _profile(svc, session_id, profile_id)
    call = ClientCall(messages=messages, model=await requested_model(svc, body.model, session_id, profile.id))
    assembled, model = await window(svc, call, profile)
    tokens = estimator_for(model)
    cut = window_cut(dataclasses.replace(split(messages), instructions=()), assembled, tokens)  # the conversation
    extra_in, extra_out = assembled.snapshot.auxiliary_tokens
    kept = after_instructions(assembled.messages)
    sent = sum(tokens.count_message(Message.from_chat(m)) for m in kept)
    return {
        "id": f"cmp_tda{uuid.uuid4().hex}",
        "object": "response.compaction",
        "created_at": int(time.time()),
        "output": output_items(kept),
        "usage": {
            "input_tokens": cut["tokens_received"] + extra_in,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": sent + extra_out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": cut["tokens_received"] + extra_in + sent + extra_out,
            "tda": cut,
        },
        **({"provider_features": [dict(h) for h in kept_out]} if kept_out else {}),
    }


def _parse(data: dict[str, Any]) -> CompactRequest:
    refuse_unknown_fields(data, COMPACT_FIELDS, "the Responses API's compact")
    try:
        return validate_in_slices(CompactRequest, data, "input")
    except ValidationError as exc:
        raise Invalid("the request is invalid; fix the fields listed in errors", errors=field_errors(exc)) from None


async def _profile(svc: TDAService, session_id: str | None, profile_id: str | None) -> Any:
    """The profile the conversation would run under (the session's, when it exists); no session is created."""
    if session_id is not None:
        try:
            session = await svc.store.sessions.get(session_id)
        except NotFound:
            session = None  # a session not made yet: its profile would be the header's or the default
        if session is not None and profile_id not in (None, session.profile_id):
            raise Conflict(f"session {session_id!r} is bound to profile {session.profile_id!r}, not {profile_id!r}")
        if session is not None:
            return await svc.store.profiles.current(session.profile_id)
    return (await resolve_ids(svc, None, profile_id, None))[0]


def after_instructions(window: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The window's messages after its leading system messages (the instructions, sent with each request)."""
    start = next((i for i, m in enumerate(window) if m.get("role") != "system"), len(window))
    return window[start:]


def output_items(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as Responses items (each takes its place as input)."""
    items: list[dict[str, Any]] = []
    for n, m in enumerate(messages):
        role, content = m["role"], m.get("content")
        if role == "tool":
            output = content if isinstance(content, str) else _parts(content, "input")
            items.append({"type": "function_call_output", "call_id": m.get("tool_call_id"), "output": output})
            continue
        if content:
            kind = "output" if role == "assistant" else "input"
            item = {"type": "message", "role": "developer" if role == "system" else role}
            item["content"] = _parts(content, kind)
            if role == "assistant":
                item |= {"id": f"msg_tda{n}", "status": "completed"}
            items.append(item)
        for call in m.get("tool_calls") or ():
            function = call.get("function") or {}
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.get("id"),
                    "name": function.get("name"),
                    "arguments": function.get("arguments") or "",
                }
            )
    return items


def _parts(content: Any, kind: str) -> list[dict[str, Any]]:
    """Chat content as Responses content parts: text as ``input_text`` (``output_text`` for the assistant), images
    and files as ``input_image`` / ``input_file``; an Anthropic-only block (a cache mark's, a thinking block) as
    its text."""
    if isinstance(content, str):
        return [_text(content, kind)]
    parts = []
    for part in content:
        if part.get("type") == "image_url":
            image = part.get("image_url") or {}
            parts.append({"type": "input_image", "image_url": image.get("url"), "detail": image.get("detail", "auto")})
        elif part.get("type") == "file":
            parts.append({"type": "input_file", **(part.get("file") or {})})
        elif isinstance(part.get("text"), str):
            parts.append(_text(part["text"], kind))
    return parts


def _text(text: str, kind: str) -> dict[str, Any]:
    return text_part(text) if kind == "output" else {"type": "input_text", "text": text}
