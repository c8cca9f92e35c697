"""tool_definitions' options (a window type's slot ``config``)."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from components.context_window.options import ModuleOptions

Level = Literal["full", "condensed", "partial", "names_only"]
LEVELS: tuple[str, ...] = get_args(Level)
"""The ladder, fullest first."""


class ToolOptions(ModuleOptions):
    after_first_turn: Level = Field(
        "full", description="What to send once the model has seen the full schemas in the valid history."
    )
