"""Helpers shared by the blueprints: JSON bodies validated with context, and ETag preconditions."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError
from quart import g, request

from ..errors import Invalid, PreconditionFailed, PreconditionRequired
from ..offload import sized
from .schemas import _ReadBack

_ETAG = re.compile(r'^(?:W/)?"(?P<id>[^"]+)\.v(?P<version>\d+)"$')


async def json_object() -> dict[str, Any]:
    """The body, as ``check_json_body`` parsed it (before any handler), when it is a JSON object."""
    data = g.get("json_body")
    if data is None:
        try:
            data = json.loads(await request.get_data(as_text=False))
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


SLICE = 200
"""List items validated per call: pydantic-core holds the GIL for a whole call (a 100,000-message chat: 1.4 s), so
the event loop's thread waits for the call under way (a few ms at this size) whenever it wants the GIL back."""
M = TypeVar("M", bound=BaseModel)


def validate_in_slices(model: type[M], data: dict[str, Any], field: str) -> M:
    """``model.model_validate(data)`` with the list ``data[field]`` validated SLICE items per call, so in a worker
    thread the event loop's thread gets the GIL between calls. The same model, or a ValidationError whose
    locations are the whole list's (``messages.1200.role``)."""
    items = data.get(field)
    limit = next((m.max_length for m in model.model_fields[field].metadata if hasattr(m, "max_length")), None)
    if not isinstance(items, list) or len(items) <= SLICE or (limit is not None and len(items) > limit):
        return model.model_validate(data)
    head = model.model_validate({**data, field: items[:SLICE]})
    adapter = _list_adapter(model, field)
    rest: list[Any] = []
    for start in range(SLICE, len(items), SLICE):
        try:
            rest += adapter.validate_python(items[start : start + SLICE]) or []
        except ValidationError as exc:
            raise ValidationError.from_exception_data(model.__name__, _shifted(exc, field, start)) from None
    setattr(head, field, [*getattr(head, field), *rest])
    return head


@functools.cache
def _list_adapter(model: type[BaseModel], field: str) -> TypeAdapter[list[Any]]:
    """The validator of ``model``'s list ``field`` on its own: made once (~0.7 ms, on every long call when it was
    made per call)."""
    return TypeAdapter(model.model_fields[field].annotation)  # type: ignore[arg-type]


def _shifted(exc: ValidationError, field: str, start: int) -> list[Any]:
    """A slice's errors at their places in the whole list."""
    return [
        {**error, "loc": (field, error["loc"][0] + start, *error["loc"][1:])}  # type: ignore[operator]
        for error in exc.errors(include_url=False)
    ]


T = TypeVar("T")


async def sized_work(work: Callable[[dict[str, Any]], T], data: dict[str, Any], field: str) -> T:
    """``work(data)``: in a worker thread when the list ``data[field]`` is long (``offload.sized``)."""
    items = data.get(field)
    return await sized(lambda _: work(data), items if isinstance(items, list) else ())
