"""Every error becomes JSON with a status and a message saying what to change; never a traceback."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from typing import Any

from pydantic import ValidationError
from quart import Quart, current_app, g, request
from quart_schema import RequestSchemaValidationError
from werkzeug.exceptions import HTTPException

from components.context_window.budget import BudgetExceeded
from components.context_window.session_cache import BoundedCache

from ..collector import PAUSE
from ..errors import DiskFull, Invalid, ServiceError, Unavailable, field_errors, is_disk_full
from ..offload import free_in_slices
from ..redact import redact_urls
from ..security import NestedTooDeep, ParsedBody, checked_json, escaped, unstorable
from ..service import service
from .openapi import OPENAI_WIRE

log = logging.getLogger(__name__)


def _json(status: int, error: str, message: str, **extra: Any) -> tuple[dict[str, Any], int]:
    return {"error": error, "message": message, **extra}, status


def openai_error(
    status: int, message: str, code: str, *, kind: str = "invalid_request_error", param: str | None = None
) -> tuple[dict[str, Any], int]:
    """OpenAI's error shape, which its SDKs (and the agent frameworks built on them) show the message of."""
    return {"error": {"message": message, "type": kind, "code": code, "param": param}}, status


def _openai_routes() -> list[str]:
    """The OpenAI-compatible routes this server has (``METHOD /path``), for messages that say where to go."""
    out = []
    for rule in current_app.url_map.iter_rules():
        if getattr(current_app.view_functions.get(rule.endpoint), OPENAI_WIRE, False):
            out += [f"{m} {rule.rule}" for m in sorted(rule.methods or ()) if m not in ("HEAD", "OPTIONS")]
    return sorted(out)


def _route_is_openai(allowed: str) -> bool:
    """Whether the path a 405 refused belongs to an OpenAI-compatible route (matched with a method it allows)."""
    method = allowed.split(",")[0].strip()
    try:
        rule, _ = current_app.url_map.bind("localhost").match(request.path, method, return_rule=True)
    except HTTPException:
        return False
    return bool(getattr(current_app.view_functions.get(rule.endpoint), OPENAI_WIRE, False))


def _tda_resource(path: str) -> bool:
    """Whether ``path`` is under one of tda's own /v1 resources (``/v1/sessions/...``): its 404s (an id out of
    an integer route's range, a sub-path that does not exist) keep the error shape /openapi.json documents."""
    segment = _first_segment(path)
    return any(
        rule.rule.startswith("/v1/")
        and _first_segment(rule.rule) == segment
        and not getattr(current_app.view_functions.get(rule.endpoint), OPENAI_WIRE, False)
        for rule in current_app.url_map.iter_rules()
    )


def _first_segment(path: str) -> str:
    return path.removeprefix("/v1/").split("/", 1)[0]


def _unrouted_v1(exc: HTTPException) -> tuple[dict[str, Any], int, dict[str, str]] | None:
    """A /v1 path no route serves (404), or a method an OpenAI route does not take (405), in OpenAI's shape:
    OpenAI clients call /v1 paths this server may lack (``/v1/embeddings``) and show only that shape's message.
    tda's own resources keep tda's documented error shape."""
    if request.url_rule is not None or not request.path.startswith("/v1/") or exc.code not in (404, 405):
        return None
    call = f"{request.method} {request.path}"
    if exc.code == 404:
        if _tda_resource(request.path):
            return None
        message = (
            f"{call} is not a route of this server. Its OpenAI-compatible routes: {', '.join(_openai_routes())}; "
            "GET /v1/models lists the model names to send; /openapi.json documents every route"
        )
        body, status = openai_error(404, message, "unknown_url")
        return body, status, {}
    allow = next((value for name, value in exc.get_headers() if name == "Allow"), "")
    if not _route_is_openai(allow):
        return None
    body, status = openai_error(405, f"{call} is not allowed; this route takes {allow}", "method_not_allowed")
    return body, status, {"Allow": allow}


class InvalidJSON(ServiceError):
    status, code = 400, "invalid_json"


_UNSTORABLE = {
    "NUL": ("a NUL character (\\u0000), which text fields cannot hold; remove it", "nul_character"),
    "surrogate": (
        "an unpaired surrogate (\\ud800-\\udfff without its pair), which is no character; send valid Unicode "
        "(escape a character outside the BMP as both halves of its pair, or send it as UTF-8)",
        "lone_surrogate",
    ),
}


def refuse_unstorable(found: tuple[str, str] | None) -> None:
    """Text never holds NUL (U+0000) nor an unpaired surrogate: PostgreSQL cannot store NUL in text (SQLite would
    keep what PostgreSQL refuses), and no UTF-8 encoder takes a lone surrogate (the database driver, a provider's
    client and the log would each fail on it). Refused, not stripped or replaced: changing characters would change
    what the client sent without telling it."""
    if found is not None:
        loc, why = found
        what, kind = _UNSTORABLE[why]
        raise Invalid(
            f"{loc} contains {what}",
            errors=[{"loc": loc, "msg": f"contains {what.partition(',')[0]}", "type": kind}],
            param=loc,  # OpenAI's error shape names the field here
        )


