"""Every error becomes JSON with a status and a message saying what to change; never a traceback."""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import ValidationError
from quart import Quart, request
from quart_schema import RequestSchemaValidationError
from werkzeug.exceptions import HTTPException

from components.context_window.budget import BudgetExceeded

from ..errors import Invalid, ServiceError, field_errors
from ..security import json_depth_exceeds
from ..service import service

log = logging.getLogger(__name__)


def _json(status: int, error: str, message: str, **extra: Any) -> tuple[dict[str, Any], int]:
    return {"error": error, "message": message, **extra}, status


class InvalidJSON(ServiceError):
    status, code = 400, "invalid_json"


async def check_json_body() -> None:
    """API bodies must be UTF-8 JSON, nested at most ``max_json_depth`` deep: refused here with a message
    that says what is wrong, before any handler (or the JSON parser's recursion) meets them."""
    if request.method not in ("POST", "PUT", "PATCH"):
        return
    raw = await request.get_data(cache=True, as_text=False)
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise Invalid(
            "the body is not UTF-8; send JSON",
            errors=[{"loc": "body", "msg": "not UTF-8", "type": "unicode_error"}],
        ) from None
    if not text.strip() or not request.path.startswith("/v1/"):
        return
    limit = service().settings.max_json_depth
    try:
        data = json.loads(text)
    except RecursionError:
        data = None
    except ValueError as exc:
        where = f" at line {exc.lineno}, column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise InvalidJSON(f"the body is not valid JSON ({msg}{where}); send a JSON object") from None
    else:
        if not json_depth_exceeds(data, limit):
            return
    raise InvalidJSON(f"the JSON body nests arrays/objects more than {limit} levels deep; flatten it")


def register_error_handlers(app: Quart) -> None:
    app.before_request(check_json_body)

    @app.errorhandler(ServiceError)
    async def service_error(exc: ServiceError) -> tuple[dict[str, Any], int]:
        return exc.to_dict(), exc.status

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
        if exc.code == 413:
            limit = app.config["MAX_CONTENT_LENGTH"]
            message = f"the body is larger than {limit:,} bytes; send less (the limit is TDA_MAX_BODY_BYTES)"
            return _json(413, "body_too_large", message)
        body, status = _json(exc.code, (exc.name or "error").lower().replace(" ", "_"), exc.description or exc.name)
        allow = [value for name, value in exc.get_headers() if name == "Allow"]  # 405 names the allowed methods
        return (body, status, {"Allow": allow[0]}) if allow else (body, status)

    @app.errorhandler(Exception)
    async def unexpected(exc: Exception) -> tuple[dict[str, Any], int]:
        log.exception("unhandled error")
        return _json(500, "internal_error", "an unexpected error occurred; it has been logged")
