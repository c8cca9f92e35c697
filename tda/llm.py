"""The litellm boundary: model calls and summaries. litellm is imported lazily (it takes seconds)."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from components.context_window import model_map
from components.context_window.metering import Summary, prompt_of
from components.context_window.session_cache import BoundedCache
from components.context_window.token_estimator import TokenEstimator, estimator_for

from . import mock_upstream, openai_call
from .config import api_key_in_env, offline_library_defaults
from .errors import ServiceError, UpstreamFailed, UpstreamNotAllowed
from .memory import drop_litellm_tokenizer_copy
from .redact import redact_secrets
from .upstream_policy import UpstreamPolicy, UpstreamRefused

if TYPE_CHECKING:
    from components.context_window.snapshot import ContextWindowSnapshot

    from .config import Settings

MOCK_ANSWER = "This is a mock answer (TDA_MOCK_MODEL is on, so no provider was called)."


@cache
def _litellm() -> Any:
    """litellm, set up once for every call tda makes: offline (config.offline_library_defaults), quiet."""
    offline_library_defaults()
    import litellm
    import litellm.utils

    drop_litellm_tokenizer_copy(litellm.utils)
    litellm.suppress_debug_info = True
    litellm.telemetry = False
    _send_messages_as_built()
    return litellm


def _send_messages_as_built() -> None:
    """Before an OpenAI-format request goes out, the OpenAI SDK (which litellm calls) walks every message against
    its typed-dict annotations (``async_maybe_transform``): ~0.15 ms of CPU a message, the largest part of a
    call's cost once a window is full. For a chat message the walk changes nothing (no message type has an alias
    or a format: tests/test_llm_transform.py holds the SDK's own walk to that), so messages that are plain dicts,
    as ``AssembledContext.messages`` are, go as they are, and the rest of the request is walked as before.

    Set once the SDK's chat resources are loaded (a service that calls providers loads them at start-up; one that
    answers with the mock model never does), and looked for again before each provider call until then."""
    completions = sys.modules.get("openai.resources.chat.completions.completions")
    if completions is None:  # not loaded (yet): nothing walks messages
        return
    walk = getattr(completions, "async_maybe_transform", None)
    if walk is None:  # another SDK layout: it walks the messages as it always did
        return
    if getattr(walk, "messages_as_built", False):
        return

    async def transform(data: Any, expected_type: Any) -> Any:
        messages = data.get("messages") if isinstance(data, dict) else None
        if type(messages) is not list or not all(type(m) is dict for m in messages):
            return await walk(data, expected_type)
        body = await walk({**data, "messages": []}, expected_type)
        body["messages"] = messages  # in its place: the walk keeps the keys' order
        return body

    transform.messages_as_built = True  # type: ignore[attr-defined]
    setattr(completions, "async_maybe_transform", transform)  # noqa: B010  # a module found in sys.modules


async def _litellm_loaded() -> Any:
    """litellm, imported in a worker thread the first time: the import takes seconds and must not stall the
    event loop (every open stream and request would wait) when a turn arrives before ``preload`` ran."""
    if _litellm.cache_info().currsize == 0:
        return await asyncio.to_thread(_litellm)
    return _litellm()


def _warm_up(calls_providers: bool = False, litellm_needed: bool = True) -> None:
    if calls_providers:  # the OpenAI SDK's client imports all its ~450 resource modules on first use, on the
        import openai.resources.chat  # noqa: F401  # event loop: the first real call took 2.1 s, 0.07 s after this

        _send_messages_as_built()
    if not litellm_needed:
        return
    litellm = _litellm()
    tool = {"type": "function", "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}}}
    litellm.completion(
        model="gpt-4o",
        messages=[{"role": "user", "content": "hi"}],
        mock_response="ok",
        tools=[tool],
        _skip_mcp_handler=True,
    )
    _new_router(litellm, "gpt-4o", Upstream(), None)  # the first Router imports its parts: ~25 ms
    _unsent(litellm, "gpt-4o", None, {"temperature": 0.0, "drop_params": True})  # a request built: ~1 s of imports


async def preload(calls_providers: bool = False, litellm_needed: bool = True) -> None:
    """Import litellm and make one mock call in a worker thread at start-up; when the service calls providers (no
    mock model) or the mock answers through the SDK (``mock_upstream``), import the SDK's resources too (~10 MB).
    Done lazily by the first turn, it would block the event loop for seconds (import) and ~0.5 s (first call),
    stalling every SSE stream. ``litellm_needed`` False: the default model is called without litellm
    (``openai_call``, or the mock's ``mock_upstream``), which then loads only when a call needs it."""
    await asyncio.to_thread(_warm_up, calls_providers, litellm_needed)


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


def _read_by_callbacks() -> bool:
    """Whether a litellm callback is registered (Langfuse, a ``CustomLogger``: litellm is imported then): the mock's
    calls go through litellm, so the callback sees them."""
    litellm = sys.modules.get("litellm")
    return litellm is not None and any(getattr(litellm, name, None) for name in _CALLBACK_LISTS)


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


async def routing_error(model: str, base_url: str | None = None) -> str | None:
    """Why litellm cannot route ``model`` to a provider, or None when it can (a client error, not a 502). At an
    upstream with a base URL every name routes: unknown names are called there as OpenAI-compatible models."""
    if base_url or model.startswith("openai/") or model_map.info(model):  # OpenAI's models: known without litellm
        return None
    litellm = await _litellm_loaded()
    try:
        litellm.get_llm_provider(model=model)
    except Exception as exc:  # litellm raises its own BadRequestError with a long explanation
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    return None


OPENAI_BODIES = frozenset({"openai", "azure", "openai_like", "custom_openai"})
"""Providers whose API takes OpenAI's request body as it is (``metadata`` included)."""


async def provider_of(model: str) -> str | None:
    """The provider litellm calls ``model`` at (``openai``, ``anthropic``, ...), or None when it knows none."""
    if model.startswith("openai/"):
        return "openai"
    light = model_map.info(model)  # OpenAI's models and unknown names, without importing litellm
    if light is not None:
        return light.get("litellm_provider")
    litellm = await _litellm_loaded()
    try:
        return str(litellm.get_llm_provider(model=model)[1])
    except Exception:  # litellm raises its own BadRequestError for names it cannot route
        return None


EXPLICIT_CACHING = frozenset({"anthropic"})
"""Providers that cache a prompt prefix only where the request marks it with ``cache_control`` (OpenAI and Gemini
cache a long enough prefix on their own: there a byte-stable prefix is all it takes)."""
CLAUDE_HOSTS = frozenset({"bedrock", "vertex_ai", "openrouter"})
"""Providers that serve Claude among other models: there too Claude caches only what is marked."""
THINKING_BACK = frozenset({"anthropic", "bedrock", "vertex_ai"})
"""Providers whose Claude takes its own thinking blocks back (litellm translates them for each)."""


def serves_claude(provider: str | None, routed: str, among: frozenset[str] = CLAUDE_HOSTS) -> bool:
    """Whether ``routed`` (litellm's name) is Claude: at Anthropic's API, or a Claude model at a host in ``among``."""
    return provider in EXPLICIT_CACHING or (provider in among and "claude" in routed.lower())


CACHE_CONTROL = {"type": "ephemeral"}


def with_cache_breakpoints(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]], stable: int, ttl: str | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Copies of ``messages`` and ``tools`` with ``cache_control`` on the last tool, at the end of the leading system
    text and at the end of the window's stable part (its first ``stable`` messages): three of Anthropic's four
    breakpoints, each where the content after it changes more often than before it. ``ttl``: "1h" for Anthropic's
    hour (``tda/cache_ttl.py``), None for its default 5 minutes."""
    mark = {**CACHE_CONTROL, "ttl": ttl} if ttl else CACHE_CONTROL
    marked = list(messages)
    system_end = next((i for i, m in enumerate(messages) if m.get("role") != "system"), len(messages))
    for end in sorted({min(system_end, stable), stable}):
        index = _last_with_text(marked, end)
        if index is not None:
            marked[index] = _cached(marked[index], mark)
    if tools:
        tools = [*tools[:-1], {**tools[-1], "cache_control": mark}]
    return marked, tools


def _last_with_text(messages: list[dict[str, Any]], end: int) -> int | None:
    """The last message before ``end`` with content to mark (a call-only assistant message has none)."""
    for index in range(min(end, len(messages)) - 1, -1, -1):
        if messages[index].get("content"):
            return index
    return None


def _cached(message: dict[str, Any], mark: dict[str, Any]) -> dict[str, Any]:
    content = message["content"]
    if isinstance(content, str):
        return {**message, "content": [{"type": "text", "text": content, "cache_control": mark}]}
    return {**message, "content": [*content[:-1], {**content[-1], "cache_control": mark}]}


def client_marked(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> bool:
    """Whether the client placed cache marks of its own (Anthropic's clients do): then tda adds none, since a
    request may carry only four and the client's say where its prompt changes."""
    parts = (p for m in messages if isinstance(m.get("content"), list) for p in m["content"])
    return any("cache_control" in p for p in parts) or any("cache_control" in t for t in tools)


CLAUDE_THINKING = frozenset({"thinking", "redacted_thinking"})


def without_claude_thinking(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` without the thinking blocks an Anthropic client sends back in its assistant messages: they are
    signed by the Claude model that wrote them, and no other model's API takes them."""
    out = []
    for m in messages:
        content = m.get("content")
        if m.get("role") == "assistant" and isinstance(content, list) and any(_thinking(p) for p in content):
            m = {**m, "content": [p for p in content if not _thinking(p)] or ""}
        out.append(m)
    return out


def without_empty_call_text(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with a call-only assistant message's empty text as no text (``content: None``). Claude's API
    refuses an empty text block, so litellm writes "[System: Empty message content sanitised to satisfy
    protocol]" into it: text the model never said, shown as a system notice, in every call a client sent with
    ``content: null`` (tda's window renders that as "")."""
    out = []
    for m in messages:
        content = m.get("content")
        if m.get("role") == "assistant" and m.get("tool_calls") and isinstance(content, str) and not content.strip():
            m = {**m, "content": None}
        out.append(m)
    return out


def _thinking(part: Any) -> bool:
    return isinstance(part, Mapping) and part.get("type") in CLAUDE_THINKING


async def prompt_tokens(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """The prompt's tokens as litellm counts them for ``model`` (0 when it cannot)."""
    litellm = await _litellm_loaded()
    try:
        return int(litellm.token_counter(model=model, messages=messages, tools=tools or None))
    except Exception:  # litellm raises its own errors for content it cannot read
        return 0


NO_KEY = "no-key"
"""The key sent to a base URL whose upstream names no key variable: never a provider's own key (litellm would
otherwise send ``OPENAI_API_KEY`` to whatever host the URL names). Local servers ignore it."""


@dataclass(frozen=True)
class Upstream:
    """Where a model is called: an OpenAI-compatible base URL (None: the provider litellm picks from the model's
    name), the name of the environment variable holding its key, how many times a failed call is retried, and
    the models tried in order (at the same upstream) when it still fails."""

    base_url: str | None = None
    api_key_env: str | None = None
    num_retries: int = 0
    fallbacks: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings: Settings) -> Upstream:
        return cls(
            base_url=settings.upstream_base_url,
            api_key_env=settings.upstream_api_key_env,
            num_retries=settings.upstream_retries,
            fallbacks=settings.upstream_fallbacks,
        )

    def only(self) -> Upstream:
        """This upstream for its one model: the caller tries the fallbacks itself, each with its own window."""
        return dataclasses.replace(self, fallbacks=())

    def merged(self, profile: Mapping[str, Any] | None) -> Upstream:
        """A profile's upstream (``ProfileRow.upstream``) over this default: what it sets wins. A profile that
        names its own base URL uses only its own key variable and fallbacks: the default's key is never sent to
        another host, nor its models asked for there."""
        if not profile:
            return self
        own_host = bool(profile.get("base_url"))
        retries = profile.get("num_retries")
        fallbacks = tuple(profile.get("fallbacks") or ())
        return Upstream(
            base_url=profile.get("base_url") or self.base_url,
            api_key_env=profile.get("api_key_env") or (None if own_host else self.api_key_env),
            num_retries=self.num_retries if retries is None else int(retries),
            fallbacks=fallbacks or (() if own_host else self.fallbacks),
        )


async def routes_of(model: str, upstream: Upstream) -> list[tuple[str | None, str]]:
    """(provider, litellm name) of every model a call may reach (fallbacks too: they get the same body)."""
    if (direct := openai_call.route(model, upstream.base_url, upstream.fallbacks)) is not None:
        return [("openai", f"openai/{name}") for name in direct]
    litellm = await _litellm_loaded()
    names = [routed_name(n, upstream.base_url, litellm.provider_list) for n in (model, *upstream.fallbacks)]
    return [(await provider_of(name), name) for name in names]


def routed_name(model: str, base_url: str | None, providers: Any) -> str:
    """The litellm name ``model`` is called by. At a base URL (an OpenAI-compatible API), a name without an
    explicit provider prefix is sent as an OpenAI model (``openai/<name>``): ``llama3`` or ``meta-llama/Llama-3``
    at a vLLM server, and ``claude-...`` at a gateway that speaks OpenAI's format, not Anthropic's. A prefixed
    name (``ollama/llama3``, ``anthropic/claude-...``) keeps its provider."""
    if not base_url or model.split("/", 1)[0] in providers:
        return model
    return f"openai/{model}"


@cache
def output_limit(model: str) -> int | None:
    """The most tokens ``model`` may answer with (litellm's ``max_output_tokens``), or None when unknown."""
    light = model_map.info(model)  # OpenAI's models and unknown names, without importing litellm
    if light is not None:
        return int(light["max_output_tokens"]) if light.get("max_output_tokens") else None
    try:
        limit = _litellm().get_model_info(model).get("max_output_tokens")
    except Exception:  # litellm raises for models it has no entry for
        return None
    return int(limit) if limit else None


def max_tokens_for(model: str, requested: int | None, window: ContextWindowSnapshot) -> int | None:
    """The ``max_tokens`` a call to ``model`` is sent for the ``window`` assembled for it. The client's own cap
    (``requested``), lowered to the model's output limit and to the room the window leaves, when they are known.
    None when the client sent none, unless the model's output limit is known and more than the window leaves:
    then that room, so the answer fits the model's context. A model tda does not know gets none it was not sent
    (a local server's own default stands)."""
    room = room_left(window)
    limit = output_limit(model)
    if requested is None:
        return room if limit is not None and room is not None and limit > room else None
    return min(n for n in (requested, limit, room) if n is not None)


def room_left(window: ContextWindowSnapshot) -> int | None:
    """The tokens the window leaves for the answer within the model's context, or None when that context is a
    guess (an unknown model's default, with no profile or session limit)."""
    known = window.model_limit_source != "default" or window.profile_override or window.session_override
    return max(1, window.effective_limit - window.total_used) if known else None


def capped_max_tokens(requested: int | None, models: tuple[str, ...]) -> int | None:
    """``requested`` (the type's output reserve, or the client's cap) lowered to the smallest known output limit
    of the models the call may reach (the model, then its fallbacks: they are sent the same ``max_tokens``)."""
    if not requested:
        return requested
    limits = [n for n in map(output_limit, models) if n]
    return min(requested, *limits) if limits else requested


OPENAI_EXTRA_BODY = ("metadata", "prompt_cache_retention")
"""Client parameters sent in the body itself to an API that takes OpenAI's: litellm keeps ``metadata`` for its own
callbacks (no other provider is sent it), and litellm 1.106.2 leaves ``prompt_cache_retention`` out of OpenAI's
chat-completions request."""


def param_kwargs(params: Mapping[str, Any], openai_body: bool) -> dict[str, Any]:
    """litellm's keyword arguments for a client's own request parameters (``drop_params``: litellm leaves out those
    the provider does not take); ``openai_body``: the provider's API takes OpenAI's request body as it is."""
    in_body = OPENAI_EXTRA_BODY if openai_body else ("metadata",)
    kwargs: dict[str, Any] = {k: v for k, v in params.items() if k not in in_body}
    kwargs["drop_params"] = True
    extra = {k: params[k] for k in in_body if k in params}
    if extra and openai_body:
        kwargs["extra_body"] = extra
    if "user" in params and openai_body:  # litellm passes ``user`` only for models in OpenAI's own catalog
        kwargs["allowed_openai_params"] = ["user"]
    return kwargs


NOT_PROBED = frozenset({"vertex_ai", "vertex_ai_beta"})
"""Providers whose request litellm builds only after fetching Google credentials: not built to find what it leaves
out (it would log a failure, or wait on the network)."""
UNSENT_PROBE_S = 5.0
"""How long building litellm's request for a model may take before tda goes on without knowing what it leaves out
(a provider's first build imports its code: about a second)."""
_UNSENT: BoundedCache[tuple[str, str | None, tuple[str, ...]], tuple[str, ...]] = BoundedCache(256)


async def unsent_params(model: str, params: Mapping[str, Any], upstream: Upstream) -> tuple[str, str, tuple[str, ...]]:
    """(provider, litellm name, the client's parameters no field of that name carries in the request litellm builds
    for ``model`` at ``upstream``): left out as unsupported, or translated into another field. Found by building
    that request without sending it (litellm's ``return_raw_request``), once per model, upstream and set of
    parameter names, in a worker thread (it takes milliseconds; a provider's first, a second). A call tda makes
    without litellm (``openai_call``) sends every parameter it takes as given."""
    names = openai_call.route(model, upstream.base_url, upstream.fallbacks)
    if names is not None and openai_call.passes_params(names, params):
        return "openai", f"openai/{names[0]}", ()
    if not params and not upstream.base_url and model_map.info(model) is not None:  # nothing to probe; the name
        return await provider_of(model) or "unknown", model, ()  # and provider known without litellm (mock turns)
    litellm = await _litellm_loaded()
    routed = routed_name(model, upstream.base_url, litellm.provider_list)
    provider = await provider_of(routed) or "unknown"
    if not params or provider in NOT_PROBED:
        return provider, routed, ()
    key = (routed, upstream.base_url, tuple(sorted(params)))
    unsent = _UNSENT.get(key)
    if unsent is None:
        kwargs = param_kwargs(params, provider in OPENAI_BODIES)
        try:  # a provider whose request needs credentials fetched (a cloud's) must not hold the call up
            found = await asyncio.wait_for(
                asyncio.to_thread(_unsent, litellm, routed, upstream.base_url, kwargs), UNSENT_PROBE_S
            )
        except TimeoutError:
            found = ()
        dropped = {"metadata"} & set(params) if provider not in OPENAI_BODIES else set()  # tda's own
        unsent = _UNSENT.put(key, tuple(sorted({*found, *dropped})))
    return provider, routed, unsent


def _unsent(litellm: Any, routed: str, base_url: str | None, kwargs: dict[str, Any]) -> tuple[str, ...]:
    from litellm.types.utils import CallTypes
    from litellm.utils import return_raw_request

    request = {"model": routed, "messages": [{"role": "user", "content": "hi"}], **kwargs}
    if base_url:
        request["api_base"] = base_url
    body = return_raw_request(CallTypes.completion, request).get("raw_request_body")
    if not isinstance(body, dict):
        return ()  # litellm could not build it: nothing to say
    sent = set(body) | set(body.get("extra_body") or {})
    given = (set(kwargs) | set(kwargs.get("extra_body") or {})) - {"drop_params", "allowed_openai_params", "extra_body"}
    return tuple(sorted(given - sent))


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
    cache_read_tokens: int = 0
    """Prompt tokens the provider read from its prompt cache (OpenAI's ``cached_tokens``, Anthropic's
    ``cache_read_input_tokens``)."""
    cache_write_tokens: int = 0
    """Prompt tokens the provider wrote to its cache (Anthropic's ``cache_creation_input_tokens``)."""
    thinking: tuple[dict[str, Any], ...] = ()
    """The reply's thinking blocks as a Claude model sent them (``thinking`` with its ``signature``,
    ``redacted_thinking``): an Anthropic client sends them back with the next step of a tool loop."""
    context_management: dict[str, Any] | None = None
    """Anthropic's report of the ``context_management`` edits it applied (``applied_edits``), as litellm passes it."""


def cache_usage(usage: Any) -> tuple[int, int]:
    """(read, written) prompt-cache tokens from a litellm usage: Anthropic's own fields first, else OpenAI's
    ``prompt_tokens_details.cached_tokens`` (litellm copies Anthropic's reads there too)."""
    if usage is None:
        return 0, 0
    read = getattr(usage, "cache_read_input_tokens", None)
    if not read:
        details = getattr(usage, "prompt_tokens_details", None)
        read = getattr(details, "cached_tokens", None) if details is not None else None
    written = getattr(usage, "cache_creation_input_tokens", None)
    return int(read or 0), int(written or 0)


@dataclass(frozen=True)
class Choice:
    text: str
    tool_calls: list[dict[str, Any]]
    finish_reason: str
    logprobs: Any = None
    thinking: tuple[dict[str, Any], ...] = ()


Delta = Callable[[dict[str, Any]], Awaitable[None]]
"""Receives each streamed delta as OpenAI sends it: ``{"content": ...}`` or ``{"tool_calls": [...]}``."""


@dataclass
class Relay:
    """Passes a streamed reply's deltas on to ``to``, noting whether one went out (then no other model may take
    over the reply)."""

    to: Delta | None
    started: bool = False

    async def delta(self, delta: dict[str, Any]) -> None:
        self.started = True
        if self.to is not None:
            await self.to(delta)


ROUTERS_KEPT = 64
"""litellm Routers kept (one per model, upstream and key), least recently used dropped first."""


class LLM:
    """Calls the configured model through a litellm Router (retries, fallbacks) or, at an OpenAI-compatible
    upstream, the OpenAI SDK itself (``openai_call``). In demo/offline mode the mock model answers: a text through
    the SDK at an in-process upstream (``mock_upstream``), anything else (a scripted reply with tool calls) with
    litellm's ``mock_response`` through the same Router, so the mock measures the same paths."""

    def __init__(
        self,
        *,
        mock: bool,
        mock_answer: str = MOCK_ANSWER,
        timeout_s: float = 120.0,
        upstream: Upstream | None = None,
        policy: UpstreamPolicy | None = None,
    ) -> None:
        self.mock = mock
        self.mock_answer = mock_answer
        self.timeout_s = timeout_s
        self.upstream = upstream or Upstream()
        """The default upstream (``TDA_UPSTREAM_*``); a profile's own settings are merged over it per call."""
        self.policy = policy or UpstreamPolicy()
        """What a profile's upstream may name (tda/upstream_policy.py); the default upstream is the operator's."""
        self._routers: BoundedCache[tuple[str, Upstream, str | None], Any] = BoundedCache(ROUTERS_KEPT)
        self._sdk_clients: dict[tuple[str, str], Any] = {}
        """The OpenAI SDK's clients calls without litellm go through, one per base URL and key (each holds its
        connections): closed by ``aclose``."""

    async def aclose(self) -> None:
        """Close the connections of the calls made without litellm (litellm keeps its own)."""
        clients, self._sdk_clients = list(self._sdk_clients.values()), {}
        for sdk in clients:
            await sdk.close()

    def needs_litellm(self, model: str) -> bool:
        """Whether calls to ``model`` at the default upstream go through litellm (the mock model's only when its
        answer is not one ``mock_upstream`` serves)."""
        if self.mock:
            return not mock_upstream.serves(self.mock_answer, model, self.upstream.base_url)
        return openai_call.route(model, self.upstream.base_url, self.upstream.fallbacks) is None

    def mock_reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        """What the mock model answers (asked once a call): a text, or litellm's ``mock_response`` (a ModelResponse
        for tool calls, an exception to raise)."""
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
        upstream: Upstream | None = None,
        cache_prefix: int | None = None,
        anthropic_beta: str | None = None,
        cache_ttl: str | None = None,
    ) -> Completion:
        """One model call at ``upstream`` (default: this LLM's). ``max_tokens`` caps the reply (the window type's
        output reserve), lowered to the model's output limit; with ``on_delta`` the reply is streamed, each delta
        handed over as it arrives, and the whole returned at the end. ``params`` are the client's own request
        parameters (temperature, response_format, n, ...), passed on as sent; litellm drops those a provider does
        not support (``drop_params``). ``cache_prefix``: how many leading messages are the window's stable part, marked
        for a provider that caches only what is marked (``with_cache_breakpoints``). ``anthropic_beta``: an Anthropic
        client's beta features, sent only when every model the call may reach is at Anthropic's API. ``cache_ttl``:
        the marks' TTL ("1h"; None: 5 minutes)."""
        upstream = upstream or self.upstream
        await self.check_upstream(upstream)
        reply = self.mock_reply(messages, tools) if self.mock else None
        if self.mock and mock_upstream.serves(reply, model, upstream.base_url) and not _read_by_callbacks():
            mocked = {"messages": messages, "extra_body": {"mock_response": reply}}
            if params and params.get("n"):
                mocked["n"] = params["n"]
            return await self._sent_directly(
                (mock_upstream.sent_name(model, upstream.base_url),), mocked, None, on_delta
            )
        names = None if self.mock else openai_call.route(model, upstream.base_url, upstream.fallbacks)
        if names is not None:
            capped = capped_max_tokens(max_tokens, (model, *upstream.fallbacks)) if max_tokens else None
            plain = without_claude_thinking(messages)
            body = openai_call.body(names, plain, tools, tool_choice, params or {}, capped, on_delta is not None)
            if body is not None:
                return await self._sent_directly(names, body, upstream, on_delta)
        litellm = await _litellm_loaded()
        routes = await routes_of(model, upstream)
        if not all(serves_claude(p, r, THINKING_BACK) for p, r in routes):
            messages = without_claude_thinking(messages)
        claude = all(serves_claude(p, r) for p, r in routes)
        if any(serves_claude(p, r) for p, r in routes):
            messages = without_empty_call_text(messages)
        if cache_prefix is not None and claude and not client_marked(messages, tools):
            messages, tools = with_cache_breakpoints(messages, tools, cache_prefix, cache_ttl)
        kwargs: dict[str, Any] = {"model": model, "messages": messages, "timeout": self.timeout_s}
        if anthropic_beta and all(p in EXPLICIT_CACHING for p, _ in routes):  # a client's extra_headers never pass
            kwargs["extra_headers"] = {"anthropic-beta": anthropic_beta}
        if params:
            routed = routed_name(model, upstream.base_url, litellm.provider_list)
            kwargs.update(param_kwargs(params, await provider_of(routed) in OPENAI_BODIES))
        if tools:
            # Our tools are plain functions, never litellm-proxy MCP servers; skipping that check also avoids
            # importing the optional `mcp` package, whose absence otherwise fails every call with tools.
            kwargs.update(tools=tools, _skip_mcp_handler=True)
            if tool_choice is not None:
                kwargs["tool_choice"] = tool_choice
        if max_tokens:
            kwargs["max_tokens"] = capped_max_tokens(max_tokens, (model, *upstream.fallbacks))
        if self.mock:
            kwargs["mock_response"] = reply
        else:
            _send_messages_as_built()
        router = self._router(litellm, model, upstream)
        if on_delta is not None:
            return await self._streamed(litellm, router, kwargs, on_delta)
        with _logged_only_if_read(litellm):
            response = await router.acompletion(**kwargs)
        return self._completion(response)

    async def _sent_directly(
        self, names: tuple[str, ...], body: dict[str, Any], upstream: Upstream | None, on_delta: Delta | None
    ) -> Completion:
        """The call made with the OpenAI SDK itself (``openai_call``): the request litellm would send, unchanged.
        ``upstream`` None: the mock model's in-process upstream (``mock_upstream``), which never fails."""
        _send_messages_as_built()
        relay = None if on_delta is None else (lambda chunk: _relayed(chunk, on_delta))
        response = await openai_call.call(
            self._sdk_client(upstream),
            names,
            body,
            num_retries=upstream.num_retries if upstream else 0,
            timeout_s=self.timeout_s,
            on_chunk=relay,
        )
        return self._completion(response)

    def ready_client(self) -> None:
        """Make the SDK client of the default upstream now (start-up, a worker thread), where the first call made it
        on the event loop: httpx's connection stack imported (httpcore; anyio's asyncio backend, loaded by the first
        request sent) and its TLS context loaded, ~50 ms of that call's CPU (the proxy's are loaded at its start)."""
        if self.mock:
            self._sdk_client(None)  # in process: no connection stack
        elif self.upstream.base_url:
            self._sdk_client(self.upstream)
            import anyio._backends._asyncio  # noqa: F401
        asyncio.run(self._answered_once())  # its own loop, in this thread: the service's has not started serving

    async def _answered_once(self) -> None:
        """One call through the SDK to an upstream in process (a client of its own, closed after): the SDK builds
        its response models' validators on the first reply it reads, ~6 ms of the first call's CPU otherwise."""
        sdk = mock_upstream.client()
        try:
            body = {"messages": [{"role": "user", "content": "hi"}], "extra_body": {"mock_response": "ok"}}
            reply = await openai_call.call(sdk, ("gpt-4o",), body, num_retries=0, timeout_s=10.0, on_chunk=None)
            self._completion(reply)
        finally:
            await sdk.close()

    def _sdk_client(self, upstream: Upstream | None) -> Any:
        """The SDK client for ``upstream`` (None: the mock's), made once per base URL and key."""
        if upstream is None:
            at = (mock_upstream.BASE_URL, "")
            return self._sdk_clients.get(at) or self._sdk_clients.setdefault(at, mock_upstream.client())
        assert upstream.base_url  # a route needs one
        key = api_key_in_env(upstream.api_key_env) if upstream.api_key_env else None
        at = (upstream.base_url, key or NO_KEY)
        return self._sdk_clients.get(at) or self._sdk_clients.setdefault(at, openai_call.client(*at))

    def check_profile_upstream(self, profile: Mapping[str, Any]) -> None:
        """A profile's upstream as written (``ProfileRow.upstream``): UpstreamRefused names the field at fault."""
        if (name := profile.get("api_key_env")) and name != self.upstream.api_key_env:
            self.policy.check_key_env(name)
        if (url := profile.get("base_url")) and url != self.upstream.base_url:
            self.policy.check_base_url(url)

    async def check_upstream(self, upstream: Upstream) -> None:
        """Before anything is sent: what differs from the operator's default upstream is allowed by the policy,
        the base URL's resolved addresses included."""
        self.check_profile_upstream({"api_key_env": upstream.api_key_env, "base_url": upstream.base_url})
        if upstream.base_url and upstream.base_url != self.upstream.base_url:
            await self.policy.check_resolved(upstream.base_url)

    def _router(self, litellm: Any, model: str, upstream: Upstream) -> Any:
        """The Router for ``model`` at ``upstream``, built once: building one takes milliseconds. The key is read
        from its variable on every call; a changed key gets a new Router."""
        key = api_key_in_env(upstream.api_key_env) if upstream.api_key_env else None
        cache_key = (model, upstream, key)
        router = self._routers.get(cache_key)
        if router is None:
            router = self._routers.put(cache_key, _new_router(litellm, model, upstream, key))
        else:
            self._routers.touch(cache_key)
        return router

    async def _streamed(self, litellm: Any, router: Any, kwargs: dict[str, Any], on_delta: Delta) -> Completion:
        # litellm's stream wrapper schedules its success logging whatever the context says: streamed replies keep it
        stream = await router.acompletion(**kwargs, stream=True, stream_options={"include_usage": True})
        chunks = []
        async for chunk in stream:
            chunks.append(chunk)
            await _relayed(chunk, on_delta)
        return self._completion(litellm.stream_chunk_builder(chunks, messages=kwargs["messages"]))

    def _completion(self, response: Any) -> Completion:
        first, *more = (_choice(c) for c in response.choices)
        usage = getattr(response, "usage", None)
        read, written = (0, 0) if self.mock else cache_usage(usage)
        return Completion(
            text=first.text,
            # A mock's usage is made up: 0 lets the caller report the snapshot's exact count instead.
            tokens_in=0 if self.mock else int(getattr(usage, "prompt_tokens", 0) or 0),
            tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
            tool_calls=first.tool_calls,
            finish_reason=first.finish_reason,
            more=tuple(more),
            logprobs=first.logprobs,
            cache_read_tokens=read,
            cache_write_tokens=written,
            thinking=first.thinking,
            context_management=_context_management(response),
        )


async def _relayed(chunk: Any, on_delta: Delta) -> None:
    """A streamed chunk's deltas handed on as OpenAI sends them."""
    for choice in chunk.choices or ():
        delta = choice.delta
        if delta.content:
            await on_delta({"content": delta.content})
        if delta.tool_calls:
            await on_delta({"tool_calls": [_delta_call(c) for c in delta.tool_calls]})
        if blocks := getattr(delta, "thinking_blocks", None):  # a Claude model's, as litellm passes them
            await on_delta({"thinking_blocks": [_plain(b) for b in blocks]})


REASON_CHARS = 200
"""How much of a provider's own error message a caller is shown."""


def model_call_error(exc: BaseException, kept: str = "", **details: Any) -> ServiceError:
    """What the caller is told of a failed model call (``kept``: what was kept of the turn, as a sentence tail)."""
    if isinstance(exc, UpstreamRefused):
        return UpstreamNotAllowed(
            f"the profile's upstream is not allowed (upstream.{exc.field}): {exc}; an admin must change it",
            **details,
        )
    return UpstreamFailed(f"the model call failed ({failure_reason(exc)}){kept}", **details)


def failure_reason(exc: BaseException) -> str:
    """Why a model call failed, as a caller may see it: the upstream's status, the kind of failure and, when the
    upstream answered with an OpenAI- or Anthropic-shaped error, its message, short and with secrets redacted.
    Never the raw body: an upstream that is not a model API (an internal service a URL pointed at) must not
    have its answer relayed."""
    status = getattr(exc, "status_code", None)
    kind = getattr(exc, "kind", None) or type(exc).__name__  # openai_call.UpstreamError: the name litellm gives
    reason = f"{kind}, status {status}" if status else kind
    body = getattr(exc, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    if isinstance(message, str) and message.strip():
        reason += f": {redact_secrets(' '.join(message.split()))[:REASON_CHARS]}"  # cut after: no key half shown
    return reason


def _choice(choice: Any) -> Choice:
    message = choice.message
    calls = [_call(c) for c in (message.tool_calls or [])]
    logprobs = getattr(choice, "logprobs", None)
    return Choice(
        text=message.content or "",
        tool_calls=calls,
        finish_reason="tool_calls" if calls else (choice.finish_reason or "stop"),
        logprobs=logprobs.model_dump() if logprobs is not None and hasattr(logprobs, "model_dump") else logprobs,
        thinking=tuple(_plain(b) for b in getattr(message, "thinking_blocks", None) or ()),
    )


def _context_management(response: Any) -> dict[str, Any] | None:
    """Anthropic's ``context_management`` report on a reply, where litellm keeps it (the message's provider fields)."""
    message = response.choices[0].message if response.choices else None
    found = (getattr(message, "provider_specific_fields", None) or {}).get("context_management")
    return _plain(found) if found is not None else None


def _plain(block: Any) -> dict[str, Any]:
    """A litellm object (or dict) as a plain dict."""
    return block.model_dump() if hasattr(block, "model_dump") else dict(block)


def _new_router(litellm: Any, model: str, upstream: Upstream, key: str | None) -> Any:
    """A Router with one deployment per model (the model, then its fallbacks), all at ``upstream``."""
    names = tuple(dict.fromkeys((model, *upstream.fallbacks)))
    at: dict[str, str] = {}
    if upstream.base_url:
        at = {"api_base": upstream.base_url, "api_key": key or NO_KEY}
    elif key:
        at = {"api_key": key}
    deployments = [
        {
            "model_name": name,
            "litellm_params": {"model": routed_name(name, upstream.base_url, litellm.provider_list), **at},
        }
        for name in names
    ]
    router = _router_class()(
        model_list=deployments,
        num_retries=upstream.num_retries,
        fallbacks=[{model: list(names[1:])}] if len(names) > 1 else [],
    )
    _unhook(litellm, router)
    return router


@cache
def _router_class() -> Any:
    class Router(_litellm().Router):  # type: ignore[misc]  # litellm is imported lazily: its Router is Any here
        async def increment_deployment_usage_for_response(self, response: object, request_kwargs: Any) -> None:
            """Skipped: it counts usage against tpm/rpm limits, which tda never sets, after deep-copying the
            model's whole info to find that out (~0.2 ms of CPU a call)."""

    return Router


def _unhook(litellm: Any, router: Any) -> None:
    """Take the Router's own callbacks out of litellm's global lists. They track usage and cool deployments down
    for load balancing, which one deployment per model never needs; left in, every call would run litellm's
    logging again (``_logged_only_if_read`` sees a callback) and each cached Router would add to every call."""
    for name in _CALLBACK_LISTS:
        callbacks = getattr(litellm, name, None)
        if isinstance(callbacks, list):
            callbacks[:] = [c for c in callbacks if getattr(c, "__self__", None) is not router]


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
    bounded by ``max_tokens``; the provider's counts come back with it for the snapshot and the turn's usage.

    ``at`` binds it to a window's own model, upstream and limit: a team's conversation is summarised by the model
    its profile names, at its profile's upstream, never sent through another provider; and a text longer than
    that model's window leaves is cut to its newest part (the call would be refused, or cut by the provider)."""

    def __init__(self, llm: LLM, model: str, upstream: Upstream | None = None, window: int | None = None) -> None:
        self.llm = llm
        self.model = model
        self.upstream = upstream
        """None: the LLM's default upstream."""
        self.window = window
        """The model's input limit as the window has it (None: unbounded but for the provider's own)."""

    def at(self, model: str, profile_upstream: Mapping[str, Any] | None, window: int) -> LLMSummarizer:
        """This summarizer for a window of ``model`` at the profile's upstream (merged over the default), within
        ``window`` tokens."""
        return LLMSummarizer(self.llm, model, self.llm.upstream.merged(profile_upstream), window)

    async def summarize(self, text: str, *, max_tokens: int, instruction: str = "") -> str:
        return (await self.summarize_with_usage(text, max_tokens=max_tokens, instruction=instruction)).text

    async def summarize_with_usage(self, text: str, *, max_tokens: int, instruction: str = "") -> Summary:
        max_tokens = max(1, max_tokens)
        if self.window is not None:
            max_tokens = min(max_tokens, max(1, self.window // 4))  # a reply never takes most of the window
            text = newest_within(text, instruction, self.window - max_tokens, estimator_for(self.model))
        message = {"role": "user", "content": prompt_of(text, instruction)}
        done = await self.llm.complete(self.model, [message], [], max_tokens=max_tokens, upstream=self.upstream)
        return Summary(done.text, done.tokens_in, done.tokens_out, self.model)


CUT_MARK = "[... earlier text cut to fit the model's window]\n"


def newest_within(text: str, instruction: str, limit: int, tokens: TokenEstimator) -> str:
    """``text``, or its newest part behind ``CUT_MARK``, such that the prompt made of it is at most ``limit``
    tokens as one message: the largest suffix that starts a line and fits, or, when not even the last line fits,
    the largest suffix of that line that does.

    Counted near the cut only: the lines are priced one by one from the end (each line's count is cached where the
    whole prompt's count finds it), and exact counts of the whole prompt check the few starts around the estimate.
    Counting the whole text at every step of a bisection tokenised a long transcript some twenty times per summary.
    A prompt of fewer bytes than ``limit`` fits uncounted (every token is at least a byte)."""

    def size(body: str) -> int:
        return tokens.count_text_message(prompt_of(body, instruction), "user")

    most = tokens.at_most(prompt_of(text, instruction))
    if most is not None and tokens.count_text_message("", "user") + most <= limit:
        return text  # fits whatever its count (a summary's transcript is mostly far within its model's window)

    starts = [0, *(m.end() for m in re.finditer("\n", text) if m.end() < len(text))]
    lines = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]

    def fits(i: int) -> bool:  # the text from line ``i`` on fits (behind the mark unless it is the whole text)
        return size(text if i == 0 else CUT_MARK + text[starts[i] :]) <= limit

    # Price lines from the end: the estimate of where the cut goes, and whether the whole text may fit (a line's
    # own count can exceed its share of the joined text's by a few tokens where tokens merge across lines).
    mark, priced, guess, total = size(CUT_MARK), len(lines), len(lines), 0
    while priced > 0 and total <= limit + 4 * len(lines):
        total += tokens.count_line(lines[priced - 1])
        priced -= 1
        if total <= limit - mark:
            guess = priced
    if priced == 0 and total <= limit + 4 * len(lines) and fits(0):
        return text
    first = _first_fitting(fits, max(guess, 1), len(lines), lo=1)
    if first < len(lines):
        return CUT_MARK + text[starts[first] :]
    last = starts[-1] if lines else 0  # not even the last line fits: the largest suffix of it that does
    lo, hi = last, len(text)
    while lo < hi:
        mid = (lo + hi) // 2
        if size(CUT_MARK + text[mid:]) <= limit:
            hi = mid
        else:
            lo = mid + 1
    return CUT_MARK + text[lo:]


def _first_fitting(fits: Callable[[int], bool], guess: int, n: int, lo: int = 0) -> int:
    """The smallest ``i`` in ``[lo, n)`` with ``fits(i)`` (which holds from some point on), or ``n``: a bisection
    that tries ``guess`` and its neighbours first (an estimate from the lines' own counts is rarely further off)."""
    hi, probes = n, [guess, guess - 1, guess + 1]
    while lo < hi:
        probe = next((p for p in probes if lo <= p < hi), None)
        mid = probe if probe is not None else (lo + hi) // 2
        if probe is not None:
            probes.remove(probe)
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo
