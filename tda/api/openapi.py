"""/openapi.json that matches the service: real paths, the If-Match header, and what each operation answers.

quart-schema turns ``<session_id>/turns/<int(max=...):turn>`` into ``{turn}``: its pattern lets a converter's
``name:`` prefix run across an earlier ``<...>``. Here each ``<...>`` is converted on its own, and integer
parameters carry the converter's bounds, so a generated client (or schemathesis) calls URLs that exist.
Every operation documents its outcomes: a JSON success (``2XX``; an event stream for SSE routes) and the
API's error format for the errors a client can cause (``4XX``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from quart_schema.openapi import OpenAPIProvider
from werkzeug.routing import BaseConverter, IntegerConverter, Rule

from .schemas import Error

F = TypeVar("F", bound=Callable[..., Any])
IF_MATCH = "_tda_if_match"
EVENT_STREAM = "_tda_event_stream"
OPENAI_WIRE = "_tda_openai_wire"
ANTHROPIC_WIRE = "_tda_anthropic_wire"
ERROR_SCHEMA = Error.model_json_schema()
_VARIABLE = re.compile(r"<(?:[^<>:]*:)?([^<>:]+)>")


def openapi_path(rule: str) -> str:
    """``/v1/sessions/<session_id>/turns/<int(max=9):turn>`` -> ``/v1/sessions/{session_id}/turns/{turn}``."""
    return _VARIABLE.sub(r"{\1}", rule)


class OtherThan(BaseConverter):
    """A path segment other than the given words: ``<other_than(preview):type_id>`` leaves ``/preview`` to its
    own route for every method, so a path has one meaning (and OPTIONS/405 name only that route's methods)."""

    def __init__(self, url_map: Any, *reserved: str) -> None:
        super().__init__(url_map)
        self.reserved = reserved
        self.regex = rf"(?!(?:{'|'.join(re.escape(word) for word in reserved)})$)[^/]+"


def if_match(required: bool) -> Callable[[F], F]:
    """Document the ``If-Match`` header a write checks (``tda.api.common.if_match_version``)."""

    def mark(func: F) -> F:
        setattr(func, IF_MATCH, required)
        return func

    return mark


def event_stream(func: F) -> F:
    """Document the route as a ``text/event-stream`` (SSE) rather than JSON."""
    setattr(func, EVENT_STREAM, True)
    return func


def openai_wire(func: F) -> F:
    """Document the route in OpenAI's wire format: JSON or (``stream: true``) server-sent chunks, and errors
    as OpenAI's ``{"error": {"message", "type", ...}}`` so its SDKs show the message."""
    setattr(func, OPENAI_WIRE, True)
    return func


def anthropic_wire(func: F) -> F:
    """Document the route in Anthropic's wire format: JSON or (``stream: true``) its named server-sent events, and
    errors as Anthropic's ``{"type": "error", "error": {"type", "message"}}``."""
    setattr(func, ANTHROPIC_WIRE, True)
    return func


def openai_json(func: F) -> F:
    """Like ``openai_wire`` for a JSON-only route (no stream): OpenAI's error shape, JSON answers."""
    setattr(func, OPENAI_WIRE, "json")
    return func


_OPENAI_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type"],
            "properties": {"message": {"type": "string"}, "type": {"type": "string"}},
        }
    },
}


_ANTHROPIC_ERROR = {
    "type": "object",
    "required": ["type", "error"],
    "properties": {
        "type": {"const": "error"},
        "error": {
            "type": "object",
            "required": ["type", "message"],
            "properties": {"type": {"type": "string"}, "message": {"type": "string"}},
        },
    },
}


def _outcomes(func: Callable[..., Any], method: str) -> dict[str, Any]:
    openai = getattr(func, OPENAI_WIRE, False)
    anthropic = getattr(func, ANTHROPIC_WIRE, False)
    if openai:
        media = ["application/json"] if openai == "json" else ["application/json", "text/event-stream"]
    elif anthropic:
        media = ["application/json", "text/event-stream"]
    else:
        media = ["text/event-stream" if getattr(func, EVENT_STREAM, False) else "application/json"]
    error = _OPENAI_ERROR if openai else _ANTHROPIC_ERROR if anthropic else {"$ref": "#/components/schemas/Error"}
    deleted = {"204": {"description": "Deleted; no body"}} if method == "delete" else {}
    full = (
        {
            "507": {
                "description": "The disk is full; nothing was written",
                "content": {"application/json": {"schema": error}},
            }
        }
        if method != "get"
        else {}
    )
    return {
        **deleted,
        "2XX": {"description": "Success", "content": {m: {"schema": {}} for m in media}},
        "4XX": {
            "description": "A request the client can fix; ``message`` says how",
            "content": {"application/json": {"schema": error}},
        },
        "503": {
            "description": "The database, Redis or the Chroma server is unreachable; try again after Retry-After",
            "headers": {"Retry-After": {"description": "seconds", "schema": {"type": "integer"}}},
            "content": {"application/json": {"schema": error}},
        },
        **full,
    }


class RoutePaths(OpenAPIProvider):
    def build_paths(self, rule: Rule) -> tuple[dict[str, Any], dict[str, Any]]:
        paths, components = super().build_paths(rule)
        (operations,) = paths.values()
        func = self._app.view_functions[rule.endpoint]
        header = getattr(func, IF_MATCH, None)
        for method, operation in operations.items():
            operation["responses"] = {**_outcomes(func, method), **operation["responses"]}
            if header is not None:
                operation["parameters"] = [
                    *operation["parameters"],
                    {
                        "name": "If-Match",
                        "in": "header",
                        "required": header,
                        "description": "the ETag from your last GET of this resource",
                        "schema": {"type": "string", "minLength": 1},
                    },
                ]
        return {openapi_path(rule.rule): operations}, {**components, "Error": ERROR_SCHEMA}

    def build_path_parameter(self, name: str, converter: BaseConverter) -> dict[str, Any]:
        parameter = super().build_path_parameter(name, converter)
        if isinstance(converter, OtherThan):
            parameter["schema"] = {"type": "string", "not": {"enum": list(converter.reserved)}}
        if isinstance(converter, IntegerConverter):
            schema = parameter["schema"]
            schema["minimum"] = converter.min if converter.min is not None else (None if converter.signed else 0)
            if converter.max is not None:
                schema["maximum"] = converter.max
            parameter["schema"] = {k: v for k, v in schema.items() if v is not None}
        return parameter
