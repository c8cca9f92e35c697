"""Logging for `tda serve`: a request id on every response and log line; plain text or JSON lines (TDA_LOG_FORMAT).

Each request gets an id (the client's ``X-Request-ID`` when it sends a sane one, else a fresh one); it is echoed
in the response header, stamped on every record logged while the request runs, and on its access line.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from quart import Quart, Response, g, request

from .redact import redact_urls

REQUEST_ID: ContextVar[str] = ContextVar("tda_request_id", default="-")
_SANE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
access = logging.getLogger("tda.access")


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request id, extra fields, and the traceback."""

    RESERVED = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "request_id"}

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", "-"),
        }
        line.update({k: v for k, v in vars(record).items() if k not in self.RESERVED})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escape_controls(text: str) -> str:
    """Control characters as escapes (a newline as ``\\n``): a request path decoded into the access line, or any
    other text a client chose, cannot start a forged log line or move the terminal's cursor."""
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


class TextFormatter(logging.Formatter):
    """One line per record: the message's control characters are escaped (a traceback still follows on its own
    lines; JSON lines escape them by themselves)."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = escape_controls(record.message)
        return super().formatMessage(record)


class RedactingFormatter(logging.Formatter):
    """Another formatter's line with the credentials in any URL hidden (messages, extras, tracebacks)."""

    def __init__(self, inner: logging.Formatter) -> None:
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        return redact_urls(self.inner.format(record))


def configure(log_format: str, level: str) -> None:
    """Route logs to stderr in the chosen format (called once by `tda serve`): tda's own at ``level``
    (TDA_LOG_LEVEL), other libraries' from WARNING up."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RequestIdFilter())
    if log_format == "json":
        formatter: logging.Formatter = JsonFormatter()
    else:
        formatter = TextFormatter("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s")
    handler.setFormatter(RedactingFormatter(formatter))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(logging.WARNING)  # libraries speak up only when something is wrong
    logging.getLogger("tda").setLevel(level.upper())


def install_request_ids(app: Quart) -> None:
    @app.before_request
    async def assign_request_id() -> None:
        sent = request.headers.get("X-Request-ID", "")
        g.request_id = sent if _SANE_ID.match(sent) else uuid.uuid4().hex
        g.request_started = time.perf_counter()
        REQUEST_ID.set(g.request_id)

    @app.after_request
    async def stamp_request_id(response: Response) -> Response:
        request_id = g.get("request_id")
        if request_id:
            response.headers["X-Request-ID"] = request_id
            elapsed_ms = (time.perf_counter() - g.request_started) * 1000
            access.info(
                "%s %s %s %.1f ms",
                request.method,
                request.path,
                response.status_code,
                elapsed_ms,
                extra={
                    "method": request.method,
                    "path": request.path,
                    "status": response.status_code,
                    "duration_ms": round(elapsed_ms, 2),
                },
            )
        return response
