"""A fake OpenAI-compatible upstream: real HTTP on 127.0.0.1, records every request, answers by script.

The gateway tests and bench/gateway_bench.py point tda (and the LiteLLM proxy) at it instead of a provider, then
assert on what reached "the model": ``FakeUpstream.requests`` holds each request's path, headers and JSON body.

The script is a function of the request body alone (``answer``), so the same request always gets the same reply:
* ``response_format`` json_schema: JSON built from the schema; json_object: ``{"ok": true}``;
* tools offered and no tool result after the last user message: a call of the first tool, its arguments built
  from the tool's parameters (every string is ``TOOL_ARGUMENT``);
* a tool result after the last user message: text quoting it (``TOOL_RESULT_PREFIX`` + the result);
* otherwise text quoting the last user message (``ECHO_PREFIX`` + its text).
``n`` choices are returned (each the same). ``/chat/completions`` streams when asked (SSE, usage at the end when
``stream_options.include_usage``); ``/responses`` answers in the Responses API's shape, streamed when asked (its
named events); ``/messages`` in Anthropic's Messages API's, streamed when asked (its events); ``/models`` lists
``MODELS``. Paths are accepted with or without the ``/v1`` prefix.

Run alone (``python tests/gateway/upstream.py --port N``) it serves until killed: the bench runs it in its own
process so it never competes with the clients for the GIL (``--record-to FILE``: what it received, a JSON line
per request; ``--delay-ms N``: each completion answered N ms after it came, as a provider's latency).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TOOL_ARGUMENT = "ACC-42"
TOOL_RESULT_PREFIX = "The tool answered: "
ECHO_PREFIX = "You said: "
THINKING = "The user wants a balance: I call get_balance."
"""What an Anthropic-shaped answer thinks first when the request enables extended thinking."""
MODELS = ("gpt-4.1", "gpt-4o-mini")


@dataclass(frozen=True)
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def text(self) -> str:
        """The whole body as JSON text: what a leak check searches."""
        return json.dumps(self.body, ensure_ascii=False)


# --- the script ------------------------------------------------------------------------------------------


def example(schema: dict[str, Any]) -> Any:
    """A value that validates against a (simple) JSON schema: objects, arrays, enums, scalars, anyOf."""
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return example(schema[key][0])
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        return {name: example(sub) for name, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [example(schema.get("items") or {"type": "string"})]
    return {"string": TOOL_ARGUMENT, "integer": 1, "number": 1.5, "boolean": True, "null": None}[kind]


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def _after_last_user(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    return messages[last + 1 :]


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    return next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")


@dataclass(frozen=True)
class Reply:
    """What the script answers: text, or one tool call (name, JSON arguments)."""

    text: str = ""
    call: tuple[str, str] | None = None


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    """A chat tool's function ({"type": "function", "function": {...}}) or a Responses tool (flat)."""
    return tool.get("function") or tool


def _json_reply(response_format: dict[str, Any]) -> Reply | None:
    kind = response_format.get("type")
    if kind == "json_schema":
        schema = (response_format.get("json_schema") or response_format).get("schema") or {}
        return Reply(text=json.dumps(example(schema)))
    if kind == "json_object":
        return Reply(text='{"ok": true}')
    return None


def answer(messages: list[dict[str, Any]], tools: list[dict[str, Any]], response_format: Any) -> Reply:
    """The scripted reply to a conversation (chat-completions message shape)."""
    if isinstance(response_format, dict) and (reply := _json_reply(response_format)):
        return reply
    results = [m for m in _after_last_user(messages) if m.get("role") == "tool"]
    if results:
        return Reply(text=TOOL_RESULT_PREFIX + _text(results[-1].get("content")))
    if tools:
        function = _function(tools[0])
        arguments = example(function.get("parameters") or {"type": "object"})
        return Reply(call=(function["name"], json.dumps(arguments)))
    return Reply(text=ECHO_PREFIX + _last_user_text(messages))


