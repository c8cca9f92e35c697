"""component_instructions' options (a window type's slot ``config``)."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from components.context_window.options import ModuleOptions

Intensity = Literal["full", "medium", "light"]
INTENSITIES: tuple[str, ...] = get_args(Intensity)
"""Fullest first: condensing steps down this list."""


class ComponentOptions(ModuleOptions):
    intensity: Intensity = Field(
        "full", description="How much of each component's instructions to start from; condensing steps down."
    )
