"""workflow_history's options (a window type's slot ``config``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from components.context_window.options import ModuleOptions


class WorkflowOptions(ModuleOptions):
    max_turns: int = Field(10, ge=1, description="Previous turns summarised, newest first.")
    recall_pct: Annotated[float, Field(ge=0, le=100)] = Field(
        25,
        description="Share (%) of the module's budget kept for older turns (beyond max_turns) whose query or plan "
        "matches the question clearly, listed after the newest and marked as recalled. 0: no recall.",
    )
    recall_turns: Annotated[int, Field(ge=1)] = Field(3, description="Older turns recalled at most.")
