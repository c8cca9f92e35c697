"""Model calls to an OpenAI-compatible upstream made with the `openai` SDK itself, without litellm.

litellm calls such an upstream (its ``openai`` provider at a base URL) with this same SDK, after building the body
from the request; importing it costs a server ~125 MB and seconds. For the requests it would send unchanged, tda
sends them itself: the same body through the same SDK (tests/test_openai_call.py compares the two paths' requests
as the upstream receives them), the same retries, fallbacks and error names. Any request litellm would rewrite
(an image given as a bare URL, a file part, a tool schema with a ``pattern``, a parameter it drops or renames, a
reasoning model's ``max_tokens``) and any other provider stay with litellm (``tda/llm.py``).
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from components.context_window import model_map

if TYPE_CHECKING:
    import openai

SENT_AS_GIVEN = frozenset(
    {
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "max_tokens",
        "modalities",
        "prediction",
        "n",
        "presence_penalty",
        "seed",
        "stop",
        "temperature",
        "top_p",
        "parallel_tool_calls",
        "audio",
        "web_search_options",
        "service_tier",
        "safety_identifier",
        "prompt_cache_key",
        "prompt_cache_retention",
        "store",
        "response_format",
        "user",
        "metadata",
    }
)
"""Client parameters litellm's OpenAI configuration passes to an OpenAI-compatible upstream as they are (its
``get_supported_openai_params``; ``user`` as tda allows it, ``metadata`` and ``prompt_cache_retention`` in the body
as tda puts them). Any other parameter (one litellm drops, renames or converts) sends the call through litellm."""
UNKNOWN_MODEL_ALSO = frozenset({"reasoning_effort"})
"""Passed on for a model outside OpenAI's catalog (litellm takes it for a proxy's alias and lets the server decide)."""
NO_RESPONSE_FORMAT = frozenset({"gpt-4", "gpt-3.5-turbo-16k"})
"""Catalog models litellm sends no ``response_format``."""
REASONING_NAME = re.compile(r"^o\d|gpt-5|gpt-6")
"""OpenAI's reasoning models, for which litellm maps ``max_tokens`` and drops parameters: left to litellm."""
PLAIN_PART_TYPES = frozenset({"text", "image_url"})


def route(model: str, base_url: str | None, fallbacks: Iterable[str]) -> tuple[str, ...] | None:
    """The names the call sends, the model then its fallbacks (as litellm's Router tries them), when every one is an
    OpenAI-compatible model at ``base_url`` whose requests litellm passes unchanged; None otherwise (no base URL,
    OpenAI's own API, a provider-prefixed name, a reasoning model)."""
    if not base_url or _openai_hosted(base_url):  # at api.openai.com litellm strips cache marks and tool schemas
        return None
    sent = []
    for name in dict.fromkeys((model, *fallbacks)):
        bare = name.removeprefix("openai/")
        if bare == name and "/" in name:  # "ollama/llama3", or a name whose first part only litellm can place
            return None
        if not bare or REASONING_NAME.search(bare) or "responses/" in bare:
            return None
        sent.append(bare)
    return tuple(sent)


def _openai_hosted(base_url: str) -> bool:
    host = urlparse(base_url).hostname or ""
    return host == "openai.com" or host.endswith(".openai.com")


def body(
    names: tuple[str, ...],
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    tool_choice: Any,
    params: Mapping[str, Any],
    max_tokens: int | None,
    streamed: bool,
) -> dict[str, Any] | None:
    """The SDK's keyword arguments for the request litellm would send each of ``names`` (the model is set per
    name), or None when litellm would change something in it (then the call goes through litellm). A stream with
    log probabilities stays with litellm too: it puts a streamed reply's together."""
    if not passes_params(names, params) or (streamed and "logprobs" in params):
        return None
    if not _sent_unchanged(messages) or _has_key(tools, "pattern"):
        return None
    kwargs: dict[str, Any] = {"messages": _without_none_fields(messages)}
    extra = {k: params[k] for k in ("metadata", "prompt_cache_retention") if k in params}
    kwargs.update((k, v) for k, v in params.items() if k not in extra)
    if extra:
        kwargs["extra_body"] = extra
    if tools:
        kwargs["tools"] = tools
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
    if max_tokens:
        kwargs["max_tokens"] = max_tokens
    return kwargs


