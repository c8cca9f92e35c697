"""The litellm boundary: model calls and summaries. litellm is imported lazily (it takes seconds)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

from components.context_window.metering import Summary, prompt_of

MOCK_ANSWER = "This is a mock answer (TDA_MOCK_MODEL is on, so no provider was called)."


@cache
def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm


async def _litellm_loaded() -> Any:
    """litellm, imported in a worker thread the first time: the import takes seconds and must not stall the
    event loop (every open stream and request would wait) when a turn arrives before ``preload`` ran."""
    if _litellm.cache_info().currsize == 0:
        return await asyncio.to_thread(_litellm)
    return _litellm()


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


_CALLBACK_LISTS = (
    "callbacks",
    "input_callback",
    "success_callback",
    "failure_callback",
    "service_callback",
    "_async_input_callback",
    "_async_success_callback",
    "_async_failure_callback",
)


@contextmanager
def _logged_only_if_read(litellm: Any) -> Iterator[None]:
    """Skip litellm's own per-call logging while no litellm callback is registered: it has no reader then, yet
    after every reply it ran a task on the event loop that walks a copy of every message sent (looking for base64
    to truncate), ~3-4 ms of CPU per turn on a long session. Callbacks an operator registers (Langfuse, a
    CustomLogger) are called as before. litellm marks its own nested calls unlogged with this context variable."""
    if any(getattr(litellm, name, None) for name in _CALLBACK_LISTS):
        yield
        return
    from litellm._internal_context import is_internal_call

    token = is_internal_call.set(True)
    try:
        yield
    finally:
        try:
            is_internal_call.reset(token)
        except ValueError:  # stepped across two contexts by a caller (a reply is worth more than the flag)
            is_internal_call.set(False if token.old_value is token.MISSING else token.old_value)


async def routing_error(model: str) -> str | None:
    """Why litellm cannot route ``model`` to a provider, or None when it can (a client error, not a 502)."""
    litellm = await _litellm_loaded()
    try:
        litellm.get_llm_provider(model=model)
    except Exception as exc:  # litellm raises its own BadRequestError with a long explanation
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    return None


OPENAI_BODIES = frozenset({"openai", "azure", "openai_like", "custom_openai"})
"""Providers whose API takes OpenAI's request body as it is (``metadata`` included)."""


def _provider(litellm: Any, model: str) -> str:
    try:
        return str(litellm.get_llm_provider(model=model)[1])
    except Exception:  # an unroutable name fails in the call itself, with litellm's message
        return ""


@dataclass(frozen=True)
class Completion:
    text: str
    tokens_in: int
    tokens_out: int
    tool_calls: list[dict[str, Any]]
    finish_reason: str = "stop"
    more: tuple[Choice, ...] = ()
    """The other choices when the client asked for ``n`` > 1 (the first is this completion's own)."""
    logprobs: Any = None
    """The first choice's log probabilities, when the client asked for them (as the provider sent them)."""


@dataclass(frozen=True)
class Choice:
    text: str
    tool_calls: list[dict[str, Any]]
    finish_reason: str
    logprobs: Any = None


Delta = Callable[[dict[str, Any]], Awaitable[None]]
"""Receives each streamed delta as OpenAI sends it: ``{"content": ...}`` or ``{"tool_calls": [...]}``."""