async def refuse_unstorable_in_url() -> None:
    """A NUL (or a lone surrogate) in the path or the query, as in the body, is refused before any handler or the
    database sees it."""
    if why := unstorable(request.path):
        refuse_unstorable(("path", why))
    for name, value in request.args.items(multi=True):
        if why := unstorable(name + value):
            refuse_unstorable((f"query.{escaped(name)}", why))


INLINE_BODY_BYTES = 64 * 1024
"""Bodies up to this size are parsed on the event loop (faster than a hop to a thread); larger ones in a worker
thread, in slices (``loads_in_slices``), so one big request never stalls the others."""
BIG_BODY_BYTES = 1024 * 1024
"""A request with a body over this pauses cycle collection while it runs (tda/collector.py)."""


async def release_big_body(_exc: BaseException | None) -> None:
    """After a request with a big body: the body as parsed is freed in a worker thread, a slice at a time
    (100,000 messages' objects take ~35 ms to free, the GIL held throughout when freed at once), then cycle
    collection is on again (``PAUSE``)."""
    if g.pop("collector_paused", False):
        held = [g.pop("json_body", None), request._cached_json]
        request._cached_json = {False: Ellipsis, True: Ellipsis}  # quart's "not parsed"
        try:
            await asyncio.to_thread(free_in_slices, held)  # the last references go in the thread, and the objects
        finally:
            PAUSE.release()


PARSED_PATHS = frozenset({"/v1/chat/completions"})
"""Whose bodies are kept parsed for the next (``ParsedBody``): a chat client's conversation, sent whole on every call,
read by a handler that changes none of its values (the values are shared by the bodies that sent them)."""
PARSED_BODIES = 16
PARSED_MOST_CHARS = 4_000_000
"""How many bodies are kept parsed, of at most how many characters each (a longer one is parsed whole every time)."""
PARSED_KEY_CHARS = 4096
_parsed: BoundedCache[tuple[str, str, str], ParsedBody] = BoundedCache(PARSED_BODIES)


def _prior_key(text: str) -> tuple[str, str, str] | None:
    """Where a body that may go on from an earlier one finds it: its path, its session and how it begins (a client
    that sends its conversation again finds its own; two that share all three only take turns replacing it)."""
    if request.path not in PARSED_PATHS:
        return None
    session = request.headers.get("X-TDA-Session", "")  # chat.SESSION_HEADER (chat.py imports this module)
    return request.path, session, text[:PARSED_KEY_CHARS]


async def check_json_body() -> None:
    """API bodies must be UTF-8 JSON, nested at most ``max_json_depth`` deep, without text that cannot be stored:
    refused here with a message that says what is wrong, before any handler (or the JSON parser's recursion) meets
    them. The parsed body is kept for the handler (``request.get_json``, ``json_object``): it is parsed once."""
    if request.method not in ("POST", "PUT", "PATCH"):
        return
    raw = await request.get_data(cache=True, as_text=False, parse_form_data=False)
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise Invalid(
            "the body is not UTF-8; send JSON",
            errors=[{"loc": "body", "msg": "not UTF-8", "type": "unicode_error"}],
        ) from None
    if not text or text.isspace() or not request.path.startswith("/v1/"):  # isspace: no copy of a big body
        return
    limit = service().settings.max_json_depth
    if len(raw) > BIG_BODY_BYTES and not g.get("collector_paused"):
        PAUSE.acquire()  # released when the request ends (release_big_body)
        g.collector_paused = True
    try:
        if text.startswith("\ufeff"):
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        key = _prior_key(text)
        prior = _parsed.get(key) if key is not None else None
        if len(raw) <= INLINE_BODY_BYTES:
            data, found, parsed = checked_json(text, limit, prior)
        else:
            data, found, parsed = await asyncio.to_thread(checked_json, text, limit, prior)
    except NestedTooDeep:
        raise InvalidJSON(f"the JSON body nests arrays/objects more than {limit} levels deep; flatten it") from None
    except ValueError as exc:
        where = f" at line {exc.lineno}, column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise InvalidJSON(f"the body is not valid JSON ({msg}{where}); send a JSON object") from None
    refuse_unstorable(found)
    if key is not None and len(text) <= PARSED_MOST_CHARS:
        _parsed.put(key, parsed)
    g.json_body = data
    if request.is_json:
        request._cached_json = {False: data, True: data}  # quart's own cache: get_json() parses nothing again


