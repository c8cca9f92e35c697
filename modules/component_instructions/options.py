"""component_instructions' options (a window type's slot ``config``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from components.context_window.options import ModuleOptions


class ComponentOptions(ModuleOptions):
    intensity: Literal["full", "medium", "light"] = Field(
        "full", description="How much of each component's instructions to start from; condensing steps down."
    )
