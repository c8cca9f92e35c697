"""Traces out: each turn as OpenTelemetry spans at an OTLP/HTTP collector (GenAI semantic conventions), checked at a
receiver that decodes what arrives with opentelemetry-proto (the wire format, not tda's code)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import litellm
import openai
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from tests.ops.live import bare_env
from tests.service.served_app import served
from tests.service.support import free_port

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Received:
    """A span as the collector decoded it: ids as hex, attributes as Python values."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    start: int
    end: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    status: tuple[int, str] = (0, "")


@dataclass
class Collector:
    url: str
    paths: list[str] = field(default_factory=list)
    spans: list[Received] = field(default_factory=list)

    def named(self, name: str) -> list[Received]:
        return [s for s in self.spans if s.name == name]


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind)


def _attributes(items: Any) -> dict[str, Any]:
    return {a.key: _value(a.value) for a in items}


@contextmanager
def otlp_collector() -> Iterator[Collector]:
    """An OTLP/HTTP receiver on 127.0.0.1: decodes each protobuf ExportTraceServiceRequest it is sent."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    collector = Collector(f"http://127.0.0.1:{server.server_address[1]}")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            assert self.headers["Content-Type"] == "application/x-protobuf"
            request = ExportTraceServiceRequest.FromString(body)
            collector.paths.append(self.path)
            for resource_spans in request.resource_spans:
                resource = _attributes(resource_spans.resource.attributes)
                for scope in resource_spans.scope_spans:
                    collector.spans.extend(
                        Received(
                            s.name,
                            s.trace_id.hex(),
                            s.span_id.hex(),
                            s.parent_span_id.hex(),
                            s.kind,
                            s.start_time_unix_nano,
                            s.end_time_unix_nano,
                            _attributes(s.attributes),
                            resource,
                            (s.status.code, s.status.message),
                        )
                        for s in scope.spans
                    )
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server.RequestHandlerClass = Handler
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield collector
    finally:
        server.shutdown()
        server.server_close()


async def test_each_turn_reaches_an_otlp_collector_as_genai_spans(live, upstream):
    """A turn is one trace: ``tda.turn`` holds ``tda.assemble`` (a child per module with its allocation, use and
    strategy, as the snapshot recorded them) and ``chat gpt-4o``, a client span with the GenAI conventions' model,
    provider, tokens in/out and cached tokens as the provider reported them, and dollars as litellm prices them."""
    upstream.usage = {"prompt_tokens": 2048, "prompt_tokens_details": {"cached_tokens": 1536}}
    with otlp_collector() as collector:
        settings = dataclasses.replace(live, otlp_endpoint=collector.url)
        async with served(settings) as app:
            await app.profile(
                "gpt", type="llm_only", model="gpt-4o", upstream={"base_url": upstream.base_url}, system_prompt="Help."
            )
            assert (await app.http("POST", "/v1/sessions", json={"id": "t1", "profile_id": "gpt"})).status_code == 201
            done = []
            for query in ("Where is order 7?", "And order 8?"):
                r = await app.http("POST", "/v1/sessions/t1/turns", json={"query": query})
                assert r.status_code == 201, r.text
                done.append(r.json())
            client = app.sdk(**{"X-TDA-Profile": "gpt", "X-TDA-Session": "g1"})  # the chat endpoint's turns too
            await client.chat.completions.create(model="tda", messages=[{"role": "user", "content": "Hi?"}])
        # the app has stopped: its shutdown sent what was queued
    assert set(collector.paths) == {"/v1/traces"}
    assert [(r.attributes["session.id"], r.attributes["tda.turn"]) for r in collector.named("tda.turn")] == [
        ("t1", 1),
        ("t1", 2),
        ("g1", 1),
    ]
    assert len(collector.named("chat gpt-4o")) == 3
    roots = [r for r in collector.named("tda.turn") if r.attributes["session.id"] == "t1"]
    assert len({r.trace_id for r in roots}) == 2 and all(r.parent_id == "" for r in roots)
    for root, turn in zip(roots, done, strict=True):
        in_trace = [s for s in collector.spans if s.trace_id == root.trace_id]
        assert root.resource["service.name"] == "tda"
        assert root.attributes["session.id"] == root.attributes["gen_ai.conversation.id"] == "t1"
        assert root.attributes["tda.snapshot_id"] == turn["snapshot_id"]
        (assembly,) = [s for s in in_trace if s.name == "tda.assemble"]
        (chat,) = [s for s in in_trace if s.name == "chat gpt-4o"]
        assert assembly.parent_id == chat.parent_id == root.span_id
        assert root.start <= assembly.start <= assembly.end <= chat.start <= chat.end <= root.end
        modules = {s.attributes["tda.module.id"]: s for s in in_trace if s.parent_id == assembly.span_id}
        recorded = {m["module_id"]: m for m in turn["snapshot"]["modules"]}
        assert set(modules) == set(recorded) and len(in_trace) == 3 + len(recorded)
        for module_id, span in modules.items():
            assert span.name == f"tda.module {module_id}"
            for key in ("allocated", "used"):
                assert span.attributes[f"tda.module.{key}_tokens"] == recorded[module_id][key]
            assert span.attributes["tda.module.strategy"] == recorded[module_id]["strategy"]
        assert chat.kind == Span.SpanKind.SPAN_KIND_CLIENT
        attributes = chat.attributes
        assert attributes["gen_ai.operation.name"] == "chat" and attributes["gen_ai.provider.name"] == "openai"
        assert attributes["gen_ai.request.model"] == "gpt-4o"
        assert attributes["gen_ai.usage.input_tokens"] == 2048 and attributes["gen_ai.usage.output_tokens"] == 7
        assert attributes["gen_ai.usage.cache_read.input_tokens"] == 1536
        assert attributes["gen_ai.response.finish_reasons"] == ["stop"]
        price_in, price_out = litellm.cost_per_token(
            model="gpt-4o", prompt_tokens=2048, completion_tokens=7, cache_read_input_tokens=1536
        )
        assert attributes["gen_ai.usage.cost"] == pytest.approx(price_in + price_out)


async def test_a_collector_that_is_down_costs_one_log_line_and_no_turn(live, upstream, caplog, monkeypatch):
    """Nothing listens at the endpoint: every turn still answers, and the log says so once, not per batch."""
    monkeypatch.setattr("tda.traces_out.EXPORT_TIMEOUT_S", 0.5)  # the give-up time of one batch, kept short
    settings = dataclasses.replace(live, otlp_endpoint=f"http://127.0.0.1:{free_port()}")
    caplog.set_level(logging.INFO, logger="tda.traces_out")
    async with served(settings) as app:
        await app.profile("gpt", type="llm_only", model="gpt-4o", upstream={"base_url": upstream.base_url})
        assert (await app.http("POST", "/v1/sessions", json={"id": "d1", "profile_id": "gpt"})).status_code == 201
        for turn in range(3):
            r = await app.http("POST", "/v1/sessions/d1/turns", json={"query": f"Question {turn}?"})
            assert r.status_code == 201, r.text
            await asyncio.to_thread(app.svc.traces_out.flush)  # each turn's batch is sent, and fails
    warnings = [r for r in caplog.records if r.name == "tda.traces_out" and r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "not reaching the OTLP collector" in warnings[0].getMessage()


OFF = """
import asyncio, json, sys
from pathlib import Path
from tda.app import create_app
from tda.config import Settings

