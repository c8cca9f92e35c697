"""Every error becomes JSON with a status and a message saying what to change; never a traceback."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError
from quart import Quart, request
from quart_schema import RequestSchemaValidationError
from werkzeug.exceptions import HTTPException

from components.context_window.budget import BudgetExceeded

from ..errors import Invalid, ServiceError, field_errors

log = logging.getLogger(__name__)


def _json(status: int, error: str, message: str, **extra: Any) -> tuple[dict[str, Any], int]:
    return {"error": error, "message": message, **extra}, status


async def require_utf8_body() -> None:
    """Bodies must be UTF-8 (JSON is); refuse others here, before any handler tries to decode them."""
    if request.method in ("POST", "PUT", "PATCH"):
        try:
            (await request.get_data(cache=True, as_text=False)).decode()
        except UnicodeDecodeError:
            raise Invalid(
                "the body is not UTF-8; send JSON",
                errors=[{"loc": "body", "msg": "not UTF-8", "type": "unicode_error"}],
            ) from None


def register_error_handlers(app: Quart) -> None:
    app.before_request(require_utf8_body)

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
        return _json(exc.code, (exc.name or "error").lower().replace(" ", "_"), exc.description or exc.name)

    @app.errorhandler(Exception)
    async def unexpected(exc: Exception) -> tuple[dict[str, Any], int]:
        log.exception("unhandled error")
        return _json(500, "internal_error", "an unexpected error occurred; it has been logged")
