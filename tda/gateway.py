"""The chat gateway: a client's conversation, as the client sent it, sent on to its model under the profile's budget.

The client's messages are authoritative. Its leading system messages are the instructions (the profile's
``system_prompt_mode`` says how the profile's own prompt joins them), the last user message is the query, what
follows it is the turn's tool loop, and everything before is history the window type may condense. Its tools are
the turn's tools, sent whole; its parameters go to the model as sent. tda's modules add what the type adds
(knowledge, champion cases, documents) under the budget.

Without a session tda keeps nothing: each call stands alone and the client holds its tool loop. With a session
each call is recorded for the trace, the live panel and replay, keyed by digests of the conversation: a call whose
conversation through its user message was seen before is the same turn (a retry, or the next step of its tool
loop); any other call is a new turn that goes on from the newest turn whose conversation it extends — a fork when
that is not the newest turn (an edited or shortened history); the stored session never replaces what was sent.
A call that asks for a new turn (``ClientCall.new_turn``: a recorded request sent again) is never a retry, so the
turn it repeats keeps its record as it was.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import operator
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import accumulate
from typing import TYPE_CHECKING, Any, NamedTuple

from components.context_window.base import AssemblyContext, InMemoryMessages, Message, ToolSchema, thaw
from components.context_window.session_cache import BoundedCache
from components.context_window.token_estimator import TokenEstimator, estimator_for

from .champions import keep_case, quotes_tools
from .client_call import ClientCall, ContextFeatures
from .context_features import refuse_cut
from .errors import Conflict, Invalid, NotFound
from .knowledge.scope import ANONYMOUS
from .models import ProfileRow, SessionRow
from .offload import sized
from .recall.messages import call_done, call_recall, vectors_ready
from .sources import Cutoff, build_context, input_hashes, message_of, summarizer_for
from .store.sessions import CallNames, Priced, SessionData, TurnEnd
from .tool_results import as_result
from .turn_pipeline import (
    MAX_TURN,
    SNAPSHOT_FIELDS,
    STEP_FIELDS,
    Answered,
    Ask,
    Loaded,
    resolve_type,
    run,
    with_component_instructions,
)

if TYPE_CHECKING:
    from components.context_window.handler import AssembledContext

    from .service import TDAService


@dataclass(frozen=True)
class Conversation:
    """A client's messages, split where the window treats them differently."""

    instructions: tuple[Message, ...]
    history: tuple[Message, ...]
    query: Message
    continuation: tuple[Message, ...]
    digests: Digests | None = field(default=None, compare=False)
    """The digests of ``chat`` (``with_digests``)."""

    @property
    def chat(self) -> tuple[Message, ...]:
        """What a session records: everything but the instructions, which belong to the call (an agent's handoff
        changes them, and the Responses API sends them with every call)."""
        return (*self.history, self.query, *self.continuation)


def split(messages: Sequence[Message]) -> Conversation:
    """Instructions (leading system messages), history, the last user message, and the tool loop after it."""
    start = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))
    last_user = next((i for i in range(len(messages) - 1, start - 1, -1) if messages[i].role == "user"), None)
    if last_user is None:
        msg = "messages need a user message: the window is assembled for the newest one"
        raise Invalid(msg, errors=[{"loc": "messages", "msg": msg, "type": "value_error"}])
    return Conversation(
        tuple(messages[:start]), tuple(messages[start:last_user]), messages[last_user], tuple(messages[last_user + 1 :])
    )


async def complete(
    svc: TDAService, call: ClientCall, profile: ProfileRow, session: SessionRow | None
) -> dict[str, Any]:
    """Assemble the client's conversation, call the model, and record the call when there is a session."""
    conversation = split(call.messages)
    tokens = estimator_for(call.model or profile.model or svc.settings.model)  # the window's (``_context``)
    if session is None:
        conversation = await with_digests(conversation, _stateless_key(profile, conversation), tokens)
        return await _run(svc, _Client(call, conversation, profile, None, None))
    async with svc.session_lock(session.id):  # one call at a time per session: turn numbers stay dense
        conversation = await with_digests(conversation, _session_key(session), tokens)
        place = await _place(svc, session.id, conversation, again=not call.new_turn)
        return await _run(svc, _Client(call, conversation, profile, session, place))


async def window(svc: TDAService, call: ClientCall, profile: ProfileRow) -> tuple[AssembledContext, str]:
    """The window a stateless call would send and its model, assembled and nothing else (no model call, no record):
    what a client's count of its prompt tokens asks about."""
    ctx, _ = await _context(svc, call, split(call.messages), profile, None)
    window_type = await resolve_type(svc, profile)
    await vectors_ready(svc, ctx, window_type.type)
    return await svc.handler.assemble(ctx, window_type.type), ctx.model


