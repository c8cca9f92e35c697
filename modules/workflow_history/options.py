"""workflow_history's options (a window type's slot ``config``)."""

from __future__ import annotations

from pydantic import Field

from components.context_window.options import ModuleOptions


class WorkflowOptions(ModuleOptions):
    max_turns: int = Field(10, ge=1, description="Previous turns summarised, newest first.")
