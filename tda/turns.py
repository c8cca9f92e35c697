"""One turn of the native API: load from storage, assemble, store and publish the snapshot, call the model, record
the turn. (A chat client's call goes through ``gateway.py``, which shares the steps below that fit it.)

A turn whose reply calls tools stays open (outcome ``tool_calls``): the results come back as ``tool``
messages (stored in order with their call ids, and parsed into the turn's ``results``), and the model is
called again for the same turn with its tool loop so far (``AssemblyContext.continuation``), until it
answers without calling a tool. And the what-if preview, which assembles the same way but persists nothing."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components.context_window import phases
from components.context_window.base import AssemblyContext, Message, ToolSchema
from components.context_window.distillation import parse_result
from components.context_window.fitting import clip
from components.context_window.token_estimator import estimator_for

from . import metrics
from .errors import Conflict, Invalid, UpstreamFailed
from .models import MessageRow, TurnRow
from .sources import build_context, case_scope, input_hashes, message_of
from .store.types import StoredType

if TYPE_CHECKING:
    from components.context_window.handler import AssembledContext

    from .gateway import ClientCall
    from .llm import Completion, Delta
    from .models import ProfileRow
    from .service import TDAService
    from .store.sessions import SessionData, TurnTuple

log = logging.getLogger(__name__)


async def resolve_type(svc: TDAService, profile: ProfileRow) -> StoredType:
    """The profile's bound type, or the default when it binds none."""
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
    """Caps the reply further; the window type's output reserve is always the upper bound."""
    on_delta: Delta | None = None
    """Stream the reply: called with each delta as the model sends it."""
    timings: dict[str, float] | None = None
    """Receives the milliseconds each step of the turn took, by name (``STEPS``), for Server-Timing."""


STEPS = ("load", "assemble", "snapshot", "model", "record")
"""A turn's steps, in order: read the session, assemble the window, store and publish its snapshot, call the
model, record the turn."""


@contextlib.contextmanager
def timed(options: TurnOptions | ClientCall, step: str) -> Iterator[None]:
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
        ctx = await with_component_instructions(svc, _with_options(ctx, current, options))
    with timed(options, "assemble"):
        assembled_at = time.time()  # replay serves the champion cases recorded by then
        assembled = await svc.handler.assemble(ctx, stored.type)
    with timed(options, "snapshot"):
        metrics.observe_assembly(assembled.snapshot)
        snapshot = assembled.snapshot.to_dict()
        turn = current.row.turn if current else ctx.session.turn_number
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
            done = await _call_model(svc, ctx, assembled, options, recorded, data.profile.upstream)
        finally:  # also when the turn is cancelled: the snapshot of a window that was sent is kept
            snapshot_id = await recorded
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
        case_id = _keep_as_champion(svc, data, turn, query, done.text, turn_row)
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


async def record_snapshot(svc: TDAService, row: dict[str, Any]) -> int:
    """Stores the window's snapshot, then streams it to the session's subscribers (its id is the event id)."""
    snapshot_id = await svc.store.sessions.record_snapshot(row)
    svc.bus.publish_snapshot(snapshot_id, row["session_id"], row["data"])
    return snapshot_id


async def _call_model(
    svc: TDAService,
    ctx: AssemblyContext,
    assembled: AssembledContext,
    options: TurnOptions,
    recorded: asyncio.Future[int],
    upstream: Mapping[str, Any] | None = None,
) -> Completion:
    """The model call at the profile's ``upstream`` (merged over the service's default); ``max_tokens`` is the
    type's output reserve, the client's cap when lower, and the model's output limit when lower (``LLM``)."""
    reserve = assembled.snapshot.output_reserve
    max_tokens = min(n for n in (reserve or None, options.max_tokens) if n) if (reserve or options.max_tokens) else None
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
            upstream=svc.llm.upstream.merged(upstream),
        )
    except Exception as exc:  # provider errors are many and untyped; the caller needs the reason
        snapshot_id = await recorded
        raise UpstreamFailed(
            f"the model call failed ({type(exc).__name__}: {exc}); snapshot {snapshot_id} was kept",
            snapshot_id=snapshot_id,
        ) from None


def tool_text(content: Any) -> str:
    """A tool result's text: strings as sent, OpenAI content parts joined, anything else as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, Mapping) for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    return json.dumps(content, ensure_ascii=False, default=str)


def as_result(tool: str, content: str) -> dict[str, Any]:
    """A tool message as a turn result in a shape plan_hydration distils (a table when the JSON is one)."""
    try:
        data = json.loads(content)
    except ValueError:
        return {"tool": tool, "text": content}
    if isinstance(data, list) and data and all(isinstance(r, Mapping) for r in data):
        data = {"rows": data}
    if isinstance(data, Mapping) and "rows" in data:
        candidate = {**data, "tool": data.get("tool") or tool}
        try:
            parse_result(candidate, 1)
            return candidate
        except ValueError:
            pass
    return {"tool": tool, "text": content}


def plan_of(done: Completion) -> str:
    """The tool calls the model chose, one per line: the plan a later turn can adapt."""
    lines = []
    for call in done.tool_calls:
        function = call.get("function") or {}
        lines.append(f"{function.get('name', '?')}({function.get('arguments') or ''})")
    return "\n".join(lines)


def _keep_as_champion(
    svc: TDAService, data: SessionData, turn: int, query: str, answer: str, row: TurnRow | TurnTuple
) -> str | None:
    """Record the finished turn (its whole tool loop is the plan) as a champion case in its session's scope."""
    return keep_case(svc, data, turn, query, answer, row, from_tools=_may_quote_tools(row, data))