@dataclass(frozen=True)
class _Place:
    """Where a call goes in its session's record."""

    turn: int
    new: bool
    """A new turn (else the next step, or a retry, of ``turn``)."""
    request_key: str
    """The digest of the conversation through its user message (computed once, recorded with a new turn)."""
    imported: tuple[Message, ...] = ()
    """A new turn's history the session has not recorded since the turn it extends."""
    extends: int | None = None
    """The turn whose conversation this one goes on from (None: from the start)."""
    recorded: tuple[Message, ...] = ()
    """A step's tool-loop messages the session recorded before (what is new comes after them)."""
    fork: bool = False
    attached: bool = True
    """Whether the session has attachments (read with the place: most have none, and their read is left out)."""


async def _place(svc: TDAService, session_id: str, conversation: Conversation, *, again: bool = True) -> _Place:
    """Where the call goes; ``again`` False: a new turn even when the session saw this conversation before."""
    digests = _digests_of(conversation)
    request_key = digests.through(len(conversation.history) + 1)
    same, newest, attached = await svc.store.sessions.call_state(session_id, request_key if again else None)
    if same is not None:
        recorded = _loop_repeated(conversation, digests, same.conversation_key)
        if recorded is None:  # not the loop as the turn's last step left it (a retry, an edited loop): as recorded
            messages = await svc.store.sessions.turn_messages(session_id, same.turn)
            asked = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
            recorded = tuple(message_of(m) for m in messages[asked + 1 :])
        return _Place(same.turn, new=False, request_key=request_key, recorded=recorded, attached=attached)
    history = conversation.history
    if newest is not None and _goes_on_from(digests, len(history), newest.conversation_key):  # the usual call
        extended: TurnEnd | None = newest
        start = len(history)
    else:  # an edited or shortened history: every place an earlier turn may have ended is looked up
        prefixes = await sized(lambda history: digests.turn_ends(len(history)), history)
        if newest is not None and newest.conversation_key in prefixes:  # a turn ended earlier in the history
            extended = newest
        else:
            extended = await svc.store.sessions.turn_ending(session_id, list(prefixes))
        start = prefixes[extended.conversation_key or ""] if extended is not None else 0
    turn = (newest.turn if newest else 0) + 1
    if turn > MAX_TURN:  # an imported history took the last 32-bit turn number
        raise Conflict(f"session {session_id!r} has used every turn number; start a new session")
    extends = extended.turn if extended is not None else None
    imported = conversation.history[start:]
    fork = newest is not None and extends != newest.turn
    return _Place(
        turn, new=True, request_key=request_key, imported=imported, extends=extends, fork=fork, attached=attached
    )


def _goes_on_from(digests: Digests, n: int, key: str | None) -> bool:
    """Whether the first ``n`` messages are the conversation whose digest is ``key`` and end with a reply (a turn's
    end, as ``Digests.turn_ends`` finds them): one comparison where the usual call goes on from its newest turn,
    not every prefix of the history made into a table."""
    return n > 0 and digests.through(n) == key and digests.messages[n - 1].role == "assistant"


def _loop_repeated(conversation: Conversation, digests: Digests, key: str | None) -> tuple[Message, ...] | None:
    """The tool loop a turn recorded, when the conversation repeats the turn's conversation through its last step's
    reply (whose digest is ``key``): the client's own messages of it, found by their digests rather than read
    (the usual next step of a loop); None when it does not."""
    if key is None:  # a turn recorded without its conversation's digest
        return None
    asked = len(conversation.history) + 1
    end = next((end for end in range(len(digests.prints) - 1, asked, -1) if digests.prints[end] == key), None)
    return tuple(digests.messages[asked:end]) if end is not None else None


async def _run(svc: TDAService, route: _Client) -> dict[str, Any]:
    call = route.call
    counted: list[asyncio.Task[dict[str, Any]]] = []
    ask = Ask(
        call.tool_choice,
        call.max_tokens,
        call.params,
        call.anthropic_beta,
        call.on_delta,
        call.on_snapshot,
        call.timings,
        snapshot_notes=_features_noted(call),
        on_window=_counting(route, counted, _truncation_check(call, route.conversation)),
    )
    ran = await run(svc, route, ask)
    if route.session is not None:
        remember(_session_key(route.session), route.conversation, ran.answered.snapshot_id)
    else:
        call_done(ran.answered.ctx)
    done = ran.answered.done
    return {
        **ran.result(),
        "thinking": done.thinking,
        "more": done.more,
        "logprobs": done.logprobs,
        "cut": (await counted[-1])["cut"],  # the window that answered is the last assembled
        "context_management": done.context_management,  # Anthropic's report of the edits it applied
    }


def _counting(
    route: _Client,
    counted: list[asyncio.Task[dict[str, Any]]],
    check: Callable[[AssembledContext, str], None] | None,
) -> Callable[[AssembledContext, str], None]:
    """What runs on each window once assembled: ``check``, then its cut counted while the model answers (a task
    added to ``counted`` and told to the client's call: a streamed reply's headers say it)."""

    def on_window(assembled: AssembledContext, model: str) -> None:
        if check is not None:
            check(assembled, model)
        counted.append(asyncio.create_task(_known_before_answer(route, assembled, model)))
        if route.call.on_window is not None:
            route.call.on_window(counted[-1])

    return on_window


