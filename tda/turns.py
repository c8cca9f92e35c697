"""One turn of the native API: load from storage, assemble, store and publish the snapshot, call the model, record
the turn. The steps are ``turn_pipeline.run``'s, which a chat client's call (``gateway.py``) runs too; what is the
native API's own is here: the stored history is what is assembled, and the turn is recorded as asked.

A turn whose reply calls tools stays open (outcome ``tool_calls``): the results come back as ``tool``
messages (stored in order with their call ids, and parsed into the turn's ``results``), and the model is
called again for the same turn with its tool loop so far (``AssemblyContext.continuation``), until it
answers without calling a tool.

Beside it, by concern: ``tool_results.py`` (a tool loop's results and plan), ``champions.py`` (finished turns kept
as champion cases, and their feedback), ``phase_change.py`` (a move to a later phase) and ``preview.py`` (the
what-if preview, which assembles the same way but persists nothing)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components.context_window.base import AssemblyContext, Message, ToolSchema
from components.context_window.token_estimator import estimator_for

from . import metrics
from .champions import keep_as_champion
from .errors import Conflict, Invalid
from .models import TurnRow
from .sources import build_context, input_hashes, message_of
from .tool_results import as_result, tool_text
from .turn_pipeline import MAX_TURN, Answered, Ask, Loaded, resolve_type, run, with_component_instructions

if TYPE_CHECKING:
    from .llm import Delta
    from .service import TDAService
    from .store.sessions import MessageTuple, Priced, TurnTuple


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


@dataclass(frozen=True)
class OpenTurn:
    """The newest turn while its tool loop runs: the calls of its last assistant message and the answered ids."""

    row: TurnRow
    messages: list[MessageTuple]
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
    svc.knowledge.embed_ahead(query)  # while the session is read: its modules' retrieval starts from the vector
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


@dataclass(frozen=True)
class _Native:
    """A turn over the session's stored history: a new one (``current`` None) or the next step of ``current``."""

    session_id: str
    query: str
    current: OpenTurn | None
    options: TurnOptions

    async def load(self, svc: TDAService) -> Loaded:
        # A continuation reads the history before its own turn: the turn so far follows the query instead.
        before = self.current.row.turn if self.current else None
        data = await svc.store.sessions.load(self.session_id, before_turn=before)
        stored = await resolve_type(svc, data.profile)
        history = await svc.history.source(data)
        ctx = build_context(data, self.query, default_model=svc.settings.model, sources=svc.sources, history=history)
        if self.current is None and ctx.session.turn_number > MAX_TURN:  # an imported history took the last numbers
            raise Conflict(
                f"session {self.session_id!r} has used every turn number (its history reaches turn {MAX_TURN:,}, "
                "the largest a turn can have); start a new session, or import the history with smaller turn numbers"
            )
        ctx = await with_component_instructions(svc, _with_options(ctx, self.current, self.options))
        turn = self.current.row.turn if self.current else ctx.session.turn_number
        return Loaded(ctx, stored, data, turn, recall_history=True)

    def inputs(self, ctx: AssemblyContext, assembled_at: float) -> dict[str, Any]:
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
        if self.options.tools is not None:
            inputs["tools"] = [t.to_openai() for t in self.options.tools]
        return inputs

    async def record(self, svc: TDAService, loaded: Loaded, answered: Answered, priced: Priced) -> TurnRow | TurnTuple:
        phase, done = answered.ctx.session.phase, answered.done
        reply = {"role": "assistant", "content": done.text, "tool_calls": done.tool_calls, "tokens": done.tokens_out}
        reply["phase"] = phase
        if self.current is not None:
            return await svc.store.sessions.extend_turn(
                self.session_id, self.current.row.turn, answered.step(), [reply], priced=priced
            )
        tokens = answered.assembled.snapshot.query_tokens
        # The reply's columns (no tool calls: the column's default), so that both rows go in one INSERT.
        user = {"role": "user", "content": self.query, "tool_calls": [], "tokens": tokens, "phase": phase}
        fields = {"turn": loaded.turn, "query": self.query, "phase": phase, **answered.step()}
        row, rows = await svc.store.sessions.record_turn(self.session_id, fields, [user, reply], priced=priced)
        svc.history.recorded(loaded.data, rows)
        return row

    async def keep_case(self, svc: TDAService, loaded: Loaded, answered: Answered, row: Any) -> str | None:
        assert loaded.turn is not None
        return await keep_as_champion(svc, loaded.data, loaded.turn, self.query, answered.done.text, row)


async def _step(
    svc: TDAService, session_id: str, query: str, current: OpenTurn | None, options: TurnOptions
) -> dict[str, Any]:
    """Assemble, snapshot, publish, call the model, record: a new turn (``current`` None) or the next step of one."""
    ask = Ask(options.tool_choice, options.max_tokens, on_delta=options.on_delta, timings=options.timings)
    return (await run(svc, _Native(session_id, query, current, options), ask)).result()


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
