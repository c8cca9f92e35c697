"""A module's options (``ctx.directives.config``, from its window-type slot): the model a module declares,
checked when a type is saved, and read with clear errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

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


class ModuleOptions(BaseModel):
    """Base of a module's options model (``ContextModule.options_model``): unknown keys are refused, and a
    saved window type's slot ``config`` is validated against it (a 422 naming the module and the option)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def option_problems(module_id: str, model: type[BaseModel], config: Mapping[str, Any]) -> list[InitErrorDetails]:
    """What is wrong with ``config`` as ``module_id``'s options, one pydantic error each, located at
    ``<module_id>.config.<option>`` and saying what to change."""
    try:
        model.model_validate(dict(config))
    except ValidationError as exc:
        return [_problem(module_id, model, e) for e in exc.errors()]
    return []


def _problem(module_id: str, model: type[BaseModel], error: Any) -> InitErrorDetails:
    name = ".".join(map(str, error["loc"])) or "config"
    if error["type"] == "extra_forbidden":
        known = ", ".join(model.model_fields) or "none"
        text = f"{module_id} has no option {name!r}; remove it (its options: {known})"
    else:
        text = f"{module_id} option {name!r}: {error['msg']} (got {error.get('input')!r})"
    return InitErrorDetails(
        type=PydanticCustomError("module_option", "{text}", {"text": text}),
        loc=(module_id, "config", *error["loc"]),
        input=error.get("input"),
    )


def usable_options(model: type[BaseModel], config: Mapping[str, Any]) -> tuple[BaseModel, list[str]]:
    """``config`` validated, for a type stored before its options were checked: the options that fail are
    dropped (their defaults apply) and named, so one bad option is reported rather than failing every turn."""
    kept, dropped = dict(config), list[str]()
    for _ in range(len(config) + 1):
        try:
            return model.model_validate(kept), dropped
        except ValidationError as exc:
            bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"] and str(e["loc"][0]) in kept}
            if not bad:
                break
            dropped += sorted(bad)
            kept = {k: v for k, v in kept.items() if k not in bad}
    return model.model_validate({}), sorted(config)
