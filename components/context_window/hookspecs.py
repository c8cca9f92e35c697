"""The plugin contract (pluggy project ``tda``). The docstrings below are the specification.

A plugin is any object or module with functions marked ``@hookimpl``. The built-in modules (the
application's ``modules`` package), installed packs (entry-point group ``tda.context_modules``) and the
user folder all reach the registry through these same hooks; the registry decides precedence (builtin <
pack < user, by module id), validates manifests before importing any code, and reports a broken module
with its name without stopping others.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import pluggy

PROJECT = "tda"
ENTRY_POINT_GROUP = "tda.context_modules"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def tda_module_folders() -> Iterable[Path]:
    """Return folders holding context modules.

    Each folder is either one module (it contains ``manifest.json``) or a parent of module folders.
    A module folder holds ``manifest.json`` (validated as ``ModuleManifest``) and the handler file it
    names (default ``handler.py``), which defines the ``ContextModule`` subclass named by
    ``handler.class``. The class is constructed with the validated manifest.
    """
    raise NotImplementedError  # a specification: pluggy calls the plugins' implementations, never this


@hookspec
def tda_context_modules() -> Iterable[tuple[dict | object, type]]:
    """Return ``(manifest, module_class)`` pairs for modules defined in code rather than folders.

    ``manifest`` is a ``ModuleManifest`` or a dict that validates as one; ``module_class`` is a
    ``ContextModule`` subclass constructed with the manifest.
    """
    raise NotImplementedError  # a specification, as above


@hookspec
def tda_window_types() -> Iterable[Mapping]:
    """Return context window types as plain data (each validates as ``ContextWindowType``).

    They are the types a fresh database is seeded with and ``tda types`` shows; by id, a plugin of higher
    precedence replaces a type of a lower one. Validated against the installed modules when seeded.
    """
    raise NotImplementedError  # a specification, as above
