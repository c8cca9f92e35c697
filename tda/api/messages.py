"""POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API onto the chat gateway
(``tda/gateway.py``), for the Anthropic SDKs, Claude Code and every framework's Anthropic model.

The wire format is translated at the edge, both ways (``tda/anthropic_wire.py``): the request's system blocks,
messages and tools become the gateway's chat messages and tools, whose reply comes back as Anthropic's message (or
its event stream). The gateway is the same as for the OpenAI routes: the client's conversation is authoritative,
the profile's type budgets it, stateless or recorded by ``X-TDA-Session``, to any upstream (an Anthropic model
gets the blocks as sent through litellm; an OpenAI-compatible one gets their chat equivalents). The token is the
``x-api-key`` the SDKs send (or ``Authorization: Bearer``); errors are Anthropic's ``{"type": "error", ...}``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator
from typing import Any

from quart import Blueprint, request
from quart_schema import document_request, tag_blueprint
from werkzeug.exceptions import HTTPException

from components.context_window.budget import BudgetExceeded

from ..auth import end_user, require
from ..client_call import ClientCall
from ..context_features import anthropic_edits, features_header, response_context_management, with_unsent_traced
from ..errors import ServiceError
from ..gateway import complete, reply_headers, split, window
from ..llm import prompt_tokens
from ..models import ProfileRow
from ..service import TDAService, service
from .anthropic_wire import (
    CountTokensRequest,
    MessagesRequest,
    StreamedBlocks,
    error_body,
    message_of,
    read,
    sse,
)
from .chat import SESSION_HEADER, new_turn_requested, requested_ids, requested_model, resolve_ids
from .common import json_object, sized_work
from .openapi import anthropic_wire
from .streaming import start_turn

bp = Blueprint("messages", __name__, url_prefix="/v1")
tag_blueprint(bp, ["chat"])


@bp.errorhandler(ServiceError)
async def anthropic_error(exc: ServiceError) -> tuple[dict[str, Any], int, dict[str, str]]:
    """Errors in Anthropic's shape, so its SDKs raise the right exception and show the message."""
    return error_body(exc.status, exc.message, exc.details), exc.status, exc.headers


@bp.errorhandler(BudgetExceeded)
async def over_budget(exc: BudgetExceeded) -> tuple[dict[str, Any], int]:
    return error_body(422, str(exc)), 422


@bp.errorhandler(HTTPException)
async def http_error(exc: HTTPException) -> Any:
    if exc.code is None or exc.code < 400:
        return exc
    return error_body(exc.code, exc.description or exc.name or "error"), exc.code


@bp.post("/messages")
@anthropic_wire
@document_request(MessagesRequest)
@require("client")
async def create_message() -> Any:
    """An Anthropic message (``stream: true`` for its event stream), with tda's context management."""
    svc = service()
    beta = request.headers.get("anthropic-beta")
    body, call = await sized_work(lambda data: read(MessagesRequest, data, beta), await json_object(), "messages")
    split(call.messages)  # a conversation without a user message is refused before anything is created
    session_id, profile_id = requested_ids(body.model)
    new_turn = new_turn_requested()  # checked before a session is created
    model = await requested_model(svc, body.model, session_id, profile_id)
    profile, session = await resolve_ids(svc, session_id, profile_id, call.user)
    # whose cases: the metadata's user_id narrowed to the token (forwarded upstream as sent, in params)
    call = dataclasses.replace(call, model=model, new_turn=new_turn, user=end_user(call.user) if call.user else None)
    call = await anthropic_edits(svc, call, profile, body.context_management)
    call = await with_unsent_traced(svc, call, profile)
    headers = {SESSION_HEADER: session.id} if session is not None else {}
    headers |= features_header(call)
    model = call.model or profile.model or svc.settings.model
    message_id = f"msg_tda_{uuid.uuid4().hex}"
    if not body.stream:
        result = await complete(svc, call, profile, session)
        message = message_of(message_id, result, response_context_management(call, result))
        return message, 200, {**headers, **reply_headers(result)}
    streamed = await start_turn(svc, call, profile, session)

    async def events() -> AsyncIterator[bytes]:
        blocks = StreamedBlocks(message_id, model)
        yield blocks.start()
        async with contextlib.aclosing(streamed.deltas()) as deltas:
            async for delta in deltas:
                for event in blocks.delta(delta):
                    yield event
        if (exc := streamed.error()) is not None:
            status = exc.status if isinstance(exc, ServiceError) else 500
            message = exc.message if isinstance(exc, ServiceError) else f"{type(exc).__name__}: {exc}"
            yield sse("error", error_body(status, message))
            return
        result = streamed.turn.result()
        for event in blocks.end(result, response_context_management(call, result)):
            yield event

    return streamed.response(events(), headers)


@bp.post("/messages/count_tokens")
@anthropic_wire
@document_request(CountTokensRequest)
@require("viewer", "client")
async def count_tokens() -> Any:
    """The input tokens of the window tda would send for this request (nothing is called or recorded), counted as
    the model's provider counts them, never below tda's own count."""
    svc = service()
    body, call = await sized_work(lambda data: read(CountTokensRequest, data), await json_object(), "messages")
    split(call.messages)
    _, profile_id = requested_ids(body.model)
    call = dataclasses.replace(call, model=await requested_model(svc, body.model, None, profile_id))
    profile, _ = await resolve_ids(svc, None, profile_id, None)
    edited = await anthropic_edits(svc, call, profile, body.context_management)
    counted: dict[str, Any] = {"input_tokens": await _window_tokens(svc, edited, profile)}
    if edited.features.applied_edits:  # tda's edits changed the window: its count before them too, as Anthropic's
        counted["context_management"] = {"original_input_tokens": await _window_tokens(svc, call, profile)}
    return counted


async def _window_tokens(svc: TDAService, call: ClientCall, profile: ProfileRow) -> int:
    """The input tokens of the window tda would send for ``call``: litellm's count for the model, or tda's own
    when that is higher."""
    assembled, model = await window(svc, call, profile)
    return max(await prompt_tokens(model, assembled.messages, assembled.tools), assembled.snapshot.total_used)