async def main():
    settings = Settings.from_env(data_dir=Path(sys.argv[1]), embedder="hashing")
    app = create_app(settings, warm_up_llm=False, warm_up_knowledge=False)
    # patient as tests/conftest.py's PatientTestApp (not imported here): Quart's 6 s start-up timed out at load 10
    async with app.test_app_class(app, startup_timeout=120, shutdown_timeout=120) as running:
        svc = app.extensions["tda"]
        token, _ = await svc.store.tokens.create("agent", "admin")
        client, auth = running.test_client(), {"Authorization": f"Bearer {token}"}
        profile = {"id": "p", "type": "llm_only", "model": "gpt-4o"}
        assert (await client.post("/v1/profiles", json=profile, headers=auth)).status_code == 201
        assert (await client.post("/v1/sessions", json={"id": "s", "profile_id": "p"}, headers=auth)).status_code == 201
        r = await client.post("/v1/sessions/s/turns", json={"query": "Hello?"}, headers=auth)
        assert r.status_code == 201
    names = ("opentelemetry.exporter.otlp.proto.http", "tda.traces_out")
    loaded = sorted(m for m in sys.modules if m.startswith(names))
    print(json.dumps({"exporter": svc.traces_out is not None, "loaded": loaded}))

asyncio.run(main())
"""


def test_off_by_default_nothing_is_exported_and_no_exporter_is_imported(tmp_path):
    """Without TDA_OTLP_ENDPOINT a turn exports nothing, even with OpenTelemetry's own endpoint variable set for
    some other program, and neither tda's exporter nor OpenTelemetry's OTLP/HTTP exporter is imported."""
    with otlp_collector() as collector:
        env = bare_env(HOME=str(tmp_path), OTEL_EXPORTER_OTLP_ENDPOINT=collector.url, OTEL_TRACES_EXPORTER="otlp")
        script = textwrap.dedent(OFF)
        done = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"exporter": False, "loaded": []}
    assert collector.spans == [] and collector.paths == []


def test_the_endpoint_setting_says_what_to_change():
    """A bad endpoint or header list is refused at start with the variable's name (and no credential echoed)."""
    from tda.config import Settings

    with pytest.raises(ValueError, match="TDA_OTLP_ENDPOINT"):
        Settings.from_env({"TDA_OTLP_ENDPOINT": "collector:4318"})
    with pytest.raises(ValueError, match="TDA_OTLP_HEADERS") as refused:
        Settings.from_env({"TDA_OTLP_HEADERS": "sk-lf-secret"})
    assert "sk-lf-secret" not in str(refused.value)
    settings = Settings.from_env({"TDA_OTLP_ENDPOINT": "http://c:4318/", "TDA_OTLP_HEADERS": "Authorization=Basic a=="})
    assert settings.otlp_endpoint == "http://c:4318" and settings.otlp_headers == (("Authorization", "Basic a=="),)
    assert "Basic a==" not in repr(settings)