def responses_as_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A Responses API input, read as chat messages (enough for the script: roles, text, tool results)."""
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    messages = [{"role": "system", "content": body["instructions"]}] if body.get("instructions") else []
    for item in items or []:
        if item.get("type") == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")})
        elif item.get("type") == "function_call":
            messages.append({"role": "assistant", "content": None, "tool_calls": [item]})
        elif "role" in item:
            messages.append({"role": item["role"], "content": item.get("content")})
    return messages


def anthropic_as_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """An Anthropic Messages API request, read as chat messages (enough for the script: roles, text, tool results,
    tool calls)."""
    system = body.get("system")
    messages = [{"role": "system", "content": _text(system)}] if system else []
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        results = [b for b in blocks if b.get("type") == "tool_result"]
        messages += [{"role": "tool", "tool_call_id": b["tool_use_id"], "content": b.get("content")} for b in results]
        calls = [
            {"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": json.dumps(b["input"])}}
            for b in blocks
            if b.get("type") == "tool_use"
        ]
        rest = [b for b in blocks if b.get("type") not in ("tool_result", "tool_use")]
        if rest or calls:
            messages.append({"role": message["role"], "content": rest, **({"tool_calls": calls} if calls else {})})
    return messages


def anthropic_message(body: dict[str, Any], serial: int) -> dict[str, Any]:
    """A non-streamed Anthropic Messages API answer (``/v1/messages``)."""
    tools = [{"name": t["name"], "parameters": t.get("input_schema")} for t in body.get("tools") or []]
    reply = answer(anthropic_as_messages(body), tools, None)
    if reply.call is not None:
        name, arguments = reply.call
        content = [{"type": "tool_use", "id": f"toolu_fake_{serial}", "name": name, "input": json.loads(arguments)}]
    else:
        content = [{"type": "text", "text": reply.text}]
    if (body.get("thinking") or {}).get("type") == "enabled":  # extended thinking: a signed block comes first
        content.insert(0, {"type": "thinking", "thinking": THINKING, "signature": f"sig-fake-{serial}"})
    prompt = max(1, len(json.dumps(body.get("messages"))) // 4)
    message = {
        "id": f"msg_fake_{serial}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude"),
        "content": content,
        "stop_reason": "tool_use" if reply.call else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": 7},
    }
    if body.get("context_management"):  # Anthropic applies the edits and says so: here, a report by its figures
        message["context_management"] = {
            "applied_edits": [applied_edit(e) for e in body["context_management"]["edits"]]
        }
    return message


def applied_edit(edit: dict[str, Any]) -> dict[str, Any]:
    """The fake's report of an edit (its own figures, so a test sees whose report reached the client)."""
    if edit["type"] == "clear_thinking_20251015":
        return {"type": edit["type"], "cleared_thinking_turns": 1, "cleared_input_tokens": FAKE_CLEARED}
    return {"type": edit["type"], "cleared_tool_uses": 2, "cleared_input_tokens": FAKE_CLEARED}


FAKE_CLEARED = 4321


def anthropic_events(body: dict[str, Any], serial: int, whole: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The same answer (or ``whole``, a message) as Anthropic's event stream: message_start, each block's start /
    delta / stop, message_delta, message_stop."""
    whole = whole or anthropic_message(body, serial)
    start = whole | {"content": [], "stop_reason": None, "usage": whole["usage"] | {"output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(whole["content"]):
        if block["type"] == "thinking":
            opened, delta = (
                {"type": "thinking", "thinking": "", "signature": ""},
                {
                    "type": "thinking_delta",
                    "thinking": block["thinking"],
                },
            )
            signed = {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "signature_delta", "signature": block["signature"]},
            }
            events += [
                {"type": "content_block_start", "index": index, "content_block": opened},
                {"type": "content_block_delta", "index": index, "delta": delta},
                signed,
                {"type": "content_block_stop", "index": index},
            ]
            continue
        if block["type"] == "text":
            opened, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            opened = block | {"input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            {"type": "content_block_start", "index": index, "content_block": opened},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    stop = {"stop_reason": whole["stop_reason"], "stop_sequence": None}
    events += [
        {
            "type": "message_delta",
            "delta": stop,
            "usage": {"output_tokens": 7},
            **({"context_management": whole["context_management"]} if "context_management" in whole else {}),
        },
        {"type": "message_stop"},
    ]
    return events


# --- a scripted reply (``FakeUpstream.script``) -------------------------------------------------------------

Script = Callable[[list[dict[str, Any]]], "dict[str, Any] | None"]
"""A conversation (chat messages) -> the assistant chat message to answer with (None: the default script)."""


def scripted_completion(body: dict[str, Any], message: dict[str, Any], serial: int) -> dict[str, Any]:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
    base = {"id": f"chatcmpl-fake-{serial}", "object": "chat.completion", "created": int(time.time())}
    return base | {"model": body.get("model", "gpt-4.1"), "choices": [choice], "usage": _usage(body)}


def scripted_chunks(body: dict[str, Any], message: dict[str, Any], serial: int) -> list[dict[str, Any]]:
    """``message`` as stream chunks: role, its text, each call (by index), finish, usage when asked."""
    whole = scripted_completion(body, message, serial)
    base = {k: whole[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": message["content"]}] if message.get("content") else []
    deltas += [{"tool_calls": [{"index": i, **c}]} for i, c in enumerate(message.get("tool_calls") or ())]
    chunks = [base | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append(
        base | {"choices": [{"index": 0, "delta": {}, "finish_reason": whole["choices"][0]["finish_reason"]}]}
    )
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append(base | {"choices": [], "usage": whole["usage"]})
    return chunks


def scripted_anthropic(body: dict[str, Any], message: dict[str, Any], serial: int) -> dict[str, Any]:
    """``message`` as Anthropic's: a text block, then a ``tool_use`` block per call."""
    content: list[dict[str, Any]] = [{"type": "text", "text": message["content"]}] if message.get("content") else []
    for c in message.get("tool_calls") or ():
        function = c["function"]
        content.append(
            {"type": "tool_use", "id": c["id"], "name": function["name"], "input": json.loads(function["arguments"])}
        )
    return {
        "id": f"msg_fake_{serial}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude"),
        "content": content,
        "stop_reason": "tool_use" if message.get("tool_calls") else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": max(1, len(json.dumps(body.get("messages"))) // 4), "output_tokens": 7},
    }


