"""The mock model's text answers served in process, through the same OpenAI SDK path as a real OpenAI-compatible
upstream (``openai_call``), so a server answering with the mock model never imports litellm (~125 MB).

The upstream is an ``httpx.MockTransport``: it answers each request with the text the request carries in its
``mock_response`` field, shaped as litellm's ``mock_response`` shapes it (tests/test_mock_upstream.py holds the two
to the same Completion and the same streamed deltas): one choice per ``n``, ``finish_reason`` "stop", litellm's
made-up usage, and a stream of three-character pieces.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from typing import TYPE_CHECKING, Any

from components.context_window import model_map

from .config import offline_library_defaults

if TYPE_CHECKING:
    import httpx
    import openai

BASE_URL = "http://mock-model.invalid/v1"
"""Never resolved: the transport answers in process."""
PIECE_CHARS = 3
"""How many characters each streamed chunk carries (litellm's ``mock_completion_streaming_obj``)."""
PROMPT_TOKENS = int(os.getenv("DEFAULT_MOCK_RESPONSE_PROMPT_TOKEN_COUNT", "10"))
COMPLETION_TOKENS = int(os.getenv("DEFAULT_MOCK_RESPONSE_COMPLETION_TOKEN_COUNT", "20"))
"""litellm's made-up usage for a whole mock answer (tda reports the window's own prompt count in its place); a
streamed one's completion tokens are the answer's, counted as litellm counts them (``streamed_tokens``)."""
LITELLM_SIGNALS = ("litellm.", "Exception")
"""Answers litellm's mock turns into an error it raises (``litellm.RateLimitError``, ``Exception: ...``)."""


def serves(answer: Any, model: str, base_url: str | None) -> bool:
    """Whether the mock's ``answer`` for ``model`` is served here: a text litellm would answer with as it is, for a
    model litellm routes without asking its own code (an OpenAI model, or any at a base URL). Anything else (a
    scripted ModelResponse, an exception, a name only litellm places or refuses) goes through litellm's mock."""
    if not isinstance(answer, str) or answer.startswith(LITELLM_SIGNALS):
        return False
    return bool(base_url) or model.startswith("openai/") or bool(model_map.info(model))


def sent_name(model: str, base_url: str | None) -> str:
    """The name litellm's mock knows the model by: at a base URL, an OpenAI-compatible model's (``openai/...``)."""
    return f"openai/{model}" if base_url and not model.startswith("openai/") else model


def streamed_tokens(text: str, model: str) -> int:
    """A streamed mock answer's tokens as litellm's stream usage counts them (``token_counter``): a model of OpenAI's
    catalog with its own encoding (o200k for the gpt-4o family), any other name with cl100k."""
    offline_library_defaults()  # tiktoken's encodings from the files litellm ships
    import tiktoken

    encoding = "cl100k_base"
    if model in model_map.openai_catalog():
        with contextlib.suppress(KeyError):  # a catalog name tiktoken does not know
            encoding = "o200k_base" if "gpt-4o" in model else tiktoken.encoding_name_for_model(model)
    return len(tiktoken.get_encoding(encoding).encode(text, disallowed_special=()))


def client() -> openai.AsyncOpenAI:
    """An SDK client whose upstream answers in process (``answer``)."""
    import httpx
    import openai

    transport = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    return openai.AsyncOpenAI(base_url=BASE_URL, api_key="mock", max_retries=0, http_client=transport)


def answer(request: httpx.Request) -> httpx.Response:
    """A chat.completion (or its SSE stream when the request asks for one) answering the request's
    ``mock_response``."""
    import httpx

    body = json.loads(request.content)
    text, model, n = body["mock_response"], body["model"], int(body.get("n") or 1)
    head = {"id": f"chatcmpl-mock-{uuid.uuid4().hex}", "created": int(time.time()), "model": model}
    usage = {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS}
    usage["total_tokens"] = PROMPT_TOKENS + COMPLETION_TOKENS
    if not body.get("stream"):
        choices = [
            {"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": "stop", "logprobs": None}
            for i in range(n)
        ]
        return httpx.Response(200, json={**head, "object": "chat.completion", "choices": choices, "usage": usage})
    chunks = [
        _chunk(head, n, {"role": "assistant", "content": text[i : i + PIECE_CHARS]}, None)
        for i in range(0, len(text), PIECE_CHARS)
    ]
    chunks.append(_chunk(head, n, {}, "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        counted = streamed_tokens(text, model)
        usage = {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": counted, "total_tokens": PROMPT_TOKENS + counted}
        chunks.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
    sse = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse.encode())


def _chunk(head: dict[str, Any], n: int, delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
    choices = [{"index": i, "delta": delta, "finish_reason": finish_reason} for i in range(n)]
    return {**head, "object": "chat.completion.chunk", "choices": choices}