def test_a_module_s_own_model_calls_are_client_spans_under_it():
    """A summary a module asked for while assembling is a GenAI ``chat`` span under that module's span, with its
    tokens and purpose; a failed one is marked an error. A chat call without a session has no session id."""
    from components.context_window.snapshot import AuxiliaryCall, ContextWindowSnapshot, ModuleUsage
    from tda.traces_out import TracesOut, TurnTimes

    modules = [ModuleUsage("conversation_history", "ok", allocated=900, used=700, strategy="summary", blocked_ms=2.0)]
    calls = [
        AuxiliaryCall("conversation_history", "history_summary", "gpt-4o-mini", 640, 90, 256, ms=40.0),
        AuxiliaryCall("conversation_history", "history_summary", "gpt-4o-mini", 0, 0, 256, ms=5.0, status="failed"),
    ]
    snapshot = ContextWindowSnapshot(
        *("balanced", "Balanced", "gpt-4o", 128_000, "litellm", None, None, 4_000, 500, 3_500, 12, 712, modules),
        auxiliary_calls=calls,
    )
    call = {"model": "gpt-4o", "prompt_tokens": 712, "cache_read_tokens": 0, "cache_write_tokens": 0}
    with otlp_collector() as collector:
        out = TracesOut(collector.url)
        now = time.time_ns()
        out.turn(
            snapshot, {**call, "completion_tokens": 9, "cost": None}, TurnTimes(now, now + 50_000_000, now + 90_000_000)
        )
        out.shutdown()
    (module,) = collector.named("tda.module conversation_history")
    summaries = [s for s in collector.named("chat gpt-4o-mini") if s.parent_id == module.span_id]
    assert [(s.attributes["gen_ai.usage.input_tokens"], s.attributes["tda.auxiliary.status"]) for s in summaries] == [
        (640, "ok"),
        (0, "failed"),
    ]
    assert summaries[0].attributes["tda.auxiliary.purpose"] == "history_summary"
    assert summaries[0].end - summaries[0].start == 40_000_000
    (root,) = collector.named("tda.turn")
    assert "session.id" not in root.attributes and root.attributes["tda.turn"] == 0
    (answer,) = collector.named("chat gpt-4o")
    assert answer.attributes["tda.cost.price_unknown"] is True and "gen_ai.usage.cost" not in answer.attributes


