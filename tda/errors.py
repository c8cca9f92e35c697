"""Errors a user can cause. Each carries its HTTP status and a message that says what to change."""

from __future__ import annotations

import errno
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
        self.headers: dict[str, str] = {}

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


class TooManyRequests(ServiceError):
    """429; ``retry_after`` (seconds) goes out as the Retry-After header."""

    status, code = 429, "too_many_requests"

    def __init__(self, message: str, *, retry_after: int, **details: Any) -> None:
        super().__init__(message, retry_after=retry_after, **details)
        self.headers = {"Retry-After": str(retry_after)}


class Unavailable(ServiceError):
    """503: a dependency (the database, Redis, a Chroma server) is unreachable; try again after ``retry_after``."""

    status, code = 503, "unavailable"

    def __init__(self, message: str, *, retry_after: int = 5, **details: Any) -> None:
        super().__init__(message, retry_after=retry_after, **details)
        self.headers = {"Retry-After": str(retry_after)}


class UpstreamFailed(ServiceError):
    status, code = 502, "model_call_failed"


class UpstreamNotAllowed(ServiceError):
    """403: the profile's upstream names a key variable or host the operator's policy refuses (upstream_policy.py)."""

    status, code = 403, "upstream_not_allowed"


def field_errors(exc: Any, prefix: tuple[str | int, ...] = ()) -> list[dict[str, Any]]:
    """pydantic ``ValidationError`` -> ``[{loc, msg, type}]`` with dotted locations (``body`` for the whole)."""
    out = []
    for err in exc.errors(include_url=False, include_context=False, include_input=False):
        loc = ".".join(str(p) for p in (*prefix, *err["loc"])) or "body"
        out.append({"loc": loc, "msg": err["msg"], "type": err["type"]})
    return out


class DiskFull(ServiceError):
    """507: the database or the data directory has no space left; nothing of the request was written."""

    status, code = 507, "disk_full"

    def __init__(self) -> None:
        super().__init__(
            "the disk is full: the server could not store this request, and nothing of it was written; "
            "an operator must free space (or grow the volume), then send it again"
        )


SQLITE_FULL = 13
POSTGRES_DISK_FULL = "53100"
"""SQLSTATE ``disk_full`` (PostgreSQL's class 53, insufficient resources)."""
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error in its chain: SQLAlchemy and the drivers wrap the cause) says the disk is
    full: SQLite's SQLITE_FULL, PostgreSQL's ``disk_full``, or ENOSPC/EDQUOT from a file write (Chroma, a backup)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in NO_SPACE:
            return True
        if getattr(current, "sqlite_errorcode", None) == SQLITE_FULL or "database or disk is full" in str(current):
            return True
        if getattr(current, "sqlstate", None) == POSTGRES_DISK_FULL:
            return True
        current = getattr(current, "orig", None) or current.__cause__ or current.__context__
    return False
