"""New instances of built-in modules for tests that want one per hypothesis example, without a registry load each.

A registry's load imports the built-in modules afresh (~45 ms of CPU): their classes and manifests are read once per
test process here, and each call builds new instances as the load does (``cls(manifest)``), so no instance's caches
carry over from one example to the next; only the modules' code, and its pure per-process caches, are shared, as
every session of a running service shares them."""

from __future__ import annotations

from functools import cache

from components.context_window.base import ContextModule
from components.context_window.module_registry import ModuleDefinition
from tda.builtins import module_registry


@cache
def _definitions() -> dict[str, ModuleDefinition]:
    return dict(module_registry(entry_point_group=None).load().definitions)


def new_builtins(*module_ids: str) -> list[ContextModule]:
    """New instances of the built-in modules ``module_ids``, in that order."""
    definitions = _definitions()
    return [definitions[m].cls(definitions[m].manifest) for m in module_ids]