async def test_a_failed_model_call_is_an_error_span(live, upstream):
    """A turn whose model call fails (the provider answers 500) still leaves its trace: the window that was
    assembled, and a ``chat`` span marked as an error with the reason, on the native and the chat endpoint."""
    upstream.always_failing = {"gpt-4o"}
    with otlp_collector() as collector:
        settings = dataclasses.replace(live, otlp_endpoint=collector.url, upstream_retries=0)
        async with served(settings) as app:
            await app.profile("gpt", type="llm_only", model="gpt-4o", upstream={"base_url": upstream.base_url})
            assert (await app.http("POST", "/v1/sessions", json={"id": "f1", "profile_id": "gpt"})).status_code == 201
            r = await app.http("POST", "/v1/sessions/f1/turns", json={"query": "Where is order 7?"})
            assert r.status_code == 502, r.text
            client = app.sdk(**{"X-TDA-Profile": "gpt", "X-TDA-Session": "f2"})
            with pytest.raises(openai.APIStatusError):
                await client.chat.completions.create(model="tda", messages=[{"role": "user", "content": "Hi?"}])
    calls = collector.named("chat gpt-4o")
    assert len(calls) == 2 and len(collector.named("tda.assemble")) == 2
    for span in calls:
        assert span.status[0] == Status.StatusCode.STATUS_CODE_ERROR and "the model call failed" in span.status[1]
        assert span.attributes["error.type"] == "model_call_failed"
        assert "gen_ai.usage.input_tokens" not in span.attributes
    assert [r.attributes["session.id"] for r in collector.named("tda.turn")] == ["f1", "f2"]


def test_providers_are_named_as_the_genai_conventions_name_them():
    """gen_ai.provider.name takes the conventions' well-known values, not litellm's spellings of them."""
    from tda.traces_out import provider_of

    names = {
        "gpt-4o": "openai",
        "anthropic/claude-sonnet-4-5": "anthropic",
        "gemini/gemini-2.0-flash": "gcp.gemini",
        "vertex_ai/gemini-2.0-flash": "gcp.vertex_ai",
        "bedrock/anthropic.claude-3-sonnet-20240229-v1:0": "aws.bedrock",
        "azure/gpt-4o": "azure.ai.openai",
        "mistral/mistral-large-latest": "mistral_ai",
        "xai/grok-2": "x_ai",
    }
    assert {model: provider_of(model) for model in names} == names


SECRET = "sk-proj-7f3Kq9Zx2Lm8Vb4Nw6Rt1Yp5"
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def _texts(message: dict[str, Any]) -> str:
    return "".join(p.get("content") or "" for p in message["parts"] if p["type"] == "text")