def passes_params(names: tuple[str, ...], params: Mapping[str, Any]) -> bool:
    """Whether litellm sends every one of the client's ``params`` to each of ``names`` as it is."""
    return all(set(params) <= _passed(name) for name in names)


def _passed(name: str) -> frozenset[str]:
    passed = SENT_AS_GIVEN if name in _catalog() else SENT_AS_GIVEN | UNKNOWN_MODEL_ALSO
    return passed - {"response_format"} if name in NO_RESPONSE_FORMAT else passed


def _catalog() -> frozenset[str]:
    return model_map.openai_catalog()


def _sent_unchanged(messages: list[dict[str, Any]]) -> bool:
    """Whether litellm sends these messages as they are: a tool message's parts (images hoisted, references
    dropped) and a user message's file parts or bare image URLs it rewrites."""
    for message in messages:
        if not message.get("role"):  # litellm makes it an assistant's
            return False
        content = message.get("content")
        if not isinstance(content, list):
            continue
        if message.get("role") == "tool":
            return False
        for part in content:
            if not isinstance(part, dict) or part.get("type") not in PLAIN_PART_TYPES:
                return False
            image = part.get("image_url")
            if part["type"] == "image_url" and (not isinstance(image, dict) or "format" in image):
                return False
    return True


def _without_none_fields(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages without their fields set to None, as litellm sends them (``cleanup_none_field_in_message``:
    an assistant's ``"content": null`` beside its tool calls is left out)."""
    if all(None not in m.values() for m in messages):
        return messages
    return [{k: v for k, v in m.items() if v is not None} if None in m.values() else m for m in messages]


def _has_key(value: Any, key: str) -> bool:
    if isinstance(value, dict):
        return key in value or any(_has_key(v, key) for v in value.values())
    if isinstance(value, list):
        return any(_has_key(v, key) for v in value)
    return False


def client(base_url: str, key: str) -> openai.AsyncOpenAI:
    """An SDK client for ``base_url`` with ``key``; tda retries itself (``call``), so the SDK never does."""
    import openai

    return openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0)


OnChunk = Callable[[Any], Awaitable[None]]
"""Receives each chunk of a streamed reply as the SDK parses it."""


async def call(
    sdk: openai.AsyncOpenAI,
    names: tuple[str, ...],
    kwargs: dict[str, Any],
    *,
    num_retries: int,
    timeout_s: float,
    on_chunk: OnChunk | None,
) -> Any:
    """The reply (a ChatCompletion, or one assembled from a stream) of the first model in ``names`` that answers,
    each tried ``num_retries`` more times on an error worth retrying; the first model's error when none answers.
    As with litellm's Router, only opening the call is retried or handed to a fallback: a stream that fails after
    its first chunks went out fails the call."""
    first: BaseException | None = None
    for name in names:
        try:
            reply = await _with_retries(sdk, {**kwargs, "model": name}, num_retries, timeout_s, on_chunk is not None)
            break
        except Exception as exc:
            first = first or exc
    else:
        assert first is not None
        raise first
    if on_chunk is None:
        return reply
    try:
        return await assembled(reply, on_chunk)
    except Exception as exc:
        raise as_litellm_raises(exc) from exc


async def _with_retries(
    sdk: openai.AsyncOpenAI, kwargs: dict[str, Any], num_retries: int, timeout_s: float, streamed: bool
) -> Any:
    """The ChatCompletion, or the opened stream, of one model."""
    stream = {"stream": True, "stream_options": {"include_usage": True}} if streamed else {}
    for attempt in range(num_retries + 1):
        try:
            return await sdk.chat.completions.create(**kwargs, **stream, timeout=timeout_s)
        except Exception as exc:
            failed = as_litellm_raises(exc)
            if attempt == num_retries or not worth_retrying(failed):
                raise failed from exc
            await asyncio.sleep(retry_delay(attempt, getattr(getattr(exc, "response", None), "headers", None)))
    raise AssertionError("unreachable")


def worth_retrying(exc: BaseException) -> bool:
    """Whether litellm's Router retries a call that failed so: no answer at all, or a status it retries (408, 409,
    429 and server errors by ``should_retry``; 403 too, which litellm names a generic APIError)."""
    status = getattr(exc, "status_code", None)
    return status is None or status in (403, 408, 409, 429) or status >= 500


INITIAL_DELAY_S, MAX_DELAY_S, JITTER_S = 0.5, 8.0, 0.75


def retry_delay(attempt: int, headers: Mapping[str, str] | None) -> float:
    """How long to wait before retry ``attempt + 1``: the upstream's ``Retry-After`` when it is reasonable, else
    exponential backoff, plus jitter (litellm's ``calculate_retry_after``)."""
    jitter = JITTER_S * random.random()
    try:
        asked = float((headers or {}).get("retry-after", ""))
    except ValueError:
        asked = 0.0
    if 0 < asked <= 60:
        return asked + jitter
    return min(INITIAL_DELAY_S * 2.0**attempt, MAX_DELAY_S) + jitter


LITELLM_ERRORS: dict[int, tuple[str, bool]] = {
    400: ("BadRequestError", True),
    401: ("AuthenticationError", False),
    404: ("NotFoundError", False),
    408: ("Timeout", False),
    422: ("BadRequestError", True),
    429: ("RateLimitError", True),
    500: ("InternalServerError", True),
    502: ("BadGatewayError", False),
    503: ("ServiceUnavailableError", False),
    504: ("Timeout", False),
}
"""What litellm calls an OpenAI-compatible upstream's failure, by status, and whether it keeps the upstream's error
body (a caller is shown its message); any other status is a generic ``APIError`` without it. Measured against
litellm 1.106 (tests/test_openai_call.py checks every status both ways)."""
NO_ANSWER = ("InternalServerError", 500)
"""litellm's name and status for an upstream that could not be reached."""


class UpstreamError(Exception):
    """A failed call as litellm would have raised it: ``kind`` (litellm's class name), ``status_code``, ``body``
    (the upstream's error object where litellm keeps it). The SDK's own exception is its ``__cause__``."""

    def __init__(self, kind: str, status_code: int, body: Any, message: str) -> None:
        super().__init__(message)
        self.kind, self.status_code, self.body = kind, status_code, body


def as_litellm_raises(exc: Exception) -> Exception:
    """The SDK's exception for a failed call, as litellm would have raised it (anything else as it is)."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return UpstreamError("Timeout", 408, None, str(exc))
    if isinstance(exc, openai.APIConnectionError):
        return UpstreamError(*NO_ANSWER, None, str(exc))
    if isinstance(exc, openai.APIStatusError):
        kind, keeps_body = LITELLM_ERRORS.get(exc.status_code, ("APIError", False))
        return UpstreamError(kind, exc.status_code, exc.body if keeps_body else None, str(exc))
    return exc


async def assembled(stream: Any, on_chunk: OnChunk) -> Any:
    """A streamed reply's chunks handed to ``on_chunk`` as they come, then put together as a ChatCompletion's
    shape: each choice's text, its tool calls joined by index, its last finish reason, and the usage."""
    texts: dict[int, list[str]] = {}
    calls: dict[int, dict[int, dict[str, Any]]] = {}
    reasons: dict[int, str | None] = {}
    usage = None
    async for chunk in stream:
        await on_chunk(chunk)
        usage = chunk.usage or usage
        for choice in chunk.choices or ():
            delta = choice.delta
            texts.setdefault(choice.index, []).append(delta.content or "")
            for part in delta.tool_calls or ():
                call = calls.setdefault(choice.index, {}).setdefault(
                    part.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                )
                call["id"] = part.id or call["id"]
                if part.function is not None:
                    call["function"]["name"] = part.function.name or call["function"]["name"]
                    call["function"]["arguments"] += part.function.arguments or ""
            reasons[choice.index] = choice.finish_reason or reasons.get(choice.index)
    choices = [
        SimpleNamespace(
            message=SimpleNamespace(
                content="".join(texts[i]) or None, tool_calls=[c for _, c in sorted(calls.get(i, {}).items())]
            ),
            finish_reason=reasons.get(i),
            logprobs=None,
        )
        for i in sorted(texts)
    ]
    return SimpleNamespace(choices=choices, usage=usage)
