"""Model calls made while a window is assembled, metered: each one a module makes through ``ctx.summarizer``
is recorded (what for, model, tokens in and out, the bound, time) in the snapshot's ``auxiliary_calls``, so
a turn's usage counts them and none is hidden.

The orchestrator hands each module its own ``MeteredSummarizer`` around the application's summarizer. A
module says what a call is for with ``labelled(ctx.summarizer, "query_rewrite")``; that is a no-op on a
plain summarizer (a module's unit test), so modules need not know whether they are metered."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Protocol, runtime_checkable

from .base import Summarizer, TokenCounter
from .snapshot import AuxiliaryCall


@dataclass(frozen=True, slots=True)
class Summary:
    """A summarizer's reply with the provider's counts (0: not reported)."""

    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    model: str = ""


@runtime_checkable
class UsageReporting(Protocol):
    """A summarizer that can also say what a call cost (``tda.llm.LLMSummarizer`` does)."""

    async def summarize_with_usage(self, text: str, *, max_tokens: int, instruction: str = "") -> Summary: ...


DEFAULT_INSTRUCTION = "Summarise the following, keeping facts, numbers and decisions."


def prompt_of(text: str, instruction: str) -> str:
    """The one user message a summary call sends."""
    return (instruction or DEFAULT_INSTRUCTION) + "\n\n" + text


class MeteredSummarizer:
    """One module's view of the summarizer for one assembly: every call is appended to ``calls``."""

    def __init__(
        self, inner: Summarizer, calls: list[AuxiliaryCall], module_id: str, tokens: TokenCounter, purpose: str = ""
    ) -> None:
        self.inner = inner
        self.calls = calls
        self.module_id = module_id
        self.tokens = tokens
        self.purpose = purpose or "summary"

    def labelled(self, purpose: str) -> MeteredSummarizer:
        return MeteredSummarizer(self.inner, self.calls, self.module_id, self.tokens, purpose)

    async def summarize(self, text: str, *, max_tokens: int, instruction: str = "") -> str:
        bound = max(1, int(max_tokens))  # every call is bounded: a module's 0 or negative room still means small
        started = perf_counter()
        summary: Summary | None = None
        status = "failed"
        try:
            summary = await self._ask(text, bound, instruction)
            status = "ok"
            return summary.text
        except asyncio.CancelledError:
            status = "cancelled"
            raise
        finally:
            self.calls.append(self._record(summary, status, bound, instruction, text, perf_counter() - started))

    async def _ask(self, text: str, max_tokens: int, instruction: str) -> Summary:
        if isinstance(self.inner, UsageReporting):
            return await self.inner.summarize_with_usage(text, max_tokens=max_tokens, instruction=instruction)
        return Summary(await self.inner.summarize(text, max_tokens=max_tokens, instruction=instruction))

    def _record(
        self, summary: Summary | None, status: str, bound: int, instruction: str, text: str, seconds: float
    ) -> AuxiliaryCall:
        model = (summary.model if summary else "") or str(getattr(self.inner, "model", "") or "")
        tokens_in = tokens_out = 0
        estimated = False
        if summary is not None:  # a failed call reports nothing: it is not counted
            tokens_in, tokens_out = summary.tokens_in, summary.tokens_out
            if not tokens_in:
                tokens_in, estimated = self.tokens.count_text_message(prompt_of(text, instruction), "user"), True
            if not tokens_out and summary.text:
                tokens_out, estimated = self.tokens.count(summary.text), True
        return AuxiliaryCall(
            module_id=self.module_id,
            purpose=self.purpose,
            model=model,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            max_tokens=bound,
            ms=round(seconds * 1000, 3),
            status=status,
            estimated=estimated,
        )


def labelled(summarizer: Any, purpose: str) -> Any:
    """``summarizer`` with its calls recorded under ``purpose`` (a summarizer that is not metered, as it is)."""
    return summarizer.labelled(purpose) if isinstance(summarizer, MeteredSummarizer) else summarizer