# --- the wire ---------------------------------------------------------------------------------------------


def _usage(body: dict[str, Any]) -> dict[str, int]:
    prompt = max(1, len(json.dumps(body.get("messages") or body.get("input") or "")) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": 7, "total_tokens": prompt + 7}


def _message(reply: Reply, index: int) -> dict[str, Any]:
    if reply.call is None:
        return {"role": "assistant", "content": reply.text}
    name, arguments = reply.call
    call = {"id": f"call_fake_{index}", "type": "function", "function": {"name": name, "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def chat_completion(body: dict[str, Any], serial: int) -> dict[str, Any]:
    reply = answer(body.get("messages") or [], body.get("tools") or [], body.get("response_format"))
    finish = "tool_calls" if reply.call else "stop"
    choices = [
        {"index": i, "message": _message(reply, serial), "finish_reason": finish, "logprobs": None}
        for i in range(int(body.get("n") or 1))
    ]
    return {
        "id": f"chatcmpl-fake-{serial}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "gpt-4.1"),
        "choices": choices,
        "usage": _usage(body),
    }


def chat_chunks(body: dict[str, Any], serial: int) -> list[dict[str, Any]]:
    """The same completion as stream chunks: role, content in two pieces (or the call), finish, usage."""
    whole = chat_completion(body, serial)
    base = {k: whole[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    chunks = []
    for choice in whole["choices"]:
        message, i = choice["message"], choice["index"]
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        if message.get("tool_calls"):
            deltas.append({"tool_calls": [{"index": 0, **message["tool_calls"][0]}]})
        else:
            text = message["content"]
            deltas += [{"content": text[: len(text) // 2]}, {"content": text[len(text) // 2 :]}]
        chunks += [base | {"choices": [{"index": i, "delta": d, "finish_reason": None}]} for d in deltas]
        chunks.append(base | {"choices": [{"index": i, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append(base | {"choices": [], "usage": whole["usage"]})
    return chunks


def response(body: dict[str, Any], serial: int) -> dict[str, Any]:
    """A non-streamed Responses API answer (``/responses``)."""
    reply = answer(responses_as_messages(body), body.get("tools") or [], (body.get("text") or {}).get("format"))
    if reply.call is not None:
        name, arguments = reply.call
        output = [
            {
                "type": "function_call",
                "id": f"fc_fake_{serial}",
                "call_id": f"call_fake_{serial}",
                "name": name,
                "arguments": arguments,
                "status": "completed",
            }
        ]
    else:
        part = {"type": "output_text", "text": reply.text, "annotations": []}
        output = [
            {
                "type": "message",
                "id": f"msg_fake_{serial}",
                "role": "assistant",
                "status": "completed",
                "content": [part],
            }
        ]
    usage = _usage(body)
    return {
        "id": f"resp_fake_{serial}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": body.get("model", "gpt-4.1"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": body.get("tools") or [],
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
            "total_tokens": usage["total_tokens"],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def response_events(body: dict[str, Any], serial: int) -> list[dict[str, Any]]:
    """The same answer as a Responses API stream: created, each output item added / its delta / done, completed."""
    whole = response(body, serial)
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": whole | {"status": "in_progress", "output": []}}
    ]
    for index, item in enumerate(whole["output"]):
        events.append(
            {"type": "response.output_item.added", "output_index": index, "item": item | {"status": "in_progress"}}
        )
        if item["type"] == "function_call":
            where = {"item_id": item["id"], "output_index": index}
            events.append({"type": "response.function_call_arguments.delta", **where, "delta": item["arguments"]})
            events.append({"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"]})
        else:
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            text = item["content"][0]["text"]
            events.append(
                {
                    "type": "response.content_part.added",
                    **where,
                    "part": {"type": "output_text", "text": "", "annotations": []},
                }
            )
            events.append({"type": "response.output_text.delta", **where, "delta": text, "logprobs": []})
            events.append({"type": "response.output_text.done", **where, "text": text, "logprobs": []})
            events.append({"type": "response.content_part.done", **where, "part": item["content"][0]})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": whole})
    return [event | {"sequence_number": n} for n, event in enumerate(events)]


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # the default 5 resets connections when 16 clients open theirs at once
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (its pool closed at the end of a run) is not an error of the fake's."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class FakeUpstream:
    """The server, its thread, and what it received. ``with FakeUpstream() as up: ... up.base_url``."""

    def __init__(
        self,
        port: int = 0,
        host: str = "127.0.0.1",
        record: bool = True,
        record_to: Path | None = None,
        delay_s: float = 0.0,
        aside: Callable[[Recorded], bool] | None = None,
    ) -> None:
        self.requests: list[Recorded] = []
        self.aside = aside
        """Which requests are recorded in ``auxiliary`` rather than ``requests``: a server's calls of its own (a
        summary made ahead) land whenever they are done, in a later test's recording too."""
        self.auxiliary: list[Recorded] = []
        self.record = record
        self.record_to = record_to
        """A file each request is appended to (a JSON line: path and body): what a process apart received."""
        self.delay_s = delay_s
        """How long each completion takes before it is answered (a provider's latency; each request its own)."""
        self.script: Script | None = None
        """Replies by script to the calls that offer tools (a summary, a rewrite gets the default one)."""
        self._served = 0
        self._lock = threading.Lock()
        self._server = _Server((host, port), _handler_for(self))
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-upstream", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeUpstream:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def __enter__(self) -> FakeUpstream:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()
            self.auxiliary.clear()

    def calls(self, path: str = "/chat/completions") -> list[Recorded]:
        """The recorded requests to ``path`` (any ``/v1`` prefix removed), oldest first."""
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def _add(self, recorded: Recorded) -> int:
        with self._lock:
            if self.record:
                aside = self.aside is not None and self.aside(recorded)
                (self.auxiliary if aside else self.requests).append(recorded)
            if self.record_to is not None:
                with self.record_to.open("a") as out:
                    out.write(json.dumps({"path": recorded.path, "body": recorded.body}) + "\n")
            self._served += 1
            return self._served


def _handler_for(upstream: FakeUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a provider's API
        disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms wait for a delayed ACK

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            path = self.path.split("?")[0].removeprefix("/v1")
            if path == "/models":
                data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in MODELS]
                return self._json(200, {"object": "list", "data": data})
            return self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})

        def do_POST(self) -> None:
            path = self.path.split("?")[0].removeprefix("/v1")
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                return self._json(400, {"error": {"message": "the body is not JSON", "type": "invalid_request_error"}})
            serial = upstream._add(Recorded(path, {k.lower(): v for k, v in self.headers.items()}, body))
            time.sleep(upstream.delay_s)  # this request's thread only
            if upstream.script is not None and body.get("tools") and self._scripted(path, body, serial):
                return None
            if path == "/chat/completions" and body.get("stream"):
                return self._sse(chat_chunks(body, serial))
            if path == "/chat/completions":
                return self._json(200, chat_completion(body, serial))
            if path == "/responses" and body.get("stream"):
                return self._sse(response_events(body, serial), named=True)
            if path == "/responses":
                return self._json(200, response(body, serial))
            if path.endswith("/messages") and body.get("stream"):
                return self._sse(anthropic_events(body, serial), named=True)
            if path.endswith("/messages"):
                return self._json(200, anthropic_message(body, serial))
            return self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})

        def _scripted(self, path: str, body: dict[str, Any], serial: int) -> bool:
            """Answer by ``upstream.script`` (chat completions or Anthropic's messages); False: it has no reply."""
            anthropic = path.endswith("/messages")
            assert upstream.script is not None
            message = upstream.script(anthropic_as_messages(body) if anthropic else body.get("messages") or [])
            if message is None:
                return False
            if anthropic:
                whole = scripted_anthropic(body, message, serial)
                if body.get("stream"):
                    self._sse(anthropic_events(body, serial, whole), named=True)
                else:
                    self._json(200, whole)
            elif body.get("stream"):
                self._sse(scripted_chunks(body, message, serial))
            else:
                self._json(200, scripted_completion(body, message, serial))
            return True

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _sse(self, chunks: list[dict[str, Any]], named: bool = False) -> None:
            """Chat chunks end with ``[DONE]``; Responses events are named by their type and end with completed."""
            if named:
                data = b"".join(f"event: {c['type']}\ndata: {json.dumps(c)}\n\n".encode() for c in chunks)
            else:
                data = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description="a fake OpenAI-compatible upstream (no recording)")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--record-to", type=Path, help="append each request to this file (a JSON line each)")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="answer each completion after this long")
    args = parser.parse_args()
    server = FakeUpstream(port=args.port, record=False, record_to=args.record_to, delay_s=args.delay_ms / 1000)
    print(f"fake upstream on {server.base_url}", flush=True)
    server._server.serve_forever()


if __name__ == "__main__":
    main()
