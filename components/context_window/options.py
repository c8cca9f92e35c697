"""Reading a module's options (``ctx.directives.config``, from its window-type slot) with clear errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

T = TypeVar("T", int, float, str)
_NAMES = {int: "whole number", float: "number", str: "text"}


def option(config: Mapping[str, Any], key: str, default: T, *, minimum: float | None = None) -> T:
    """``config[key]`` converted to the type of ``default``; a bad value names the key and what is expected."""
    raw = config.get(key, default)
    kind = type(default)
    wrong = ValueError(f"option {key!r} must be a {_NAMES[kind]}, got {raw!r}")
    if isinstance(raw, bool) or (kind is not str and isinstance(raw, str) and not raw.strip()):
        raise wrong
    if kind is int and isinstance(raw, float) and not raw.is_integer():
        raise wrong
    try:
        value = kind(raw)
    except (TypeError, ValueError, OverflowError):
        raise wrong from None
    if minimum is not None and value < minimum:  # type: ignore[operator]
        raise ValueError(f"option {key!r} must be at least {minimum:g}, got {raw!r}")
    return value