async def _known_before_answer(route: _Client, assembled: AssembledContext, model: str) -> dict[str, Any]:
    """What the reply says of a window before the model answers (``ClientCall.on_window``)."""
    conversation, tokens = route.conversation, estimator_for(model)
    cut = await sized(lambda _: window_cut(conversation, assembled, tokens), conversation.chat)  # off the loop: long
    session_id = route.session.id if route.session is not None else None
    return {"session_id": session_id, "turn": route.place.turn if route.place else None, "cut": cut}


def _features_noted(call: ClientCall) -> dict[str, Any]:
    """What the snapshot says of the client's provider features (``provider_features``), when it asked for any."""
    handled = call.features.handled
    return {"provider_features": [dict(h) for h in handled]} if handled else {}


def _truncation_check(call: ClientCall, conversation: Conversation) -> Callable[[AssembledContext, str], None] | None:
    """With truncation disabled: a window that would cut the client's conversation is refused, before anything is
    recorded or sent."""
    if call.features.truncation != "disabled":
        return None
    chat = dataclasses.replace(conversation, instructions=())  # the instructions join the profile's prompt

    def check(assembled: AssembledContext, model: str) -> None:
        refuse_cut(window_cut(chat, assembled, estimator_for(model)), model)

    return check


@dataclass(frozen=True)
class _Client:
    """A chat client's call as a turn: its own conversation is what is assembled; with a session, ``place`` says
    where the call goes in the session's record."""

    call: ClientCall
    conversation: Conversation
    profile: ProfileRow
    session: SessionRow | None
    place: _Place | None

    async def load(self, svc: TDAService) -> Loaded:
        turn, attached = (self.place.turn, self.place.attached) if self.place else (None, False)
        ctx, data = await _context(
            svc, self.call, self.conversation, self.profile, self.session, turn=turn, attached=attached
        )
        return Loaded(ctx, await resolve_type(svc, self.profile), data, turn)

    def inputs(self, ctx: AssemblyContext, assembled_at: float) -> dict[str, Any]:
        assert self.place is not None
        return {
            "query": ctx.query,
            "model": ctx.model,
            "assembled_at": assembled_at,
            "hashes": input_hashes(ctx),
            "gateway": _inputs(self.call, self.conversation, self.place),
        }

    async def record(self, svc: TDAService, loaded: Loaded, answered: Answered, priced: Priced) -> Any:
        assert self.place is not None
        return await _record(svc, loaded.data.session.id, self.conversation, self.place, answered, priced)

    async def keep_case(self, svc: TDAService, loaded: Loaded, answered: Answered, row: Any) -> str | None:
        """In its session's scope; its answer may quote tool data when the conversation holds any."""
        assert self.place is not None
        from_tools = await sized(quotes_tools, (*self.conversation.chat, *self.conversation.instructions))
        query, answer = self.conversation.query.content, answered.done.text
        return await keep_case(svc, loaded.data, self.place.turn, query, answer, row, from_tools=from_tools)


async def _context(
    svc: TDAService,
    call: ClientCall,
    conversation: Conversation,
    profile: ProfileRow,
    session: SessionRow | None,
    cutoff: Cutoff | None = None,
    turn: int | None = None,
    attached: bool = True,
) -> tuple[AssemblyContext, SessionData]:
    """The assembly context of a call (the profile's modules and sources over the client's own conversation) and
    its session's data; ``turn``: where the session placed the call (its snapshot's turn); ``attached`` False: the
    session is known to have no attachments."""
    if session is None:  # stateless: a session that exists only for this call (the scope of what it may see)
        session = SessionRow(id="", profile_id=profile.id, user_id=call.user or ANONYMOUS, created_at=_EPOCH)
    attachments = await svc.store.sessions.attachments(session.id, loaded=True) if session.id and attached else []
    data = SessionData(session, profile, len(conversation.history), 0, [], attachments)
    history = InMemoryMessages(conversation.history)
    ctx = build_context(
        data,
        conversation.query.content,
        default_model=svc.settings.model,
        sources=svc.sources,
        history=history,
        cutoff=cutoff,
        others_cases_only=True,  # the session's own turns are in the client's conversation, as it wants them
    )
    limits = [n for n in (ctx.session.context_limit, call.features.context_limit) if n]  # a threshold only lowers
    ctx = dataclasses.replace(
        ctx,
        session=dataclasses.replace(ctx.session, current_turn=turn, context_limit=min(limits, default=None)),
        query_message=conversation.query,
        instructions=conversation.instructions,
        continuation=conversation.continuation,
        tools=tuple(call.tools),
        tools_as_sent=True,
        model=call.model or ctx.model,
        history_recall=call_recall(svc, _beginnings(conversation)) if not session.id else ctx.history_recall,
    )
    if call.model and call.model != ctx.model:  # the client named another model: its own summaries too
        ctx = dataclasses.replace(ctx, summarizer=summarizer_for(svc.sources.summarizer, call.model, profile, session))
    return await with_component_instructions(svc, ctx), data


CUT_HEADER = "X-TDA-Cut"
"""The response header that says what the window left out of the client's conversation (see ``window_cut``)."""


