"""The litellm boundary: model calls and summaries. litellm is imported lazily (it takes seconds)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from functools import cache
from typing import Any

MOCK_ANSWER = "This is a mock answer (TDA_MOCK_MODEL is on, so no provider was called)."


@cache
def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm


def _warm_up() -> None:
    litellm = _litellm()
    tool = {"type": "function", "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}}}
    litellm.completion(
        model="gpt-4o",
        messages=[{"role": "user", "content": "hi"}],
        mock_response="ok",
        tools=[tool],
        _skip_mcp_handler=True,
    )


async def preload() -> None:
    """Import litellm and make one mock call in a worker thread at start-up. Done lazily by the first turn,
    it would block the event loop for seconds (import) and ~0.5 s (first call), stalling every SSE stream."""
    await asyncio.to_thread(_warm_up)


@dataclass(frozen=True)
class Completion:
    text: str
    tokens_in: int
    tokens_out: int
    tool_calls: list[dict[str, Any]]


class LLM:
    """Calls the configured model, or litellm's ``mock_response`` in demo/offline mode."""

    def __init__(self, *, mock: bool, mock_answer: str = MOCK_ANSWER, timeout_s: float = 120.0) -> None:
        self.mock = mock
        self.mock_answer = mock_answer
        self.timeout_s = timeout_s

    async def complete(self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Completion:
        kwargs: dict[str, Any] = {"model": model, "messages": messages, "timeout": self.timeout_s}
        if tools:
            # Our tools are plain functions, never litellm-proxy MCP servers; skipping that check also avoids
            # importing the optional `mcp` package, whose absence otherwise fails every call with tools.
            kwargs.update(tools=tools, _skip_mcp_handler=True)
        if self.mock:
            kwargs["mock_response"] = self.mock_answer
        response = await _litellm().acompletion(**kwargs)
        message = response.choices[0].message
        usage = getattr(response, "usage", None)
        return Completion(
            text=message.content or "",
            tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
            tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
            tool_calls=[c.model_dump() for c in (message.tool_calls or [])],
        )


class LLMSummarizer:
    """The ``Summarizer`` modules use to condense and to rewrite follow-ups (a real model only)."""

    def __init__(self, llm: LLM, model: str) -> None:
        self.llm = llm
        self.model = model

    async def summarize(self, text: str, *, max_tokens: int, instruction: str = "") -> str:
        prompt = (instruction or "Summarise the following, keeping facts, numbers and decisions.") + "\n\n" + text
        done = await self.llm.complete(self.model, [{"role": "user", "content": prompt}], [])
        return done.text
