"""Traces out: each turn as OpenTelemetry spans, sent to an OTLP/HTTP (protobuf) collector when
``TDA_OTLP_ENDPOINT`` is set (Langfuse, Arize Phoenix, Jaeger, an OpenTelemetry Collector, ...).

Imported only when that setting is set (``TDAService``): with it unset, nothing of OpenTelemetry's exporters is
loaded. A turn is one trace: ``tda.turn`` holds ``tda.assemble`` (with a child per module: allocated, used,
strategy) and the model call, ``chat {model}``, named and described by the OpenTelemetry GenAI semantic
conventions (``gen_ai.*``: model, provider, tokens in and out, tokens read from and written to the prompt cache)
plus its dollars. With ``TDA_OTLP_CAPTURE_CONTENT`` the ``chat`` span also carries what the model was sent and
answered (``gen_ai.system_instructions``, ``gen_ai.input.messages``, ``gen_ai.output.messages``, the conventions'
JSON), each message naming the module that contributed it (``tda.module_id``), redacted as logs are. Spans are made
after the answer, from what the turn recorded, and queued for the SDK's batch
processor, which sends them from its own thread: a turn never waits for the collector, and a collector that is
down costs a warning in the log (once, and a line when it answers again), never the turn.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from components.context_window import model_map
from components.context_window.snapshot import AuxiliaryCall, ContextWindowSnapshot, ModuleUsage

from .redact import redact_secrets

log = logging.getLogger(__name__)

TRACES_PATH = "/v1/traces"
EXPORT_TIMEOUT_S = 5.0
"""How long one batch may take to send, retries included (the SDK's default is 10 s): it bounds shutdown."""


def traces_url(endpoint: str) -> str:
    """The collector's traces URL: OTLP's base address plus ``/v1/traces``, unless the setting names it already."""
    return endpoint if endpoint.endswith(TRACES_PATH) else endpoint + TRACES_PATH


@dataclass(frozen=True)
class TurnTimes:
    """Wall-clock nanoseconds (``time.time_ns``): assembly starts, assembly ends (the model is called), the answer
    is in."""

    started: int
    assembled: int
    answered: int


@dataclass(frozen=True)
class Sent:
    """What the model was sent and answered: the chat span's content when it is captured."""

    messages: Sequence[Mapping[str, Any]]
    """The window as sent (OpenAI chat messages)."""
    modules: Sequence[str]
    """The module that contributed each message (``tda.trace.attribution``)."""
    answer: str = ""
    tool_calls: Sequence[Mapping[str, Any]] = ()


class _LoggedOnce(SpanExporter):
    """The OTLP exporter, its failures logged once until an export succeeds again (a collector that is down would
    otherwise log every batch, with the SDK's own retry warnings)."""

    def __init__(self, exporter: SpanExporter, url: str) -> None:
        self.exporter, self.url = exporter, url
        self.failing = self.closed = False
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.exporter.export(spans)
        except Exception as exc:  # the exporter catches its own errors; anything else still drops only the batch
            log.debug("OTLP export raised: %s", exc)
            result = SpanExportResult.FAILURE
        with self._lock:
            if result is SpanExportResult.FAILURE and not self.failing:
                log.warning(
                    "traces are not reaching the OTLP collector at %s; turns go on, their spans are dropped "
                    "until it answers",
                    self.url,
                )
            elif result is SpanExportResult.SUCCESS and self.failing:
                log.info("traces reach the OTLP collector at %s again", self.url)
            self.failing = result is SpanExportResult.FAILURE
        return result

    def shutdown(self) -> None:
        with self._lock:
            closed, self.closed = self.closed, True
        if not closed:
            self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.exporter.force_flush(timeout_millis)


class TracesOut:
    """A tracer provider of tda's own (the process-wide one is left to the host) exporting to ``endpoint``."""

    def __init__(
        self,
        endpoint: str,
        headers: Mapping[str, str] | None = None,
        *,
        service_name: str = "tda",
        capture_content: bool = False,
    ) -> None:
        url = traces_url(endpoint)
        self.capture_content = capture_content
        # The SDK logs every failed batch and retry; _LoggedOnce says it once instead.
        logging.getLogger("opentelemetry.exporter.otlp").setLevel(logging.CRITICAL)
        self.exporter = _LoggedOnce(
            OTLPSpanExporter(endpoint=url, headers=dict(headers or {}), timeout=EXPORT_TIMEOUT_S), url
        )
        self.provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        self.provider.add_span_processor(BatchSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("tda")

    def turn(
        self,
        snapshot: ContextWindowSnapshot,
        call: Mapping[str, Any],
        times: TurnTimes,
        *,
        snapshot_id: int | None = None,
        finish_reason: str | None = None,
        sent: Sent | None = None,
    ) -> None:
        """Queue the turn's spans (never raises: a span that cannot be made is not worth a turn). ``sent``: the
        window and the answer, put on the chat span only when content is captured."""
        try:
            self._turn(snapshot, call, times, snapshot_id, finish_reason, sent if self.capture_content else None)
        except Exception:
            log.exception("the turn's spans were not made")

    def _turn(
        self,
        snapshot: ContextWindowSnapshot,
        call: Mapping[str, Any],
        times: TurnTimes,
        snapshot_id: int | None,
        finish_reason: str | None,
        sent: Sent | None,
    ) -> None:
        root = self.tracer.start_span(
            "tda.turn", start_time=times.started, attributes=_turn_attributes(snapshot, snapshot_id)
        )
        inside = trace.set_span_in_context(root)
        assembly = self.tracer.start_span(
            "tda.assemble", context=inside, start_time=times.started, attributes=_assembly_attributes(snapshot)
        )
        shares = (call.get("cost") or {}).get("input_by_module_usd", {})
        in_assembly = trace.set_span_in_context(assembly)
        for module in snapshot.modules:
            span = self.tracer.start_span(
                f"tda.module {module.module_id}",
                context=in_assembly,
                start_time=times.started,
                attributes=_module_attributes(module, shares.get(module.module_id)),
            )
            for aux in (c for c in snapshot.auxiliary_calls if c.module_id == module.module_id):
                self._auxiliary_call(aux, trace.set_span_in_context(span), times.started)
            # Modules run side by side: each span lasts as long as the module held the event loop.
            span.end(end_time=times.started + int(module.blocked_ms * 1e6))
        assembly.end(end_time=times.assembled)
        failed = "error" in call
        attributes = _failed_call_attributes(call) if failed else _model_call_attributes(call, finish_reason)
        if sent is not None:
            attributes |= content_attributes(sent, None if failed else finish_reason or "stop")
        model = self.tracer.start_span(
            f"chat {call['model']}",
            context=inside,
            kind=trace.SpanKind.CLIENT,
            start_time=times.assembled,
            attributes=attributes,
        )
        if failed:
            for span in (model, root):
                span.set_status(trace.StatusCode.ERROR, call["error"])
        model.end(end_time=times.answered)
        root.end(end_time=times.answered)

    def _auxiliary_call(self, call: AuxiliaryCall, context: Any, started: int) -> None:
        """A model call a module made while assembling (a summary, a query rewrite), as a GenAI client span under
        the module's (its start is not recorded: it is drawn from the assembly's start, as long as it took)."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider_of(call.model),
            "gen_ai.request.model": call.model,
            "gen_ai.request.max_tokens": call.max_tokens,
            "gen_ai.usage.input_tokens": call.tokens_in,
            "gen_ai.usage.output_tokens": call.tokens_out,
            "tda.auxiliary.purpose": call.purpose,
            "tda.auxiliary.status": call.status,
            "tda.auxiliary.estimated": call.estimated,
        }
        span = self.tracer.start_span(
            f"chat {call.model}", context=context, kind=trace.SpanKind.CLIENT, start_time=started, attributes=attributes
        )
        if call.status != "ok":
            span.set_status(trace.StatusCode.ERROR, call.status)
        span.end(end_time=started + int(call.ms * 1e6))

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Send what is queued now (blocking: call it from a worker thread)."""
        return self.provider.force_flush(int(timeout_s * 1000))

    def shutdown(self) -> None:
        """Send what is queued and stop (blocking: at most about ``EXPORT_TIMEOUT_S``, the SDK's default being 30 s
        and a batch's retries each). A collector known to be down gets no more tries: the queue is dropped."""
        # A stopped exporter gives up its retries and fails what is left at once (the SDK waits up to 30 s).
        give_up = threading.Timer(0 if self.exporter.failing else EXPORT_TIMEOUT_S, self.exporter.shutdown)
        give_up.start()
        try:
            self.provider.shutdown()
        finally:
            give_up.cancel()


def _turn_attributes(snapshot: ContextWindowSnapshot, snapshot_id: int | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {"tda.turn": snapshot.turn, "tda.window_type_id": snapshot.window_type_id}
    if snapshot.session_id:  # a chat call without a session has none
        attributes["gen_ai.conversation.id"] = snapshot.session_id
        attributes["session.id"] = snapshot.session_id  # what Langfuse and Phoenix group traces into sessions by
        attributes["tda.session_id"] = snapshot.session_id
    if snapshot.profile_id:
        attributes["tda.profile_id"] = snapshot.profile_id
    if snapshot_id is not None:
        attributes["tda.snapshot_id"] = snapshot_id
    return attributes


def _assembly_attributes(snapshot: ContextWindowSnapshot) -> dict[str, Any]:
    return {
        "tda.window_type_id": snapshot.window_type_id,
        "tda.context.effective_limit": snapshot.effective_limit,
        "tda.context.available_budget": snapshot.available_budget,
        "tda.context.total_used": snapshot.total_used,
        "tda.context.query_tokens": snapshot.query_tokens,
        "tda.context.utilisation": snapshot.utilisation,
        "tda.context.prefix_stable_tokens": snapshot.prefix_stable_tokens,
        "tda.context.token_method": snapshot.token_method,
        "tda.context.condensations": len(snapshot.condensations),
    }


def _module_attributes(module: ModuleUsage, input_usd: float | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "tda.module.id": module.module_id,
        "tda.module.status": module.status,
        "tda.module.allocated_tokens": module.allocated,
        "tda.module.used_tokens": module.used,
        "tda.module.strategy": module.strategy,
        "tda.module.condensed": module.condensed,
        "tda.module.blocked_ms": module.blocked_ms,
    }
    if module.reason:
        attributes["tda.module.reason"] = module.reason
    if input_usd is not None:
        attributes["tda.module.input_cost_usd"] = input_usd
    return attributes


def _failed_call_attributes(call: Mapping[str, Any]) -> dict[str, Any]:
    """A model call that failed: what was asked of whom, and why it failed (no usage: none was reported)."""
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider_of(call["model"]),
        "gen_ai.request.model": call["model"],
        "error.type": "model_call_failed",
    }


def _model_call_attributes(call: Mapping[str, Any], finish_reason: str | None) -> dict[str, Any]:
    model = call["model"]
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider_of(model),
        "gen_ai.request.model": model,
        "gen_ai.usage.input_tokens": call["prompt_tokens"],
        "gen_ai.usage.output_tokens": call["completion_tokens"],
        "gen_ai.usage.cache_read.input_tokens": call["cache_read_tokens"],
        "gen_ai.usage.cache_creation.input_tokens": call["cache_write_tokens"],
    }
    if finish_reason:
        attributes["gen_ai.response.finish_reasons"] = (finish_reason,)
    cost = call.get("cost")
    if cost is None:
        attributes["tda.cost.price_unknown"] = True  # never a $0 that reads as free
    else:
        attributes["gen_ai.usage.cost"] = cost["total_usd"]  # Langfuse's name for a generation's dollars
        attributes["tda.cost.input_usd"] = cost["input_usd"]
        attributes["tda.cost.output_usd"] = cost["output_usd"]
        attributes["tda.cost.total_usd"] = cost["total_usd"]
    return attributes


def content_attributes(sent: Sent, finish_reason: str | None) -> dict[str, str]:
    """The GenAI conventions' content attributes (JSON text): the window's leading system messages as the system
    instructions, the rest as the input messages, the answer as the output (none when ``finish_reason`` is None: the
    call failed). Every part names its module (``tda.module_id``); every text is redacted as logs are."""
    pairs = list(zip(sent.messages, sent.modules, strict=True))
    lead = next((i for i, (m, _) in enumerate(pairs) if m.get("role") != "system"), len(pairs))
    instructions = [{**part, "tda.module_id": module} for m, module in pairs[:lead] for part in _parts(m)]
    inputs = [{"role": m["role"], "parts": _parts(m), "tda.module_id": module} for m, module in pairs[lead:]]
    attributes = {"gen_ai.system_instructions": _json(instructions), "gen_ai.input.messages": _json(inputs)}
    if finish_reason is not None:
        reply = {"role": "assistant", "content": sent.answer, "tool_calls": list(sent.tool_calls)}
        output = [{"role": "assistant", "parts": _parts(reply), "finish_reason": finish_reason}]
        attributes["gen_ai.output.messages"] = _json(output)
    return attributes


def _parts(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A chat message's content as the conventions' parts: text, tool calls, a tool's response; other content
    (images, files, audio) by its type alone, not its bytes."""
    content = message.get("content")
    if message.get("role") == "tool":
        return [{"type": "tool_call_response", "id": message.get("tool_call_id"), "response": content}]
    parts: list[dict[str, Any]] = []
    if isinstance(content, str):
        parts += [{"type": "text", "content": content}] if content else []
    else:
        for part in content or ():
            text = part.get("text")
            parts.append({"type": "text", "content": text} if isinstance(text, str) else {"type": part.get("type")})
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append(
            {"type": "tool_call", "id": call.get("id"), "name": function.get("name"), "arguments": _arguments(function)}
        )
    return parts


def _arguments(function: Mapping[str, Any]) -> Any:
    arguments = function.get("arguments")
    try:
        return json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return arguments  # as the model wrote them


def _json(value: Any) -> str:
    return json.dumps(_redacted(value), ensure_ascii=False, default=str)


def _redacted(value: Any) -> Any:
    """Every text in ``value`` as a log line shows it (redact.py: keys, tokens and URL credentials hidden)."""
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, Mapping):
        return {k: _redacted(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(v) for v in value]
    return value


# litellm's provider names where the GenAI conventions name the same provider otherwise (their well-known values)
SEMCONV_PROVIDERS = {
    "gemini": "gcp.gemini",
    "vertex_ai": "gcp.vertex_ai",
    "vertex_ai_beta": "gcp.vertex_ai",
    "bedrock": "aws.bedrock",
    "bedrock_converse": "aws.bedrock",
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "watsonx": "ibm.watsonx.ai",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "cohere_chat": "cohere",
}


@cache
def provider_of(model: str) -> str:
    """The provider litellm routes ``model`` to, as the GenAI conventions name it (``gen_ai.provider.name``:
    ``openai``, ``anthropic``, ``gcp.gemini``, ...); litellm's own name for one they do not list."""
    from .llm import _litellm

    light = model_map.info(model)  # OpenAI's models, without importing litellm
    if model.startswith("openai/") or (light and light.get("litellm_provider")):
        return SEMCONV_PROVIDERS.get("openai", "openai")
    litellm = _litellm()
    try:
        provider = str(litellm.get_llm_provider(model)[1])
    except Exception:  # a name litellm cannot route by itself: its cost map may still know whose it is
        listed = litellm.model_cost.get(model, {}).get("litellm_provider")
        provider = listed or (model.partition("/")[0] if "/" in model else "unknown")
    return SEMCONV_PROVIDERS.get(provider, provider)