def window_cut(conversation: Conversation, assembled: AssembledContext, tokens: TokenEstimator) -> dict[str, int]:
    """What the window did to the conversation the client sent (the ``usage.tda`` extension): its messages and
    tokens as received, the window's as sent, and how many of the client's messages were not sent as they came
    (left out, summarised, or cut: a message counts as sent only when it went byte for byte)."""
    digests = _digests_of(conversation)
    sent = Counter(_sent_key(m, digests.known) for m in assembled.messages)
    keys = Counter(_key(m) for m in conversation.instructions)
    keys.update(digests.keys)  # counted in C: the window's few keys are looked up, not every one
    went = sum(min(n, keys[key]) for key, n in sent.items())  # each message received goes at most as often as sent
    received = len(conversation.instructions) + len(digests.messages)
    return {
        "messages_received": received,
        "messages_sent": len(assembled.messages),
        "messages_cut": received - went,
        "tokens_received": sum(map(tokens.count_message, conversation.instructions)) + digests.tokens(tokens),
        "tokens_sent": assembled.snapshot.total_used,
    }


def _sent_key(sent: Mapping[str, Any], known: Mapping[tuple[Any, ...], bytes]) -> bytes:
    """A window message's key (``_key``): a text message the client sent is found by its fields, whose key its
    digests hold (the same bytes: ``_identity`` is made of those fields), not digested again on every call."""
    content = sent.get("content")
    if type(content) is str:
        calls = sent.get("tool_calls")
        key = known.get((sent["role"], content, sent.get("tool_call_id"), sent.get("name"), repr(calls or None)))
        if key is not None:
            return key
    return _key(Message.from_chat(sent))


def _by_fields(m: Message) -> bool:
    """A message whose ``_identity`` is made of its ``_fields`` (text content, no parts)."""
    return m.parts is None


def _fields(m: Message) -> tuple[Any, ...]:
    """What ``_identity`` reads of a text message, its calls as the window sends them (``repr``: JSON's values spell
    theirs apart, and equal calls are one identity)."""
    return m.role, m.content, m.tool_call_id, m.name, repr(thaw(m.tool_calls)) if m.tool_calls else "None"


def reply_headers(result: Mapping[str, Any]) -> dict[str, str]:
    """tda's headers on a reply (every wire): the session's turn and snapshot, and what was cut. A streamed reply's
    are what is known before the model answers (``ClientCall.on_window``): its snapshot is stored meanwhile, and
    the first byte does not wait for it."""
    cut = cut_header(result)
    if result["session_id"] is None:
        return cut
    known = {"X-TDA-Turn": result["turn"], "X-TDA-Snapshot": result.get("snapshot_id")}
    return {name: str(value) for name, value in known.items() if value is not None} | cut


def cut_header(result: Mapping[str, Any]) -> dict[str, str]:
    """``X-TDA-Cut: messages=<the client's messages not sent as they came>; tokens=<received less sent, or 0>``."""
    cut = result.get("cut")
    if not cut:
        return {}
    tokens = max(0, cut["tokens_received"] - cut["tokens_sent"])
    return {CUT_HEADER: f"messages={cut['messages_cut']}; tokens={tokens}"}


def _inputs(call: ClientCall, conversation: Conversation, place: _Place) -> dict[str, Any]:
    """What the snapshot keeps of the call: the conversation as sent (for replay, up to ``REPLAY_KEEPS`` messages),
    what was asked of the model besides the window, and where the call went in the session's record."""
    return {
        "instructions": [m.to_chat() for m in conversation.instructions],
        **_chat_inputs(conversation),
        "history": len(conversation.history),
        "user": call.user,
        "tools": [t.to_openai() for t in call.tools],
        "tool_choice": call.tool_choice,
        "client_model": call.model,  # None: the client asked for the profile's model
        "params": dict(call.params),
        "max_tokens": call.max_tokens,
        "context_limit": call.features.context_limit,  # a compaction threshold the window was assembled within
        "new_turn": place.new,
        "extends_turn": place.extends,
        "fork": place.fork,
    }


def _chat_inputs(conversation: Conversation) -> dict[str, Any]:
    """How the snapshot keeps the conversation. A session's call repeats the conversation an earlier call's
    snapshot kept and adds a few messages: the snapshot names that one and keeps what is new (``chat_from``,
    ``chat_tail``; the store puts the conversation back together when it reads the snapshot). Which one it names is
    ``_chat_link``'s: a whole copy now and then made a call's cost grow with its session."""
    chat = conversation.chat
    if len(chat) > REPLAY_KEEPS:
        return {"chat": None}
    link = _chat_link(conversation)
    if link is None:
        return {"chat": [m.to_chat() for m in chat]}
    tail = [m.to_chat() for m in chat[link.held :]]
    return {"chat_from": {"snapshot_id": link.snapshot_id, "keep": link.held}, "chat_tail": tail}


class Kept(NamedTuple):
    """A snapshot that kept a session's conversation (``Digests.kept``)."""

    snapshot_id: int
    held: int
    """How many messages that conversation had."""
    number: int
    """Its place among the session's snapshots since the last whole copy (0: the whole copy)."""