class LLM:
    """Calls the configured model, or litellm's ``mock_response`` in demo/offline mode."""

    def __init__(self, *, mock: bool, mock_answer: str = MOCK_ANSWER, timeout_s: float = 120.0) -> None:
        self.mock = mock
        self.mock_answer = mock_answer
        self.timeout_s = timeout_s

    def mock_reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        """What the mock model answers: litellm's ``mock_response`` (a text, or a ModelResponse for tool calls)."""
        return self.mock_answer

    async def complete(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        max_tokens: int | None = None,
        tool_choice: Any = None,
        on_delta: Delta | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> Completion:
        """One model call. ``max_tokens`` caps the reply (the window type's output reserve); with ``on_delta``
        the reply is streamed, each delta handed over as it arrives, and the whole returned at the end. ``params``
        are the client's own request parameters (temperature, response_format, n, ...), passed on as sent;
        litellm drops those a provider does not support (``drop_params``)."""
        kwargs: dict[str, Any] = {"model": model, "messages": messages, "timeout": self.timeout_s}
        litellm = await _litellm_loaded()
        if params:
            kwargs.update(params, drop_params=True)
            if "metadata" in params:  # litellm keeps ``metadata`` for its own callbacks: OpenAI's goes in the body
                metadata = kwargs.pop("metadata")
                if _provider(litellm, model) in OPENAI_BODIES:  # elsewhere dropped, as drop_params would
                    kwargs["extra_body"] = {**kwargs.get("extra_body", {}), "metadata": metadata}
        if tools:
            # Our tools are plain functions, never litellm-proxy MCP servers; skipping that check also avoids
            # importing the optional `mcp` package, whose absence otherwise fails every call with tools.
            kwargs.update(tools=tools, _skip_mcp_handler=True)
            if tool_choice is not None:
                kwargs["tool_choice"] = tool_choice
        if max_tokens:
            kwargs["max_tokens"] = max_tokens
        if self.mock:
            kwargs["mock_response"] = self.mock_reply(messages, tools)
        if on_delta is not None:
            return await self._streamed(litellm, kwargs, on_delta)
        with _logged_only_if_read(litellm):
            response = await litellm.acompletion(**kwargs)
        return self._completion(response)

    async def _streamed(self, litellm: Any, kwargs: dict[str, Any], on_delta: Delta) -> Completion:
        # litellm's stream wrapper schedules its success logging whatever the context says: streamed replies keep it
        stream = await litellm.acompletion(**kwargs, stream=True, stream_options={"include_usage": True})
        chunks = []
        async for chunk in stream:
            chunks.append(chunk)
            for choice in chunk.choices or ():
                delta = choice.delta
                if delta.content:
                    await on_delta({"content": delta.content})
                if delta.tool_calls:
                    await on_delta({"tool_calls": [_delta_call(c) for c in delta.tool_calls]})
        return self._completion(litellm.stream_chunk_builder(chunks, messages=kwargs["messages"]))

    def _completion(self, response: Any) -> Completion:
        first, *more = (_choice(c) for c in response.choices)
        usage = getattr(response, "usage", None)
        return Completion(
            text=first.text,
            # A mock's usage is made up: 0 lets the caller report the snapshot's exact count instead.
            tokens_in=0 if self.mock else int(getattr(usage, "prompt_tokens", 0) or 0),
            tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
            tool_calls=first.tool_calls,
            finish_reason=first.finish_reason,
            more=tuple(more),
            logprobs=first.logprobs,
        )


def _choice(choice: Any) -> Choice:
    message = choice.message
    calls = [_call(c) for c in (message.tool_calls or [])]
    logprobs = getattr(choice, "logprobs", None)
    return Choice(
        text=message.content or "",
        tool_calls=calls,
        finish_reason="tool_calls" if calls else (choice.finish_reason or "stop"),
        logprobs=logprobs.model_dump() if hasattr(logprobs, "model_dump") else logprobs,
    )


def _call(call: Any) -> dict[str, Any]:
    """A tool call as OpenAI sends it (litellm's objects carry extra provider fields)."""
    data = call.model_dump() if hasattr(call, "model_dump") else dict(call)
    function = data.get("function") or {}
    return {
        "id": data.get("id") or "",
        "type": "function",
        "function": {"name": function.get("name") or "", "arguments": function.get("arguments") or ""},
    }


def _delta_call(call: Any) -> dict[str, Any]:
    out = _call(call)
    out["index"] = getattr(call, "index", 0) or 0
    return out


class LLMSummarizer:
    """The ``Summarizer`` modules use to condense and to rewrite follow-ups (a real model only). Every reply is
    bounded by ``max_tokens``; the provider's counts come back with it for the snapshot and the turn's usage."""

    def __init__(self, llm: LLM, model: str) -> None:
        self.llm = llm
        self.model = model

    async def summarize(self, text: str, *, max_tokens: int, instruction: str = "") -> str:
        return (await self.summarize_with_usage(text, max_tokens=max_tokens, instruction=instruction)).text

    async def summarize_with_usage(self, text: str, *, max_tokens: int, instruction: str = "") -> Summary:
        message = {"role": "user", "content": prompt_of(text, instruction)}
        done = await self.llm.complete(self.model, [message], [], max_tokens=max(1, max_tokens))
        return Summary(done.text, done.tokens_in, done.tokens_out, self.model)
