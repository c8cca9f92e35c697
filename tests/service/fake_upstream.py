"""A real HTTP server on 127.0.0.1 speaking OpenAI's chat-completions API (and Anthropic's messages API at
``/v1/messages``), in a thread: it records every request (path, headers, JSON body) and answers by script, so tests
see exactly what tda sent an upstream."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes = b""
    """The body as it came over the wire."""


@dataclass
class FakeUpstream:
    base_url: str = ""
    received: list[Received] = field(default_factory=list)
    failures: dict[str, list[int]] = field(default_factory=dict)
    """Model name -> statuses to answer its next calls with, in order (then it answers normally)."""
    always_failing: set[str] = field(default_factory=set)
    """Models answered 500 every time."""
    error_body: tuple[str, bytes] | None = None
    """(content type, body) a failure answers with instead of OpenAI's JSON error (an upstream that is not one)."""
    usage: dict[str, int] = field(default_factory=dict)
    """Extra usage fields in each answer (``cache_read_input_tokens``, ``prompt_tokens_details``...)."""
    prompt_tokens: Callable[[dict[str, Any]], int] | None = None
    """The prompt count a chat-completions answer reports for a request body (None: 11): the provider's tokenizer."""

    def models_called(self) -> list[str]:
        return [r.body.get("model", "") for r in self.received]

    def answer(self, model: str) -> str:
        return f"Answer from {model} at the fake upstream."


def _handler(fake: FakeUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.loads(raw or b"{}")
            fake.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body, raw))
            model = str(body.get("model", ""))
            scripted = fake.failures.get(model)
            status = 500 if model in fake.always_failing else (scripted.pop(0) if scripted else 200)
            if status != 200:
                error = {"error": {"message": f"scripted failure of {model}", "type": "server_error", "code": None}}
                content_type, data = fake.error_body or ("application/json", json.dumps(error).encode())
                return self._send(status, content_type, data)
            if self.path.endswith("/messages"):
                answer = _anthropic_message(model, fake.answer(model), fake.usage)
                return self._send(200, "application/json", json.dumps(answer).encode())
            if body.get("stream"):
                return self._send(200, "text/event-stream", _stream(model, fake.answer(model)))
            completion = _completion(model, fake.answer(model))
            completion["usage"].update(fake.usage)
            if fake.prompt_tokens is not None:
                completion["usage"]["prompt_tokens"] = fake.prompt_tokens(body)
            return self._send(200, "application/json", json.dumps(completion).encode())

        def _send(self, status: int, content_type: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _completion(model: str, text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def _anthropic_message(model: str, text: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 11, "output_tokens": 7, **usage},
    }


def _stream(model: str, text: str) -> bytes:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
        *(
            {**base, "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
            for word in re.findall(r"\S+\s*", text)
        ),
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**base, "choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}},
    ]
    frames = [f"data: {json.dumps(c)}\n\n" for c in chunks]
    return ("".join(frames) + "data: [DONE]\n\n").encode()


@contextmanager
def fake_upstream() -> Iterator[FakeUpstream]:
    fake = FakeUpstream()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