def _chat_link(conversation: Conversation) -> Kept | None:
    """The snapshot this call's snapshot names (None: it keeps the conversation whole). Numbered as a Fenwick tree
    numbers its nodes: snapshot n names snapshot n - lowbit(n), so it keeps the messages of its lowbit(n) last calls
    (log2 of the calls' on average), and the conversation is put back together from at most log2(n) + 1 snapshots.
    A whole copy every few snapshots cost O(session) every few calls."""
    digests = conversation.digests
    if digests is None or not digests.base:
        return None
    number = digests.base[-1].number + 1
    wanted = number - (number & -number)
    return next((k for k in digests.base if k.number == wanted), None)


def _chat_kept(conversation: Conversation, snapshot_id: int) -> tuple[Kept, ...]:
    """What the next call's snapshot may name once this call's is ``snapshot_id``: the snapshots on its Fenwick path
    (n, n - lowbit(n), ..., 0), each holding a beginning of this conversation."""
    link = _chat_link(conversation)
    base = conversation.digests.base if conversation.digests is not None and link is not None else ()
    number = base[-1].number + 1 if link is not None else 0
    path, n = {number}, number
    while n:
        n -= n & -n
        path.add(n)
    return (*(k for k in base if k.number in path), Kept(snapshot_id, len(conversation.chat), number))


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""The creation time of a stateless call's passing session (it has none; the case scope needs one)."""
REPLAY_KEEPS = 1_000
"""Conversations up to this many messages are kept with their snapshot, so the window can be replayed (longer ones
would make a long session's snapshots grow with the square of its length)."""


async def replay_context(svc: TDAService, row: Any, profile: ProfileRow) -> Any:
    """The assembly context a recorded chat-client window was built from, for replay."""
    inputs, session = row.inputs, await svc.store.sessions.get(row.session_id)
    gateway = inputs["gateway"]
    if gateway.get("chat") is None:
        raise Conflict(f"this window's conversation had over {REPLAY_KEEPS:,} messages and was not kept for replay")
    chat = [Message.from_chat(m) for m in gateway["chat"]]
    history = gateway["history"]
    conversation = Conversation(
        tuple(Message.from_chat(m) for m in gateway["instructions"]),
        tuple(chat[:history]),
        chat[history],
        tuple(chat[history + 1 :]),
    )
    call = ClientCall(
        chat,
        tools=tuple(ToolSchema.from_openai(t) for t in gateway["tools"]),
        model=inputs["model"],
        user=gateway.get("user"),
        features=ContextFeatures(context_limit=gateway.get("context_limit")),
    )
    cutoff = Cutoff(row.turn, row.created_at, inputs["assembled_at"])
    ctx, _ = await _context(svc, call, conversation, profile, session, cutoff, turn=row.turn)
    return ctx


async def answered(svc: TDAService, row: Any) -> tuple[Message, ...]:
    """The conversation one recorded client call sent (its instructions aside) and the reply it got, from its
    snapshot ``row``: where a client that names that call goes on from (the Responses API's
    ``previous_response_id``). NotFound: no chat client made the call, or its model call failed (no reply)."""
    gateway = (row.inputs or {}).get("gateway")
    if gateway is None:
        raise NotFound(f"snapshot {row.id} is not of a chat client's call")
    if gateway.get("chat") is None:
        msg = f"this call's conversation had over {REPLAY_KEEPS:,} messages and was not kept"
        raise Conflict(f"{msg}; send the whole conversation instead")
    reply = (await _step_replies(svc, row.session_id, row.turn)).get(row.id)
    if reply is None:
        raise NotFound(f"the model call of snapshot {row.id} failed: it has no reply to go on from")
    return (*(Message.from_chat(m) for m in gateway["chat"]), reply)


async def _step_replies(svc: TDAService, session_id: str, turn: int) -> dict[int, Message]:
    """The reply each step of a turn got, by snapshot id, found by following how ``_record`` wrote the turn: the
    first step its history, query, tool loop and reply; each later step the tool-loop messages it added and its
    reply. A step whose messages are not where they would be wrote nothing (its model call failed); when the
    step after one wrote what it would have written, the reply is both's (the failed one's id was never sent)."""
    messages = [message_of(m) for m in await svc.store.sessions.turn_messages(session_id, turn)]
    asked = max((i for i, m in enumerate(messages) if m.role == "user"), default=len(messages))
    replies: dict[int, Message] = {}
    position, last_start = asked + 1, None
    for snapshot_id, inputs in await svc.store.sessions.turn_snapshot_inputs(session_id, turn):
        gateway = inputs.get("gateway") or {}
        if gateway.get("chat") is None:
            break  # how much such a step wrote is not known
        continuation = [Message.from_chat(m) for m in gateway["chat"][gateway["history"] + 1 :]]
        for start in (position, last_start):
            if start is None:
                continue
            added = continuation[_common(messages[asked + 1 : start], continuation) :]
            end = start + len(added)
            written = messages[start : end + 1]
            if (
                len(written) == len(added) + 1
                and written[-1].role == "assistant"
                and _common(written, added) == len(added)
            ):
                replies[snapshot_id] = messages[end]
                if start == position:
                    position, last_start = end + 1, start
                break
    return replies


