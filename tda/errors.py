"""Errors a user can cause. Each carries its HTTP status and a message that says what to change."""

from __future__ import annotations

from typing import Any

from .redact import redact_urls


class ServiceError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, message: str, **details: Any) -> None:
        message = redact_urls(message)  # a failure quoting an upstream's URL must not show its key or password
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, **self.details}


class Unauthorized(ServiceError):
    status, code = 401, "unauthorized"


class Forbidden(ServiceError):
    status, code = 403, "forbidden"


class NotFound(ServiceError):
    status, code = 404, "not_found"


class Conflict(ServiceError):
    status, code = 409, "conflict"


class PreconditionFailed(ServiceError):
    status, code = 412, "precondition_failed"


class Invalid(ServiceError):
    """422 with per-field errors: ``errors=[{"loc": "modules.rag_context.target_pct", "msg": ...}]``."""

    status, code = 422, "validation_error"


class PreconditionRequired(ServiceError):
    status, code = 428, "precondition_required"


class UpstreamFailed(ServiceError):
    status, code = 502, "model_call_failed"


def field_errors(exc: Any, prefix: tuple[str | int, ...] = ()) -> list[dict[str, Any]]:
    """pydantic ``ValidationError`` -> ``[{loc, msg, type}]`` with dotted locations (``body`` for the whole)."""
    out = []
    for err in exc.errors(include_url=False, include_context=False, include_input=False):
        loc = ".".join(str(p) for p in (*prefix, *err["loc"])) or "body"
        out.append({"loc": loc, "msg": err["msg"], "type": err["type"]})
    return out