def keep_case(
    svc: TDAService, data: SessionData, turn: int, query: str, answer: str, row: Any, *, from_tools: bool
) -> str | None:
    """Record a finished turn as a champion case in its session's scope, after the response (the session's next
    turn waits for it). The turn is already stored: a failure there costs the case, never the turn."""
    recorder, session_id = svc.sources.case_recorder, data.session.id
    plan, tokens = row.plan, row.tokens_in + row.tokens_out
    if recorder is None or not query.strip() or not (answer.strip() or plan):
        return None
    scope = case_scope(data.session, data.profile)

    async def record() -> None:
        await recorder.record_case(
            query,
            answer,
            scope=scope,
            from_tools=from_tools,
            plan=plan,
            tokens=tokens,
            session_id=session_id,
            turn=turn,
        )

    svc.writer.submit(session_id, record, f"champion case of turn {turn} of session {session_id}")
    return recorder.case_id(query, answer, scope=scope, from_tools=from_tools)


def quotes_tools(messages: Iterable[Message]) -> bool:
    """Whether an answer to this conversation may quote tool data: it holds a tool call or a tool result."""
    return any(m.role == "tool" or m.tool_calls for m in messages)


def _may_quote_tools(row: TurnRow | TurnTuple, before: SessionData) -> bool:
    """The turn's answer may quote tool data, which stays in its session unless shared: its tool loop ran, or that of
    a turn before it its window may show (``before``: the session's newest turns before it; a follow-up such as
    "and the owner again?" answers from the history)."""
    return bool(row.plan or row.results) or any(t.plan or t.results for t in before.turns)


async def set_feedback(svc: TDAService, session_id: str, turn: int, feedback: int) -> dict[str, Any]:
    """Rate a recorded turn's champion case (recording it first if it is missing); negative is never served."""
    await svc.writer.settle(session_id)  # the turn's own recording must not land after (and undo) this rating
    row = await svc.store.sessions.turn(session_id, turn)
    recorder = svc.sources.case_recorder
    if recorder is None:
        raise Conflict("champion cases are not configured on this service; feedback has nowhere to go")
    before = await svc.store.sessions.load(session_id, before_turn=turn)  # what the turn was assembled from
    from_tools = _may_quote_tools(row, before)
    if row.request_key is not None:  # a chat client's turn: its conversation as sent says (unknown: assume so)
        snapshot = await svc.store.sessions.snapshot(row.snapshot_id) if row.snapshot_id else None
        chat = snapshot.inputs.get("gateway", {}).get("chat") if snapshot is not None else None
        from_tools = chat is None or quotes_tools(Message.from_chat(m) for m in chat)
    case_id = await recorder.record_case(
        row.query,
        row.answer,
        scope=case_scope(before.session, before.profile),
        from_tools=from_tools,
        plan=row.plan,
        tokens=row.tokens_in + row.tokens_out,
        feedback=feedback,
        session_id=session_id,
        turn=turn,
    )
    return {"session_id": session_id, "turn": turn, "feedback": feedback, "champion_case_id": case_id}


async def carried_into_phase(
    svc: TDAService, session_id: str, to_phase: str | None, summary: str | None
) -> dict[str, Any] | None:
    """The message a move to a later IFOC phase carries (``phases.transition``), as a row to store, or None.
    Without a ``summary`` from the caller, the old phase's valid turns are summarised one line each."""
    data = await svc.store.sessions.load(session_id)
    from_phase = data.session.phase
    if to_phase is None or from_phase is None or not phases.is_forward(from_phase, to_phase):
        return None
    if summary is None:
        summary = "\n".join(
            f"- Turn {t.turn}: {clip(t.query, 160)} -> {clip(t.answer, 200) or t.outcome}"
            for t in data.turns[-PHASE_SUMMARY_TURNS:]
            if t.valid and t.phase == from_phase
        )
    last_turn = max(data.last_message_turn, data.turns[-1].turn if data.turns else 0)
    message = phases.transition(from_phase, to_phase, summary, turn=last_turn)
    if message is None:
        return None
    return {"role": "system", "content": message.content, "turn": message.turn, "phase": message.phase}


PHASE_SUMMARY_TURNS = 20
"""How many of the old phase's newest turns the default phase summary lists."""
