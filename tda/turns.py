"""One turn of the native API: load from storage, assemble, store and publish the snapshot, call the model, record
the turn. (A chat client's call goes through ``gateway.py``, which shares the steps below that fit it.)

A turn whose reply calls tools stays open (outcome ``tool_calls``): the results come back as ``tool``
messages (stored in order with their call ids, and parsed into the turn's ``results``), and the model is
called again for the same turn with its tool loop so far (``AssemblyContext.continuation``), until it
answers without calling a tool.

Beside it, by concern: ``tool_results.py`` (a tool loop's results and plan), ``champions.py`` (finished turns kept
as champion cases, and their feedback), ``phase_change.py`` (a move to a later phase) and ``preview.py`` (the
what-if preview, which assembles the same way but persists nothing)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from components.context_window.base import AssemblyContext, Message, ToolSchema
from components.context_window.token_estimator import estimator_for

from . import metrics
from .champions import keep_as_champion
from .cost import model_call
from .errors import Conflict, Invalid, UpstreamFailed, UpstreamNotAllowed
from .events import stream_key
from .llm import Relay, max_tokens_for, model_call_error
from .models import MessageRow, TurnRow
from .recall.messages import index_after
from .recall.turns import index_turn_after
from .sources import build_context, input_hashes, message_of
from .store.types import StoredType
from .tool_results import as_result, plan_of, tool_text

if TYPE_CHECKING:
    from components.context_window.handler import AssembledContext

    from .llm import Completion, Delta, Upstream
    from .models import ProfileRow
    from .service import TDAService
    from .store.sessions import TurnTuple

log = logging.getLogger(__name__)
MAX_TURN = 2**31 - 1
"""Turn numbers are 32-bit SQL integers (``MAX_INT`` in tda/api/schemas.py)."""


async def resolve_type(svc: TDAService, profile: ProfileRow) -> StoredType:
    """The profile's bound type (the version its label is on, when it binds by label), or the default when it binds
    none."""
    if profile.context_window_type_id and profile.context_window_type_label:
        return await svc.store.types.labelled(profile.context_window_type_id, profile.context_window_type_label)
    if profile.context_window_type_id:
        return await svc.store.types.get(profile.context_window_type_id)
    return await svc.store.types.default()


@dataclass(frozen=True)
class TurnOptions:
    """What a client may set per call (the OpenAI endpoint passes its request's fields through)."""

    tools: tuple[ToolSchema, ...] | None = None
    """The client's tools; None: the profile's."""
    tool_choice: Any = None
    model: str | None = None
    """A litellm model name; None: the profile's model, else the service's."""
    max_tokens: int | None = None
    """Caps the reply (lowered to the model's output limit and the room the window leaves: ``max_tokens_for``)."""
    on_delta: Delta | None = None
    """Stream the reply: called with each delta as the model sends it."""
    timings: dict[str, float] | None = None
    """Receives the milliseconds each step of the turn took, by name (``STEPS``), for Server-Timing."""
    cache_ttl: str | None = None
    """The TTL of Claude's cache marks, chosen from the session's gaps (``tda/cache_ttl.py``)."""


STEPS = ("load", "assemble", "snapshot", "model", "record")
"""A turn's steps, in order: read the session, assemble the window, store and publish its snapshot, call the
model, record the turn."""


class Timed(Protocol):
    """A turn's options or a client's call: where the step times go (None: nobody asked for them)."""

    @property
    def timings(self) -> dict[str, float] | None: ...


@contextlib.contextmanager
def timed(options: Timed, step: str) -> Iterator[None]:
    """Adds the time the block took to ``options.timings[step]`` (ms), when the caller asked for timings."""
    started = time.perf_counter()
    try:
        yield
    finally:
        if options.timings is not None:
            options.timings[step] = options.timings.get(step, 0.0) + (time.perf_counter() - started) * 1000


@dataclass(frozen=True)
class OpenTurn:
    """The newest turn while its tool loop runs: the calls of its last assistant message and the answered ids."""

    row: TurnRow
    messages: list[MessageRow]
    calls: dict[str, str]
    """Tool call id -> tool name."""
    answered: set[str]

    @property
    def unanswered(self) -> list[str]:
        return [i for i in self.calls if i not in self.answered]


async def open_turn(svc: TDAService, session_id: str) -> OpenTurn | None:
    """The newest turn if it ended in tool calls (its results may have come in since), else None."""
    row = await svc.store.sessions.newest_turn(session_id)
    if row is None or row.outcome != "tool_calls":
        return None
    messages = await svc.store.sessions.turn_messages(session_id, row.turn)
    last_call = max((i for i, m in enumerate(messages) if m.role == "assistant" and m.tool_calls), default=None)
    if last_call is None:
        return None
    calls = {str(c.get("id")): str((c.get("function") or {}).get("name", "")) for c in messages[last_call].tool_calls}
    answered = {m.tool_call_id for m in messages[last_call + 1 :] if m.role == "tool" and m.tool_call_id}
    return OpenTurn(row, messages, calls, answered)


async def run_turn(
    svc: TDAService,
    session_id: str,
    query: str,
    timings: dict[str, float] | None = None,
    options: TurnOptions | None = None,
) -> dict[str, Any]:
    """A new turn: assemble for ``query``, call the model, record the turn (its tool loop starts if it calls tools).
    ``timings`` (optional) receives the milliseconds each of its ``STEPS`` took, for Server-Timing."""
    options = dataclasses.replace(options or TurnOptions(), timings=timings)
    with metrics.TURN_SECONDS.time():
        async with svc.session_lock(session_id):  # one turn at a time per session: turn numbers stay dense
            return await _step(svc, session_id, query, None, options)


async def answer_tool_calls(
    svc: TDAService,
    session_id: str,
    turn: int,
    results: Sequence[Mapping[str, Any]],
    options: TurnOptions | None = None,
) -> dict[str, Any]:
    """The results of the open turn's tool calls (``{tool_call_id, content}`` each): stored, then the model
    continues the turn with them."""
    async with svc.session_lock(session_id):
        current = await open_turn(svc, session_id)
        if current is None or current.row.turn != turn:
            waiting = f"turn {current.row.turn} is" if current else "no turn is"
            raise Conflict(f"turn {turn} of session {session_id!r} is not waiting for tool results; {waiting}")
        await record_tool_results(svc, session_id, current, results)
        return await _continue(svc, session_id, options or TurnOptions())


async def record_tool_results(
    svc: TDAService, session_id: str, current: OpenTurn, results: Sequence[Mapping[str, Any]]
) -> None:
    """Store tool messages answering ``current``'s calls, in order, and their parsed results as turn results.
    Every pending call must be answered (providers reject a call without its result): 422 says which are missing."""
    ids = [str(r.get("tool_call_id") or "") for r in results]
    unknown = [i for i in ids if i not in current.calls or i in current.answered]
    missing = [i for i in current.unanswered if i not in ids]
    if unknown or missing or len(set(ids)) != len(ids):
        raise Invalid(
            f"turn {current.row.turn} waits for results of tool calls {current.unanswered}; "
            "send exactly one result per call id",
            errors=[
                *({"loc": "tool_call_id", "msg": f"{i!r} is not a pending call", "type": "unknown"} for i in unknown),
                *({"loc": "tool_call_id", "msg": f"no result for {i!r}", "type": "missing"} for i in missing),
            ],
        )
    tokens = estimator_for(current.row.model or svc.settings.model)
    messages, parsed = [], []
    for r in results:
        call_id, content = str(r["tool_call_id"]), tool_text(r.get("content"))
        message = Message("tool", content, turn=current.row.turn, tool_call_id=call_id)
        messages.append(
            {"role": "tool", "content": content, "tool_call_id": call_id, "tokens": tokens.count_message(message)}
        )
        parsed.append(as_result(current.calls[call_id], content))
    await svc.store.sessions.extend_turn(session_id, current.row.turn, {"results": parsed}, messages)


async def _continue(svc: TDAService, session_id: str, options: TurnOptions) -> dict[str, Any]:
    current = await open_turn(svc, session_id)
    if current is None or current.unanswered or not current.answered:
        raise Conflict(f"session {session_id!r} has no turn whose tool calls are all answered")
    return await _step(svc, session_id, current.row.query, current, options)


async def _step(
    svc: TDAService, session_id: str, query: str, current: OpenTurn | None, options: TurnOptions
) -> dict[str, Any]:
    """Assemble, snapshot, publish, call the model, record: a new turn (``current`` None) or the next step of one."""
    with timed(options, "load"):
        # A continuation reads the history before its own turn: the turn so far follows the query instead.
        data = await svc.store.sessions.load(session_id, before_turn=current.row.turn if current else None)
        stored = await resolve_type(svc, data.profile)
        history = await svc.history.source(data)
        ctx = build_context(data, query, default_model=svc.settings.model, sources=svc.sources, history=history)
        if current is None and ctx.session.turn_number > MAX_TURN:  # an imported history took the last numbers
            raise Conflict(
                f"session {session_id!r} has used every turn number (its history reaches turn {MAX_TURN:,}, the "
                "largest a turn can have); start a new session, or import the history with smaller turn numbers"
            )
        ctx = await with_component_instructions(svc, _with_options(ctx, current, options))
    turn = current.row.turn if current else ctx.session.turn_number
    upstream = svc.llm.upstream.merged(data.profile.upstream)
    models = tuple(dict.fromkeys((ctx.model, *upstream.fallbacks)))
    relay = Relay(options.on_delta)
    ttl = svc.cache_ttl.ttl(session_id)
    options = dataclasses.replace(options, on_delta=relay.delta if options.on_delta else None, cache_ttl=ttl)
    for n, model in enumerate(models):  # each fallback model is sent a window assembled for its own limits
        try:
            attempt = await _attempt(
                svc, dataclasses.replace(ctx, model=model), stored, options, (session_id, turn), upstream.only()
            )
            break
        except UpstreamFailed:
            if n == len(models) - 1 or relay.started:  # a reply already under way is not replaced by another
                raise
    ctx, assembled, snapshot, snapshot_id, done = (
        attempt.ctx,
        attempt.assembled,
        attempt.snapshot,
        attempt.snapshot_id,
        attempt.done,
    )
    assembled_at, model_at = attempt.times
    call = model_call(ctx.model, assembled.snapshot, done)
    metrics.observe_model_call(call)
    export_turn(svc, assembled, call, (assembled_at, model_at), snapshot_id, done)
    svc.observe_prompt_count(session_id, ctx.model, assembled, done.tokens_in)
    # The turn's usage: the answer's call plus every model call the modules made while assembling (snapshot).
    extra_in, extra_out = assembled.snapshot.auxiliary_tokens
    tokens_in, tokens_out = (done.tokens_in or assembled.snapshot.total_used) + extra_in, done.tokens_out + extra_out
    reply = {
        "role": "assistant",
        "content": done.text,
        "tool_calls": done.tool_calls,
        "tokens": done.tokens_out,
        "phase": ctx.session.phase,
    }
    step = {
        "answer": done.text,
        "plan": plan_of(done),
        "outcome": "tool_calls" if done.tool_calls else "success",
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "model": ctx.model,
        "snapshot_id": snapshot_id,
    }
    turn_row: TurnRow | TurnTuple
    with timed(options, "record"):
        # The call's cost first: whoever sees the turn recorded (the panel polls for it) finds it priced.
        await svc.store.sessions.record_model_call(snapshot_id, snapshot, call, options.timings)
        if current is None:
            user = {
                "role": "user",
                "content": query,
                "tokens": assembled.snapshot.query_tokens,
                "phase": ctx.session.phase,
            }
            turn_row, rows = await svc.store.sessions.record_turn(
                session_id, {"turn": turn, "query": query, "phase": ctx.session.phase, **step}, [user, reply]
            )
            svc.history.recorded(data, rows)
        else:
            turn_row = await svc.store.sessions.extend_turn(session_id, turn, step, [reply])
    case_id = None
    if not done.tool_calls:  # a finished turn (its whole tool loop is the plan) may be served as an example
        case_id = await keep_as_champion(svc, data, turn, query, done.text, turn_row)
    # Last, so that it does not run in the turn's own waits (~2 ms a turn on the loop); a tool loop's step too, or
    # the next turn would index its tool results inside its window's assembly, holding the event loop.
    index_turn_after(svc, data.session, turn_row)  # described and embedded for later turns' recall
    index_after(svc, session_id)
    return {
        "session_id": session_id,
        "turn": turn,
        "answer": done.text,
        "tool_calls": done.tool_calls,
        "finish_reason": done.finish_reason,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "snapshot_id": snapshot_id,
        "champion_case_id": case_id,
        "model": ctx.model,
        "summary": assembled.snapshot.summary(),
        "snapshot": snapshot,
        "model_call": call,
    }


def _with_options(ctx: AssemblyContext, current: OpenTurn | None, options: TurnOptions) -> AssemblyContext:
    changes: dict[str, Any] = {}
    if current is not None:  # the turn so far, after its query: the assistant's calls and the results
        start = next((i for i, m in enumerate(current.messages) if m.role == "user"), -1) + 1
        changes["continuation"] = tuple(message_of(m) for m in current.messages[start:] if m.valid)
    if options.tools is not None:
        changes["tools"] = options.tools
    if options.model:
        changes["model"] = options.model
    return dataclasses.replace(ctx, **changes) if changes else ctx


async def with_component_instructions(svc: TDAService, ctx: AssemblyContext) -> AssemblyContext:
    """The instruction texts of the profile's components (one read), for component_instructions."""
    texts = await svc.store.components.texts_for(ctx.profile.components)
    return dataclasses.replace(ctx, extras={**ctx.extras, "component_instructions": texts}) if texts else ctx


def _inputs(ctx: AssemblyContext, options: TurnOptions, assembled_at: float) -> dict[str, Any]:
    """What replay needs to assemble this window again."""
    inputs: dict[str, Any] = {
        "query": ctx.query,
        "assembled_at": assembled_at,
        "model": ctx.model,
        "hashes": input_hashes(ctx),
        "profile_context_limit": ctx.profile.context_limit,
        "session_context_limit": ctx.session.context_limit,
        "phase": ctx.session.phase,
    }
    if ctx.continuation:
        inputs["continuation"] = [m.to_chat() for m in ctx.continuation]
    if options.tools is not None:
        inputs["tools"] = [t.to_openai() for t in options.tools]
    return inputs


def export_turn(
    svc: TDAService,
    assembled: AssembledContext,
    call: dict[str, Any],
    started: tuple[float, int],
    snapshot_id: int | None,
    done: Completion | None,
) -> None:
    """The turn's spans to the OTLP collector when one is set (``TDA_OTLP_ENDPOINT``; tda/traces_out.py).
    ``call``: ``model_call``, or ``{model, error}`` for a call that failed (``done`` None). ``started``: when
    assembly began (``time.time()``) and when the model was called (``time.time_ns()``). The window and the answer
    go on the spans only with ``TDA_OTLP_CAPTURE_CONTENT``."""
    if svc.traces_out is None:
        return
    from .traces_out import Sent, TurnTimes  # loaded with the exporter already

    times = TurnTimes(int(started[0] * 1e9), started[1], time.time_ns())
    sent = None
    if svc.traces_out.capture_content:
        from .attribution import attribution

        modules = [who["module_id"] for who in attribution(assembled, call["model"])]
        answer, tool_calls = (done.text, done.tool_calls) if done is not None else ("", [])
        sent = Sent(assembled.messages, modules, answer, tool_calls)
    finish_reason = done.finish_reason if done is not None else None
    svc.traces_out.turn(
        assembled.snapshot, call, times, snapshot_id=snapshot_id, finish_reason=finish_reason, sent=sent
    )


async def record_snapshot(svc: TDAService, row: dict[str, Any]) -> int:
    """Stores the window's snapshot, then streams it to the session's subscribers (its id is the event id)."""
    snapshot_id, project = await svc.store.sessions.record_snapshot(row)
    svc.bus.publish_snapshot(snapshot_id, stream_key(project, row["session_id"]), row["data"])
    return snapshot_id


@dataclass(frozen=True)
class Attempt:
    """One model's answer to the window assembled for it (a turn tries its model, then each fallback)."""

    ctx: AssemblyContext
    assembled: AssembledContext
    snapshot: dict[str, Any]
    snapshot_id: int
    done: Completion
    times: tuple[float, int]
    """When the window was assembled (s) and the model called (ns): the exported span's."""


async def _attempt(
    svc: TDAService,
    ctx: AssemblyContext,
    stored: StoredType,
    options: TurnOptions,
    where: tuple[str, int],
    upstream: Upstream,
) -> Attempt:
    """The window assembled for ``ctx.model``, its snapshot recorded, and the model's answer at ``upstream``.
    UpstreamFailed when the call fails (the failure exported, the snapshot kept)."""
    session_id, turn = where
    with timed(options, "assemble"):
        assembled_at = time.time()  # replay serves the champion cases recorded by then
        assembled = await svc.handler.assemble(ctx, stored.type)
    model_at = time.time_ns()
    with timed(options, "snapshot"):
        metrics.observe_assembly(assembled.snapshot)
        snapshot = assembled.snapshot.to_dict()
        row = {
            "session_id": session_id,
            "turn": turn,
            "type_id": stored.id,
            "type_version": stored.version,
            "model": ctx.model,
            "data": snapshot,
            "inputs": _inputs(ctx, options, assembled_at),
        }
        # Written while the model answers (the model does not need it, the turn's record does): its write and
        # its SSE frames take no time of their own from the response.
        recorded = asyncio.create_task(record_snapshot(svc, row))
    with timed(options, "model"):
        try:
            done = await _call_model(svc, ctx, assembled, options, recorded, upstream)
        except (UpstreamFailed, UpstreamNotAllowed) as failed:
            failure = {"model": ctx.model, "error": str(failed)}
            export_turn(svc, assembled, failure, (assembled_at, model_at), failed.details.get("snapshot_id"), None)
            raise
        finally:  # also when the turn is cancelled: the snapshot of a window that was sent is kept
            snapshot_id = await recorded
    return Attempt(ctx, assembled, snapshot, snapshot_id, done, (assembled_at, model_at))


async def _call_model(
    svc: TDAService,
    ctx: AssemblyContext,
    assembled: AssembledContext,
    options: TurnOptions,
    recorded: asyncio.Future[int],
    upstream: Upstream,
) -> Completion:
    """The model call at ``upstream``; ``max_tokens`` as ``max_tokens_for`` decides: the caller's cap, else none
    unless the window needs one."""
    max_tokens = max_tokens_for(ctx.model, options.max_tokens, assembled.snapshot)
    sent = {t["function"]["name"] for t in assembled.tools}
    tool_choice = options.tool_choice
    if isinstance(tool_choice, Mapping) and (tool_choice.get("function") or {}).get("name") not in sent:
        tool_choice = None  # the named tool got no schema this turn; a provider would reject the call
    try:
        return await svc.llm.complete(
            ctx.model,
            assembled.messages,
            assembled.tools,
            max_tokens=max_tokens,
            tool_choice=tool_choice if assembled.tools else None,
            on_delta=options.on_delta,
            upstream=upstream,
            cache_prefix=assembled.stable_messages,
            cache_ttl=options.cache_ttl,
        )
    except Exception as exc:  # provider errors are many and untyped; the caller needs the reason
        snapshot_id = await recorded
        raise model_call_error(exc, f"; snapshot {snapshot_id} was kept", snapshot_id=snapshot_id) from None