def register_error_handlers(app: Quart) -> None:
    app.before_request(refuse_unstorable_in_url)
    app.before_request(check_json_body)
    app.teardown_request(release_big_body)

    @app.errorhandler(ServiceError)
    async def service_error(exc: ServiceError) -> Any:
        return (exc.to_dict(), exc.status, exc.headers) if exc.headers else (exc.to_dict(), exc.status)

    @app.errorhandler(RequestSchemaValidationError)
    async def invalid_body(exc: RequestSchemaValidationError) -> tuple[dict[str, Any], int]:
        cause = exc.validation_error
        if isinstance(cause, ValidationError):
            return _json(
                422,
                "validation_error",
                "the request is invalid; fix the fields listed in errors",
                errors=field_errors(cause),
            )
        return _json(
            422,
            "validation_error",
            f"the request body could not be read: {cause}",
            errors=[{"loc": "body", "msg": str(cause), "type": "invalid"}],
        )

    @app.errorhandler(BudgetExceeded)
    async def over_budget(exc: BudgetExceeded) -> tuple[dict[str, Any], int]:
        return _json(
            422, "budget_exceeded", str(exc), floor_tokens=exc.floor_tokens, available=exc.available, floor=exc.parts
        )

    @app.errorhandler(HTTPException)
    async def http_error(exc: HTTPException) -> Any:
        if exc.code is None or exc.code < 400:
            return exc
        if (openai := _unrouted_v1(exc)) is not None:
            return openai
        if exc.code == 413:
            limit = app.config["MAX_CONTENT_LENGTH"]
            message = f"the body is larger than {limit:,} bytes; send less (the limit is TDA_MAX_BODY_BYTES)"
            # The rest of the body was not read: the connection cannot carry another request (HTTP/1 only;
            # HTTP/2 ends the stream by itself and forbids the header).
            close = {"Connection": "close"} if request.http_version in ("1.0", "1.1") else {}
            return (*_json(413, "body_too_large", message), close)
        if exc.code == 408:  # the body did not arrive in time: what came of it is unread, so the connection ends
            limit = app.config["BODY_TIMEOUT"]
            message = f"the body did not arrive within {limit} s (TDA_BODY_TIMEOUT_S); send it at once"
            close = {"Connection": "close"} if request.http_version in ("1.0", "1.1") else {}
            return (*_json(408, "request_timeout", message), close)
        body, status = _json(exc.code, (exc.name or "error").lower().replace(" ", "_"), exc.description or exc.name)
        allow = [value for name, value in exc.get_headers() if name == "Allow"]  # 405 names the allowed methods
        return (body, status, {"Allow": allow[0]}) if allow else (body, status)

    @app.errorhandler(Exception)
    async def unexpected(exc: Exception) -> Any:
        if is_disk_full(exc):  # a write outside the database's transactions (Chroma's files): not "unreachable"
            log.warning("the disk is full: %s", redact_urls(f"{type(exc).__name__}: {exc}"))
            service().store.db.note_disk_full()
            return await service_error(DiskFull())
        gone = unreachable_dependency(exc)
        if gone is not None:  # not a bug: answer 503 until it is back (no restart needed), and log one line
            log.warning("%s is unreachable: %s", gone, redact_urls(f"{type(exc).__name__}: {exc}"))
            return await service_error(Unavailable(f"{gone} is unreachable; try again shortly"))
        log.exception("unhandled error")
        return _json(500, "internal_error", "an unexpected error occurred; it has been logged")


_DATABASE_ERRORS = ("OperationalError", "InterfaceError", "TimeoutError", "DisconnectionError")
"""SQLAlchemy's errors for a database it cannot reach or lost the connection to (a pool timeout included), and
sqlite3's, which SQLAlchemy wraps in the first (the loop's own connections raise them bare: tda/inline_sqlite.py)."""
_DEPENDENCIES = {
    "sqlalchemy": "the database",
    "asyncpg": "the database",
    "aiosqlite": "the database",
    "sqlite3": "the database",
    "redis": "Redis (TDA_BUS_URL)",
    "httpx": "the Chroma server (TDA_CHROMA_URL)",
    "httpcore": "the Chroma server (TDA_CHROMA_URL)",
    "chromadb": "the Chroma server (TDA_CHROMA_URL)",
}


def unreachable_dependency(exc: BaseException) -> str | None:
    """Which dependency ``exc`` says is unreachable (a refused or dropped connection, a timeout), or None for any
    other error. Looks through the chain: SQLAlchemy and the clients wrap the socket's error."""
    seen: set[int] = set()
    found: str | None = None
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        module = type(current).__module__.split(".")[0]
        name = type(current).__name__
        if module in ("sqlalchemy", "sqlite3") and name in _DATABASE_ERRORS:  # sqlite3: the loop's own connections
            return "the database"
        if module in ("redis", "httpx", "httpcore", "asyncpg") and ("Connect" in name or "Timeout" in name):
            return _DEPENDENCIES[module]
        if "Could not connect to a Chroma server" in str(current):
            found = found or _DEPENDENCIES["chromadb"]
        if isinstance(current, (ConnectionError, TimeoutError, socket.gaierror)):
            found = found or _DEPENDENCIES.get(module, "a service it depends on (the database, Redis or Chroma)")
        current = current.__cause__ or current.__context__
    return found
