"""Helpers shared by the blueprints: JSON bodies validated with context, and ETag preconditions."""

from __future__ import annotations

import json
import re
from typing import Any

from quart import request

from ..errors import Invalid, PreconditionFailed, PreconditionRequired
from .schemas import _ReadBack

_ETAG = re.compile(r'^(?:W/)?"(?P<id>[^"]+)\.v(?P<version>\d+)"$')


async def json_object() -> dict[str, Any]:
    raw = await request.get_data(as_text=False)
    try:
        data = json.loads(raw)
    except ValueError:  # includes UnicodeDecodeError: the body is not UTF-8 JSON
        data = None
    if not isinstance(data, dict):
        raise Invalid(
            "the body must be a JSON object",
            errors=[{"loc": "body", "msg": "expected a UTF-8 JSON object", "type": "type_error"}],
        )
    return data


def if_match_version(resource_id: str) -> int:
    """The version named by ``If-Match`` (required on writes: 428 without it or with an empty one, 412 when it names
    another resource)."""
    header = request.headers.get("If-Match")
    if not header:
        raise PreconditionRequired(
            "send If-Match with the ETag from your last GET, so you cannot overwrite someone else's change"
        )
    match = _ETAG.match(header.strip())
    if match is None or match["id"] != resource_id:
        raise PreconditionFailed(f"If-Match {header!r} is not an ETag of {resource_id!r}; GET it again")
    return int(match["version"])


def check_same_as_stored(sent: _ReadBack, stored: dict[str, Any]) -> None:
    """Read-only fields sent back must still hold the stored values (422 naming each that differs)."""
    errors = [
        {"loc": name, "msg": f"read-only: must be {stored[name]!r} (as stored) or left out", "type": "read_only"}
        for name in sorted(sent.SAME_AS_STORED & sent.model_fields_set)
        if getattr(sent, name) != stored[name]
    ]
    if errors:
        raise Invalid(f"{', '.join(e['loc'] for e in errors)} cannot be changed here", errors=errors)