async def _record(
    svc: TDAService,
    session_id: str,
    conversation: Conversation,
    place: _Place,
    answered: Answered,
    priced: Priced,
) -> Any:
    """The call in the session's record: a new turn with the history it brought, or one more step of its turn, with
    its snapshot's model call (``priced``). Returns the turn's row as it now is."""
    done = answered.done
    reply = Message("assistant", done.text, turn=place.turn, tool_calls=tuple(done.tool_calls))
    tokens = estimator_for(answered.ctx.model)
    step_messages = conversation.continuation[_common(place.recorded, conversation.continuation) :]
    results = _results(conversation.continuation, step_messages)
    step = {**answered.step(), "conversation_key": _digests_of(conversation).with_reply(reply)}
    if place.new:
        messages = [*place.imported, conversation.query, *conversation.continuation, reply]
        fields = {
            "turn": place.turn,
            "query": conversation.query.content,
            "request_key": place.request_key,
            "results": results,
            **step,
        }
        rows = await sized(lambda some: [_row(m, tokens) for m in some], messages)
        row, _ = await svc.store.sessions.record_turn(session_id, fields, rows, returning=False, priced=priced)
        return row
    step_rows = [_row(m, tokens) for m in (*step_messages, reply)]
    return await svc.store.sessions.extend_turn(
        session_id, place.turn, {**step, "results": results}, step_rows, priced=priced
    )


def _results(continuation: Sequence[Message], new: Sequence[Message]) -> list[dict[str, Any]]:
    """The new tool results as turn results (what plan_hydration distils), named by the calls they answer."""
    names = {
        str(c.get("id")): str((c.get("function") or {}).get("name", "")) for m in continuation for c in m.tool_calls
    }
    return [as_result(names.get(m.tool_call_id or "", ""), m.content) for m in new if m.role == "tool"]


def _common(recorded: Sequence[Message], sent: Sequence[Message]) -> int:
    """How many of ``sent``'s first messages the session recorded already."""
    n = 0
    for a, b in zip(recorded, sent, strict=False):
        if _identity(a) != _identity(b):
            break
        n += 1
    return n


CALL_NAMES = CallNames(
    snapshot=SNAPSHOT_FIELDS,
    turn=("turn", "query", "request_key", "results", *STEP_FIELDS, "conversation_key"),
    step=(*STEP_FIELDS, "conversation_key", "results"),
    message=("tokens", "role", "content", "parts", "tool_calls", "tool_call_id", "name"),
)
"""The parameters ``_record`` names (its fields, a step's changes in order, ``_row``'s keys) and the snapshot's:
the session store compiles its statements for them at start-up (``SessionStore.prepare``)."""


def _row(m: Message, tokens: TokenEstimator) -> dict[str, Any]:
    chat = m.to_chat()
    return {
        "tokens": tokens.count_message(m),
        "role": m.role,
        "content": m.content,
        "parts": chat["content"] if m.parts is not None else None,
        "tool_calls": chat.get("tool_calls", []),
        "tool_call_id": m.tool_call_id,
        "name": m.name,
    }


# --- conversation digests ---------------------------------------------------------------------------------


def _identity(m: Message) -> bytes:
    """What makes two messages the same message of a conversation (turn numbers and token counts aside): the JSON
    of its role, content, calls, call id and name (sessions are keyed by its digests, so these bytes never change).
    A reply is its text and calls: an Anthropic client sends it back as blocks, with the thinking that preceded it."""
    text = _text_identity(m)
    if text is not None:
        return text
    chat = m.to_chat()
    calls = [_canonical(c) for c in chat.get("tool_calls") or ()] or None
    content = chat["content"]
    if m.role == "assistant" and m.parts is not None and all(p.get("type") in _REPLY_PARTS for p in m.parts):
        content = m.content
    return _json([chat["role"], content, calls, chat.get("tool_call_id"), chat.get("name")]).encode()


_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str).encode
"""``json.dumps`` with these options (the same encoder, made once rather than per message)."""
_REPLY_PARTS = frozenset({"text", "thinking", "redacted_thinking"})


def _text_identity(m: Message) -> bytes | None:
    """``_identity`` of a message of text alone (most of a conversation), written out rather than made through a
    chat dict and the JSON encoder: its fields are strings or None, so its JSON is each string's; None for any other
    message."""
    role, content, call_id, name = m.role, m.content, m.tool_call_id, m.name
    if m.parts is not None or m.tool_calls or type(role) is not str or type(content) is not str:
        return None
    if (call_id is not None and type(call_id) is not str) or (name is not None and type(name) is not str):
        return None
    call_id_json = "null" if call_id is None else _string(call_id)
    name_json = "null" if name is None else _string(name)
    return f"[{_string(role)},{_string(content)},null,{call_id_json},{name_json}]".encode()


_string = json.encoder.encode_basestring
"""A string as JSON without ``ensure_ascii`` (the encoder's own, in C)."""


