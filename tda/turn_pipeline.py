"""One turn, whichever way it came: the steps the native API (``turns.py``: a turn over the stored history) and a
chat client's call (``gateway.py``: the conversation as the client sent it) share, written once.

``run`` is the turn: load -> assemble -> store and publish the snapshot (while the model answers) -> call the model
(then each fallback model, with a window assembled for its own limits) -> usage, metrics and spans -> record ->
champion case -> index for later turns. A ``Route`` says only what is its own: how the turn is loaded, what its
snapshot keeps for replay, how the session records it, and whether it may serve as a champion case. The wire
formats (chat, Responses, Messages) and streaming stay in the API modules, around the route."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from components.context_window.base import AssemblyContext, Message

from . import metrics
from .cost import model_call
from .errors import UpstreamFailed
from .events import stream_key
from .llm import Relay, max_tokens_for, model_call_error
from .recall.messages import embed_reply_ahead, index_after, joining, vectors_ready
from .recall.turns import index_turn_after
from .store.sessions import Priced
from .store.types import StoredType
from .tool_results import plan_of

if TYPE_CHECKING:
    from components.context_window.handler import AssembledContext

    from .llm import Completion, Delta, Upstream
    from .models import ProfileRow
    from .service import TDAService
    from .store.sessions import SessionData

MAX_TURN = 2**31 - 1
"""Turn numbers are 32-bit SQL integers (``MAX_INT`` in tda/api/schemas.py)."""
STEPS = ("load", "assemble", "snapshot", "model", "record")
"""A turn's steps, in order: read the session, assemble the window, store and publish its snapshot, call the
model, record the turn."""


@dataclass(frozen=True)
class Ask:
    """What a turn asks of its model besides the window: the same of every fallback model."""

    tool_choice: Any = None
    max_tokens: int | None = None
    """Caps the reply (lowered to the model's output limit and the room the window leaves: ``max_tokens_for``)."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """The client's own parameters, sent as set: temperature, top_p, seed, stop, response_format, n, ..."""
    anthropic_beta: str | None = None
    on_delta: Delta | None = None
    """Stream the reply: called with each delta as the model sends it."""
    on_snapshot: Callable[[int], object] | None = None
    """Told the id of the window's snapshot once it is stored, while the model answers."""
    timings: dict[str, float] | None = None
    """Receives the milliseconds each of the turn's ``STEPS`` took, by name (Server-Timing, the trace)."""
    cache_ttl: str | None = None
    """The TTL of Claude's cache marks, chosen from the session's gaps (``tda/cache_ttl.py``)."""
    snapshot_notes: Mapping[str, Any] = field(default_factory=dict)
    """Added to each window's snapshot: a chat client's ``provider_features`` (``tda/context_features.py``)."""
    on_window: Callable[[AssembledContext, str], None] | None = None
    """Run on each window (and its model) once assembled, before it is recorded or sent: raises to refuse it (a client
    that disabled truncation, when the window would cut its conversation); the gateway starts counting its cut here,
    while the model answers."""


@dataclass(frozen=True)
class Loaded:
    """A turn ready to assemble."""

    ctx: AssemblyContext
    window_type: StoredType
    data: SessionData
    """Its session and profile (a stateless call's passing session has the id "")."""
    turn: int | None
    """Where its session records it; None: a stateless call (no snapshot, no record)."""
    recall_history: bool = False
    """The session's recall index follows the turn (its stored history is what later turns recall; a chat client
    sends its own)."""


@dataclass(frozen=True)
class Answered:
    """One model's answer to the window assembled for it, and what it cost."""

    ctx: AssemblyContext
    assembled: AssembledContext
    snapshot: dict[str, Any]
    snapshot_id: int | None
    done: Completion
    call: dict[str, Any]
    """``model_call``: what the call reported and cost."""
    tokens_in: int
    tokens_out: int
    """The turn's usage: the answer's call plus every model call the modules made while assembling."""

    def step(self) -> dict[str, Any]:
        """What the session records of this step of its turn."""
        return {
            "answer": self.done.text,
            "plan": plan_of(self.done),
            "outcome": "tool_calls" if self.done.tool_calls else "success",
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "model": self.ctx.model,
            "snapshot_id": self.snapshot_id,
        }


STEP_FIELDS = ("answer", "plan", "outcome", "tokens_in", "tokens_out", "model", "snapshot_id")
"""``Answered.step``'s keys, in order (the statements a session call runs are compiled for them at start-up)."""
SNAPSHOT_FIELDS = ("session_id", "turn", "type_id", "type_version", "model", "data", "inputs")
"""The fields of the snapshot row a session call stores (``_attempt``), for the same."""


class Route(Protocol):
    """What one way into a turn does its own way."""

    async def load(self, svc: TDAService) -> Loaded: ...

    def inputs(self, ctx: AssemblyContext, assembled_at: float) -> dict[str, Any]:
        """What the snapshot keeps for replay."""
        ...

    async def record(self, svc: TDAService, loaded: Loaded, answered: Answered, priced: Priced) -> Any:
        """The step in the session's record, with its snapshot's model call (``priced``) in the same transaction;
        returns the turn's row as it now is."""
        ...

    async def keep_case(self, svc: TDAService, loaded: Loaded, answered: Answered, row: Any) -> str | None:
        """A finished turn as a champion case (its id), or None."""
        ...


@dataclass(frozen=True)
class Ran:
    """A turn that ran."""

    answered: Answered
    session_id: str | None
    turn: int | None
    case_id: str | None

    def result(self) -> dict[str, Any]:
        """What both routes answer with (a route's wire format adds its own)."""
        a = self.answered
        return {
            "session_id": self.session_id,
            "turn": self.turn,
            "answer": a.done.text,
            "tool_calls": a.done.tool_calls,
            "finish_reason": a.done.finish_reason,
            "tokens_in": a.tokens_in,
            "tokens_out": a.tokens_out,
            "snapshot_id": a.snapshot_id,
            "champion_case_id": self.case_id,
            "model": a.ctx.model,
            "summary": a.assembled.snapshot.summary(),
            "snapshot": a.snapshot,
            "model_call": a.call,
        }


async def run(svc: TDAService, route: Route, ask: Ask) -> Ran:
    """One turn (or one step of a turn's tool loop), the caller holding the session's lock when there is one."""
    with timed(ask, "load"):
        loaded = await route.load(svc)
    answered = await _answer(svc, route, loaded, ask)
    if loaded.turn is None or answered.snapshot_id is None:
        return Ran(answered, None, None, None)
    with timed(ask, "record"):
        # The call's cost in the turn's own transaction: whoever sees the turn recorded (the panel polls for it)
        # finds it priced, and a turn commits once.
        priced = Priced(answered.snapshot_id, answered.snapshot, answered.call, ask.timings)
        row = await route.record(svc, loaded, answered, priced)
    case_id = None
    if not answered.done.tool_calls:  # a finished turn (its whole tool loop is the plan) may be served as an example
        case_id = await route.keep_case(svc, loaded, answered, row)
    # Last, so that it does not run in the turn's own waits (~2 ms a turn on the loop); a tool loop's step too, or
    # the next turn would index its tool results inside its window's assembly, holding the event loop.
    index_turn_after(svc, loaded.data.session, row)  # described and embedded for later turns' recall
    reply = Message("assistant", answered.done.text, tool_calls=tuple(answered.done.tool_calls))
    embed_reply_ahead(answered.ctx, loaded.window_type.type, reply)
    if not answered.done.tool_calls:  # the turn is over: the session's next call is the next turn, over this one
        # Started once the response is on its way (the loop's next round): no part of this turn's answer, ~0.3 ms.
        asyncio.get_running_loop().call_soon(work_ahead, svc, loaded, answered.ctx, reply)
    if loaded.recall_history:  # the session as this turn left it (its messages kept by svc.history): not read again
        index_after(svc, loaded.data.session.id, svc.history.after_recorded(loaded.data))
    return Ran(answered, loaded.data.session.id, loaded.turn, case_id)


async def _answer(svc: TDAService, route: Route, loaded: Loaded, ask: Ask) -> Answered:
    """The turn's model answers its window, or each fallback model a window assembled for it, in order, until one
    does; its usage counted, metered and exported."""
    session_id = loaded.data.session.id
    upstream = svc.llm.upstream.merged(loaded.data.profile.upstream)
    models = tuple(dict.fromkeys((loaded.ctx.model, *upstream.fallbacks)))
    relay = Relay(ask.on_delta)
    ttl = svc.cache_ttl.ttl(session_id) if loaded.turn is not None else None
    ask = dataclasses.replace(ask, on_delta=relay.delta if ask.on_delta else None, cache_ttl=ttl)
    for n, model in enumerate(models):
        try:
            attempt = await _attempt(svc, route, loaded, dataclasses.replace(loaded.ctx, model=model), ask, upstream)
            break
        except UpstreamFailed:
            if n == len(models) - 1 or relay.started:  # a reply already under way is not replaced by another
                raise
    ctx, assembled, snapshot, snapshot_id, done, times = attempt
    call = model_call(ctx.model, assembled.snapshot, done)
    metrics.observe_model_call(call)
    export_turn(svc, assembled, call, times, snapshot_id, done)
    svc.observe_prompt_count(session_id or "calibration", ctx.model, assembled, done.tokens_in)
    extra_in, extra_out = assembled.snapshot.auxiliary_tokens
    tokens_in, tokens_out = (done.tokens_in or assembled.snapshot.total_used) + extra_in, done.tokens_out + extra_out
    return Answered(ctx, assembled, snapshot, snapshot_id, done, call, tokens_in, tokens_out)


_Attempt = tuple["AssemblyContext", "AssembledContext", dict[str, Any], int | None, "Completion", tuple[float, int]]


async def _attempt(
    svc: TDAService, route: Route, loaded: Loaded, ctx: AssemblyContext, ask: Ask, upstream: Upstream
) -> _Attempt:
    """The window assembled for ``ctx.model``, its snapshot recorded (with a session), and the model's answer at
    ``upstream.only()``: the context, window, snapshot, its id, the answer, and when the window was assembled (s)
    and the model called (ns). UpstreamFailed (or UpstreamNotAllowed) when the call fails: the failure exported,
    the snapshot kept."""
    with timed(ask, "assemble"):
        await vectors_ready(svc, ctx, loaded.window_type.type)  # cold = warm: never on background indexing
        assembled_at = time.time()  # replay serves the champion cases recorded by then
        assembled = await svc.handler.assemble(ctx, loaded.window_type.type)
        if ask.on_window is not None:
            ask.on_window(assembled, ctx.model)
    if loaded.turn is not None and ctx.continuation:  # a tool loop's step: the next turn is over this much at least
        work_ahead(svc, loaded, ctx)
    model_at = time.time_ns()
    with timed(ask, "snapshot"):
        metrics.observe_assembly(assembled.snapshot)
        snapshot = {**assembled.snapshot.to_dict(), **ask.snapshot_notes}
        recorded = None
        if loaded.turn is not None:
            row = {
                "session_id": loaded.data.session.id,
                "turn": loaded.turn,
                "type_id": loaded.window_type.id,
                "type_version": loaded.window_type.version,
                "model": ctx.model,
                "data": snapshot,
                "inputs": route.inputs(ctx, assembled_at),
            }
            # Written while the model answers (the model does not need it, the turn's record does): its write and
            # its SSE frames take no time of their own from the response.
            recorded = asyncio.create_task(record_snapshot(svc, row))
            if (told := ask.on_snapshot) is not None:
                recorded.add_done_callback(lambda task: task.cancelled() or task.exception() or told(task.result()))
    with timed(ask, "model"):
        try:
            done = await _call_model(svc, ctx, assembled, ask, upstream.only())
        except Exception as exc:  # provider errors are many and untyped; the caller needs the reason
            snapshot_id = await recorded if recorded else None
            kept = f"; snapshot {snapshot_id} was kept" if snapshot_id is not None else ""
            failed = model_call_error(exc, kept, **({"snapshot_id": snapshot_id} if snapshot_id is not None else {}))
            failure = {"model": ctx.model, "error": str(failed)}
            export_turn(svc, assembled, failure, (assembled_at, model_at), snapshot_id)
            raise failed from None
        finally:  # also when the turn is cancelled: the snapshot of a window that was sent is kept
            snapshot_id = await recorded if recorded else None
    return ctx, assembled, snapshot, snapshot_id, done, (assembled_at, model_at)


def work_ahead(svc: TDAService, loaded: Loaded, ctx: AssemblyContext, reply: Message | None = None) -> None:
    """Start what the session's next turn will need (its window's summaries: ``ContextWindowHandler.ahead``), over
    the history with this turn joined: its query and tool loop, and ``reply`` once the turn is answered. While a
    tool loop's step is answered the reply is not known yet: what the next turn needs with this much joined, it needs
    with more (its window starts no earlier), so that work is not wasted, and the answer's starts the rest."""
    svc.handler.ahead(ctx, loaded.window_type.type, (*joining(ctx), *([reply] if reply else [])))


async def _call_model(
    svc: TDAService, ctx: AssemblyContext, assembled: AssembledContext, ask: Ask, upstream: Upstream
) -> Completion:
    """The model call at ``upstream``; ``max_tokens`` as ``max_tokens_for`` decides: the caller's cap, else none
    unless the window needs one."""
    sent = {t["function"]["name"] for t in assembled.tools}
    tool_choice = ask.tool_choice
    if isinstance(tool_choice, Mapping) and (tool_choice.get("function") or {}).get("name") not in sent:
        tool_choice = None  # the named tool got no schema this turn; a provider would reject the call
    return await svc.llm.complete(
        ctx.model,
        assembled.messages,
        assembled.tools,
        max_tokens=max_tokens_for(ctx.model, ask.max_tokens, assembled.snapshot),
        tool_choice=tool_choice if assembled.tools else None,
        on_delta=ask.on_delta,
        params=ask.params,
        upstream=upstream,
        cache_prefix=assembled.stable_messages,
        anthropic_beta=ask.anthropic_beta,
        cache_ttl=ask.cache_ttl,
    )


class Timed(Protocol):
    """Where a turn's step times go (None: nobody asked for them)."""

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


async def resolve_type(svc: TDAService, profile: ProfileRow) -> StoredType:
    """The profile's bound type (the version its label is on, when it binds by label), or the default when it binds
    none."""
    if profile.context_window_type_id and profile.context_window_type_label:
        return await svc.store.types.labelled(profile.context_window_type_id, profile.context_window_type_label)
    if profile.context_window_type_id:
        return await svc.store.types.get(profile.context_window_type_id)
    return await svc.store.types.default()


async def with_component_instructions(svc: TDAService, ctx: AssemblyContext) -> AssemblyContext:
    """The instruction texts of the profile's components (one read), for component_instructions."""
    texts = await svc.store.components.texts_for(ctx.profile.components)
    return dataclasses.replace(ctx, extras={**ctx.extras, "component_instructions": texts}) if texts else ctx


async def record_snapshot(svc: TDAService, row: dict[str, Any]) -> int:
    """Stores the window's snapshot, then streams it to the session's subscribers (its id is the event id)."""
    snapshot_id, project = await svc.store.sessions.record_snapshot(row)
    svc.bus.publish_snapshot(snapshot_id, stream_key(project, row["session_id"]), row["data"])
    return snapshot_id


def export_turn(
    svc: TDAService,
    assembled: AssembledContext,
    call: dict[str, Any],
    started: tuple[float, int],
    snapshot_id: int | None,
    done: Completion | None = None,
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