async def test_content_is_on_the_chat_span_only_when_asked_with_its_modules_and_redacted(live, upstream):
    """With TDA_OTLP_CAPTURE_CONTENT the chat span carries the GenAI conventions' content attributes: the window's
    system text as the system instructions, the rest as the input messages (checked against what the upstream
    received), the answer as the output; each names the module that contributed it, and a key in the conversation
    is hidden as in logs. Without the setting no span carries content."""
    conversation = [
        {"role": "system", "content": "You are the order desk."},
        {"role": "user", "content": "Where is order 7?"},
        {"role": "assistant", "content": "It left on Monday."},
        {"role": "user", "content": f"Use my key {SECRET} to check order 8."},
    ]
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"order": 8}'}}
    tool_loop = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "order 8 is packed"},
    ]
    with otlp_collector() as collector:
        settings = dataclasses.replace(live, otlp_endpoint=collector.url, otlp_capture_content=True)
        async with served(settings) as app:
            await app.profile("gpt", type="llm_only", model="gpt-4o", upstream={"base_url": upstream.base_url})
            client = app.sdk(**{"X-TDA-Profile": "gpt", "X-TDA-Session": "c1"})
            reply = await client.chat.completions.create(model="tda", messages=conversation)
            await client.chat.completions.create(model="tda", messages=[*conversation, *tool_loop], tools=TOOLS)
    chat, step = sorted(collector.named("chat gpt-4o"), key=lambda span: span.start)
    attributes = chat.attributes
    sent = upstream.received[-2].body["messages"]  # the first call's
    instructions = json.loads(attributes["gen_ai.system_instructions"])
    inputs = json.loads(attributes["gen_ai.input.messages"])
    lead = next(i for i, m in enumerate(sent) if m["role"] != "system")
    assert [p["content"] for p in instructions] == [m["content"] for m in sent[:lead]]
    assert instructions[0]["type"] == "text" and instructions[0]["tda.module_id"] == "system_prompt"
    assert [(m["role"], _texts(m)) for m in inputs] == [
        (m["role"], m["content"].replace(SECRET, "***")) for m in sent[lead:]
    ]
    assert inputs[-1]["tda.module_id"] == "query" and SECRET in sent[-1]["content"]
    assert {m["tda.module_id"] for m in inputs[:-1]} == {"conversation_history"}
    assert SECRET not in json.dumps(attributes)
    # the next step of the turn: its tool loop follows the question, which is still the query
    stepped = json.loads(step.attributes["gen_ai.input.messages"])
    assert [(m["role"], m["tda.module_id"]) for m in stepped[-3:]] == [
        ("user", "query"),
        ("assistant", ""),
        ("tool", ""),
    ]
    assert stepped[-2]["parts"] == [{"type": "tool_call", "id": "call_1", "name": "lookup", "arguments": {"order": 8}}]
    assert stepped[-1]["parts"] == [{"type": "tool_call_response", "id": "call_1", "response": "order 8 is packed"}]
    output = json.loads(attributes["gen_ai.output.messages"])
    assert output == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": reply.choices[0].message.content}],
            "finish_reason": "stop",
        }
    ]

    with otlp_collector() as collector:  # the default: counts, no content
        settings = dataclasses.replace(live, otlp_endpoint=collector.url)
        async with served(settings) as app:  # the same data directory: the profile is there
            client = app.sdk(**{"X-TDA-Profile": "gpt"})
            await client.chat.completions.create(model="tda", messages=conversation)
    (chat,) = collector.named("chat gpt-4o")
    assert not [key for key in chat.attributes if key.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.system"))]


def test_tool_calls_and_their_results_are_parts_of_their_own():
    """A tool loop in the window: the call as a ``tool_call`` part with its arguments as JSON, the result as a
    ``tool_call_response``; the answer's own tool calls in the output; a failed call has input and no output."""
    from tda.traces_out import Sent, content_attributes

    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"order": 7}'}}
    messages = [
        {"role": "system", "content": "Help."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "shipped"},
    ]
    modules = ["system_prompt", "query", "", ""]
    answer_call = {"id": "call_2", "type": "function", "function": {"name": "lookup", "arguments": '{"order": 8}'}}
    attributes = content_attributes(Sent(messages, modules, "", [answer_call]), "tool_calls")
    inputs = json.loads(attributes["gen_ai.input.messages"])
    assert inputs[0]["parts"] == [{"type": "text", "content": "What is this?"}, {"type": "image_url"}]
    assert inputs[1]["parts"] == [{"type": "tool_call", "id": "call_1", "name": "lookup", "arguments": {"order": 7}}]
    assert inputs[2] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "call_1", "response": "shipped"}],
        "tda.module_id": "",
    }
    (output,) = json.loads(attributes["gen_ai.output.messages"])
    assert output["parts"] == [{"type": "tool_call", "id": "call_2", "name": "lookup", "arguments": {"order": 8}}]
    assert output["finish_reason"] == "tool_calls"
    assert "gen_ai.output.messages" not in content_attributes(Sent(messages, modules), None)


def test_the_content_setting_says_what_to_change():
    from tda.config import Settings

    assert Settings.from_env({}).otlp_capture_content is False
    assert Settings.from_env({"TDA_OTLP_CAPTURE_CONTENT": "true"}).otlp_capture_content is True
    with pytest.raises(ValueError, match="TDA_OTLP_CAPTURE_CONTENT='maybe'"):
        Settings.from_env({"TDA_OTLP_CAPTURE_CONTENT": "maybe"})
