"""plan_hydration's options (a window type's slot ``config``; the thresholds are the type's ``distillation``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from components.context_window.options import ModuleOptions


class PlanOptions(ModuleOptions):
    recall_pct: Annotated[float, Field(ge=0, le=100)] = Field(
        30,
        description="Share (%) of the module's budget kept for results of earlier turns recalled by relevance "
        "when one matches the question clearly; the previous turn's results get the rest first. 0: no recall.",
    )
    recall_min_chars: Annotated[int, Field(ge=0)] = Field(
        0,
        description="Only earlier turns whose results hold at least this many characters are offloaded and "
        "recalled (0: every earlier turn with results).",
    )
    recall_turns: Annotated[int, Field(ge=1)] = Field(2, description="Earlier turns recalled at most.")
