"""What the application hands the component: the built-in plugin (the ``modules`` package: the nine built-in
modules and the shipped window types) and those types read through it.

The component knows no module by name (``ModuleRegistry`` registers a built-in plugin only when given one), so a
library user can run it with their own modules alone; tda registers ``modules`` through the same pluggy hooks a
pack implements, with the lowest precedence.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from components.context_window.module_registry import ModuleRegistry
from components.context_window.window_type import ContextWindowType

BUILTIN_PLUGIN = "modules"
"""Import name of the built-in plugin, registered under the name ``builtin``."""


def module_registry(**options: Any) -> ModuleRegistry:
    """A registry with the built-in modules (and, unless ``entry_point_group=None``, installed packs)."""
    return ModuleRegistry(builtin=BUILTIN_PLUGIN, **options)


@cache
def shipped_types() -> tuple[ContextWindowType, ...]:
    """The window types the built-in plugin ships (read once: they are frozen)."""
    return tuple(module_registry(entry_point_group=None).window_types())


def default_types() -> list[ContextWindowType]:
    """The shipped types (``modules/window_types/*.json``). Frozen: derive a changed one with ``model_copy``."""
    return list(shipped_types())


class _ShippedTypes(Mapping[str, ContextWindowType]):
    """``DEFAULT_TYPES``: the shipped types by id, read on first use (not when tda is imported)."""

    def _types(self) -> dict[str, ContextWindowType]:
        return {t.id: t for t in shipped_types()}

    def __getitem__(self, type_id: str) -> ContextWindowType:
        return self._types()[type_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._types())

    def __len__(self) -> int:
        return len(self._types())


DEFAULT_TYPES: Mapping[str, ContextWindowType] = _ShippedTypes()
