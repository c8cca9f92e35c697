"""The built-in context modules and the shipped window types: a plugin like any installed pack.

The application registers this package (``tda/builtins.py``: the component names no module) through the same
pluggy hooks a pack implements, with the lowest precedence: a pack or the user folder may replace any module.
Each sub-folder with a ``manifest.json`` is a module; ``window_types/*.json`` are the types seeded into a fresh
database (plain ``ContextWindowType`` data: edit them as JSON).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.context_window.hookspecs import hookimpl

HERE = Path(__file__).resolve().parent


@hookimpl
def tda_module_folders() -> list[Path]:
    return [folder for folder in sorted(HERE.iterdir()) if (folder / "manifest.json").is_file()]


@hookimpl
def tda_window_types() -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted((HERE / "window_types").glob("*.json"))]
