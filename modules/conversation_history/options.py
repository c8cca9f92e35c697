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
    recall_pct: Annotated[float, Field(ge=0, le=100)] = Field(
        0,
        description="Share (%) of the history budget for older messages recalled by relevance to the query, when "
        "one matches it clearly better than the newest turns; the rest keeps the newest turns. 0: no recall.",
    )
    recall_dense_lead: float = Field(
        0.03,
        description="Recall when an older message's cosine with the query beats the newest turns' best by this much.",
    )
    recall_lexical_lead: Annotated[float, Field(ge=0)] = Field(
        1.2,
        description="Recall when an older message's BM25 score beats the newest turns' best by this factor.",
    )
    recall_cost_exponent: Annotated[float, Field(ge=0)] = Field(
        0.5,
        description="Recalled messages are packed by relevance / (tokens / 40) ** this, a message of up to 40 "
        "tokens counting as 40 (0: by rank alone); at least 1 when the recall room is ample (a 16K window's).",
    )
    clear_tool_results_after_turns: Annotated[int, Field(ge=0)] = Field(
        0,
        description="Replace tool results at least this many turns old by a short reference (the call stays); "
        "0: never by age.",
    )
    clear_tool_results_over_tokens: Annotated[int, Field(ge=0)] = Field(
        0, description="Replace tool results larger than this many tokens by a short reference; 0: never by size."
    )
    recall_cleared_pct: Annotated[float, Field(ge=0, le=100)] = Field(
        15, description="Share (%) of the history budget kept for showing cleared results the question needs again."
    )
    recall_continuity_below: float = Field(
        0.8,
        description="Recall also when the query's cosine with the newest user messages is below this (it turns "
        "away from the conversation going on); recall stays off while it continues it.",
    )
    recall_continues_from: float = Field(
        0.9,
        description="Recall stays off, whatever an older message's lead, when the query's cosine with the newest "
        "user messages is at least this: one more of the questions going on, which the newest turns serve.",
    )
