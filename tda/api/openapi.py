"""/openapi.json paths that match the real routes.

quart-schema turns ``<session_id>/turns/<int(max=...):turn>`` into ``{turn}``: its pattern lets a converter's
``name:`` prefix run across an earlier ``<...>``. Here each ``<...>`` is converted on its own, and integer
parameters carry the converter's bounds, so a generated client (or schemathesis) calls URLs that exist.
"""

from __future__ import annotations

import re
from typing import Any

from quart_schema.openapi import OpenAPIProvider
from werkzeug.routing import BaseConverter, IntegerConverter, Rule

_VARIABLE = re.compile(r"<(?:[^<>:]*:)?([^<>:]+)>")


def openapi_path(rule: str) -> str:
    """``/v1/sessions/<session_id>/turns/<int(max=9):turn>`` -> ``/v1/sessions/{session_id}/turns/{turn}``."""
    return _VARIABLE.sub(r"{\1}", rule)


class RoutePaths(OpenAPIProvider):
    def build_paths(self, rule: Rule) -> tuple[dict[str, Any], dict[str, Any]]:
        paths, components = super().build_paths(rule)
        (operations,) = paths.values()
        return {openapi_path(rule.rule): operations}, components

    def build_path_parameter(self, name: str, converter: BaseConverter) -> dict[str, Any]:
        parameter = super().build_path_parameter(name, converter)
        if isinstance(converter, IntegerConverter):
            schema = parameter["schema"]
            schema["minimum"] = converter.min if converter.min is not None else (None if converter.signed else 0)
            if converter.max is not None:
                schema["maximum"] = converter.max
            parameter["schema"] = {k: v for k, v in schema.items() if v is not None}
        return parameter