def _canonical(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call with its arguments' JSON in one spelling: a client that sends them as an object (Anthropic's
    ``input``) cannot give back the model's own spacing, and the call is the same call."""
    function = call.get("function") or {}
    try:
        arguments = json.loads(function.get("arguments") or "null")
    except ValueError:
        return call
    return {**call, "function": {**function, "arguments": arguments}}


CHECKPOINT = 64
"""A running digest state is kept after every this many messages (``Digests.state`` hashes on from the nearest):
each is an OpenSSL context, and a 100,000-message conversation's 100,000 of them took ~200 ms to free, the GIL held,
when its digests were dropped on the event loop."""


@dataclass(frozen=True)
class Digests:
    """A conversation digested message by message (``digested``): each message's key (the digest of its
    ``_identity``) and the digest of every prefix, so that every digest a call needs (its request, the places where
    an earlier turn may have ended) is read, not computed again."""

    messages: tuple[Message, ...]
    keys: tuple[bytes, ...]
    prints: tuple[str, ...]
    """``prints[i]``: the digest of the first ``i`` messages."""
    states: tuple[Any, ...]
    """``states[j]``: the digest state after the first ``j * CHECKPOINT`` messages (sha256 objects, never updated)."""
    repeated: int = 0
    """How many of the first messages repeat the conversation these digests went on from."""
    base: tuple[Kept, ...] = ()
    """The snapshots that kept beginnings of that conversation which these messages repeat, oldest first, the last
    that conversation's own (``_chat_link``); none: unknown, or it is not repeated whole."""
    kept: tuple[Kept, ...] = ()
    """The same of these messages, once a snapshot has kept them (``remember``)."""
    received: tuple[Message, ...] = ()
    """``messages`` as the call handed them, when ``messages`` are copies (carrying token counts): the next call's
    messages are these objects where it sends the same (tda/api/chat.py's ``_sent``), found the same without
    comparing their contents."""
    end: Any = None
    """The digest state after every message (never updated): the reply's digest and the next call's go on from it
    rather than hashing again the messages since the last checkpoint (up to ``CHECKPOINT`` - 1 of them)."""
    known: dict[tuple[Any, ...], bytes] = field(default_factory=dict, compare=False, repr=False)
    """The key of each text message (``_by_fields``) by its ``_fields``, for ``window_cut``'s lookups. Carried over
    from the earlier call's digests and added to (a text message's key is a function of its fields, so a key kept
    for a message this conversation no longer holds is still right); made again when it holds twice as many."""
    counted_by: Any = None
    """The estimator whose ``count_message`` figures ``token_sums`` adds up (None: not counted)."""
    token_sums: tuple[int, ...] = ()
    """``token_sums[i]``: the tokens of the first ``i`` messages, by ``counted_by``."""

    def tokens(self, estimator: TokenEstimator) -> int:
        """The tokens of every message, by ``estimator``: added up as the messages came when it counted them."""
        if estimator is self.counted_by and len(self.token_sums) == len(self.messages) + 1:
            return self.token_sums[-1]
        return sum(map(estimator.count_message, self.messages))

    def through(self, n: int) -> str:
        """The digest of the first ``n`` messages."""
        return self.prints[n]

    def turn_ends(self, n: int) -> dict[str, int]:
        """The digest of every prefix of the first ``n`` messages that ends with an assistant reply -> the prefix's
        length: the places where an earlier turn may have ended."""
        return {self.prints[i + 1]: i + 1 for i in range(n) if self.messages[i].role == "assistant"}

    def state(self, n: int) -> Any:
        """A new digest state after the first ``n`` messages (the caller's to update)."""
        if n == len(self.messages) and self.end is not None:  # the usual: a reply, or the next call going on
            return self.end.copy()
        h = self.states[n // CHECKPOINT].copy()
        for m in self.messages[n - n % CHECKPOINT : n]:
            _digest_on(h, m)
        return h

    def with_reply(self, reply: Message) -> str:
        """The digest of the whole conversation followed by ``reply``."""
        h = self.state(len(self.messages))
        _digest_on(h, reply)
        return str(h.hexdigest())


def same_run(was: Sequence[Any], now: Sequence[Any]) -> int:
    """How many first items of ``now`` are the very objects at the same places of ``was`` (compared in C: ~10 ns an
    item, where a Python loop costs ten times that)."""
    same = list(map(operator.is_, was, now))
    return same.index(False) if False in same else len(same)


def _digest_on(h: Any, m: Message) -> bytes:
    """``h`` updated with message ``m``; returns ``m``'s identity."""
    identity = _identity(m)
    h.update(identity)
    h.update(b"\x00")
    return identity


def digested(messages: Sequence[Message], seen: Digests | None = None) -> Digests:
    """``messages`` digested, going on from ``seen`` (an earlier call's) for as long as they repeat its messages:
    a session's next call sends the conversation it sent before and a few messages more, and only those are
    hashed. The repeated messages are ``seen``'s own objects (equal to the ones sent), so what is cached per message
    object (token counts) holds across the calls."""
    same = 0
    if seen is not None:  # the messages a body lent are the very objects: compared in C, then one by one
        same = same_run(seen.received or seen.messages, messages)
        for a, was, b in zip(
            seen.messages[same:], (seen.received or seen.messages)[same:], messages[same:], strict=False
        ):
            if a is not b and was is not b and a != b:
                break
            same += 1
    h = seen.state(same) if seen else hashlib.sha256()
    keys = list(seen.keys[:same]) if seen else []
    prints = list(seen.prints[: same + 1]) if seen else [h.hexdigest()]
    states = list(seen.states[: same // CHECKPOINT + 1]) if seen else [h.copy()]
    for n, m in enumerate(messages[same:], start=same + 1):
        keys.append(hashlib.sha256(_digest_on(h, m)).digest())
        prints.append(h.hexdigest())
        if n % CHECKPOINT == 0:
            states.append(h.copy())
    kept = (*seen.messages[:same], *messages[same:]) if seen else tuple(messages)
    base = tuple(k for k in seen.kept if k.held <= same) if seen is not None else ()  # beginnings it repeats
    known: dict[tuple[Any, ...], bytes] = {}
    start = 0
    if seen is not None and same and len(seen.known) <= 2 * len(kept):  # carried over, not grown past twice its use
        known, start = seen.known, same
    known.update((_fields(m), key) for m, key in zip(kept[start:], keys[start:], strict=True) if _by_fields(m))
    return Digests(kept, tuple(keys), tuple(prints), tuple(states), same, base, end=h.copy(), known=known)


SEEN_CONVERSATIONS = 32
"""Conversations whose digests are kept for the next call (by session; a stateless client's by its profile and
first message): each holds its messages, so a few dozen, of at most ``SEEN_MESSAGES`` messages."""
SEEN_MESSAGES = 2_000
"""A longer conversation is digested whole on every call rather than held in memory between calls."""
_seen: BoundedCache[str, Digests] = BoundedCache(SEEN_CONVERSATIONS)


async def with_digests(conversation: Conversation, key: str, tokens: TokenEstimator | None = None) -> Conversation:
    """``conversation`` with its digests, computed from the conversation last seen under ``key``, and with that
    conversation's message objects where it repeats them; with ``tokens``, its messages carry their counts (made
    with the digests, in a worker thread when long: the window's modules walk a long history several times, and
    the estimator's cache holds fewer messages than that)."""
    seen = _seen.get(key)

    def work(chat: tuple[Message, ...]) -> Digests:
        digests = digested(chat, seen)
        if tokens is None:
            return digests
        same = digests.repeated
        counted = (*digests.messages[:same], *tokens.counted(digests.messages[same:]))
        carried = seen.token_sums[: same + 1] if seen is not None and seen.counted_by is tokens else ()
        sums = _token_sums(counted, tokens, carried)
        return dataclasses.replace(digests, messages=counted, received=tuple(chat), counted_by=tokens, token_sums=sums)

    digests = await sized(work, conversation.chat)
    if len(digests.messages) <= SEEN_MESSAGES:
        _seen.put(key, digests)
    history, chat = len(conversation.history), digests.messages
    return Conversation(conversation.instructions, chat[:history], chat[history], chat[history + 1 :], digests)


def _token_sums(messages: Sequence[Message], tokens: TokenEstimator, carried: tuple[int, ...]) -> tuple[int, ...]:
    """The running token totals of ``messages`` (``Digests.token_sums``), going on from ``carried``: those of the
    first ``len(carried) - 1`` messages, added up by an earlier call."""
    start = carried or (0,)
    counts = map(tokens.count_message, messages[len(start) - 1 :])
    return (*start[:-1], *accumulate(counts, initial=start[-1]))


def remember(key: str, conversation: Conversation, snapshot_id: int | None) -> None:
    """The snapshot that kept the session's conversation (``key``: ``_session_key``): the session's next call's
    snapshot names it."""
    digests = conversation.digests
    if snapshot_id is None or digests is None or _seen.get(key) is not digests:
        return
    if len(conversation.chat) > REPLAY_KEEPS:  # that snapshot kept none of it
        return
    _seen.put(key, dataclasses.replace(digests, kept=_chat_kept(conversation, snapshot_id)))


def _session_key(session: SessionRow) -> str:
    """Where a session's digests are kept: its id and when it was made. A session deleted and made again under its
    id is another: its snapshots never name the deleted one's, which went with it."""
    return f"session\x00{session.id}\x00{session.created_at.isoformat()}"


def _stateless_key(profile: ProfileRow, conversation: Conversation) -> str:
    """Where a stateless call's digests are kept: its profile and its first message (a client that sends its
    conversation again finds them; two that share both only take turns replacing them)."""
    first = conversation.chat[0]
    return f"stateless\x00{profile.id}\x00{hashlib.sha256(_identity(first)).hexdigest()}"


def _beginnings(conversation: Conversation) -> Sequence[str]:
    """The digests of the conversation's beginnings (its recall index is named by one, ``call_recall``); none
    without digests (a replay: no index is kept)."""
    return conversation.digests.prints if conversation.digests is not None else ()


def _digests_of(conversation: Conversation) -> Digests:
    return conversation.digests if conversation.digests is not None else digested(conversation.chat)


def _key(m: Message) -> bytes:
    return hashlib.sha256(_identity(m)).digest()
