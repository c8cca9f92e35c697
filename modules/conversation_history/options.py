"""conversation_history's options (a window type's slot ``config``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from components.context_window.options import ModuleOptions


class HistoryOptions(ModuleOptions):
    summarize_dropped: bool = Field(True, description="Summarise the messages that no longer fit, or drop them.")
    cache_block: Literal["auto"] | Annotated[int, Field(ge=0)] = Field(
        "auto",
        description="Move the window's start in blocks of this many messages (a stable prefix providers cache); "
        "'auto' picks a block from the window's size, 0 slides message by message.",
    )
