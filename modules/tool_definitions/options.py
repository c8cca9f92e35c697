"""tool_definitions' options (a window type's slot ``config``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from components.context_window.options import ModuleOptions


class ToolOptions(ModuleOptions):
    after_first_turn: Literal["full", "condensed", "partial", "names_only"] = Field(
        "full", description="What to send once the model has seen the full schemas in the valid history."
    )
