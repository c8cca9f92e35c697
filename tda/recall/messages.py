"""Recall of older history in the service: one ``SessionRecall`` (the component's index of each session's messages,
searched by the relevance engine) shared by every turn, and kept up to date as messages are recorded.

Messages are indexed right after they are stored (an import, a turn's query and reply), by the background writer
while the session's lock is still held: the next turn, which waits for that lock, finds the index ready and reads
nothing again. A replica that has not indexed a session yet (another replica recorded it) indexes it from the shared
database at the session's next turn; what it reads from there is the same history every replica sees. The vectors of
what it indexes are kept in the database too (``tda/recall/vectors.py``), written by the indexing job:
that replica reads them instead of embedding the history again.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import aclosing
from functools import partial
from typing import TYPE_CHECKING

from components.context_window.base import (
    AssemblyContext,
    HistoryRecall,
    Message,
    MessageSource,
    Session,
    pages_newest_first,
)
from components.context_window.handler import window_limits
from components.context_window.recall.messages import EMBED_AT_ONCE, MAX_PARTS, SessionRecall, rough_tokens
from components.context_window.window_type import ContextWindowType, ModuleSlot

from ..errors import Unavailable
from .vectors import write_now

if TYPE_CHECKING:
    from ..service import TDAService
    from ..store.sessions import SessionData

YOUNG_MESSAGES = EMBED_AT_ONCE // MAX_PARTS
"""A history of at most this many messages, within the smallest room a recalling module is allocated
(``_smallest_share``), is indexed by words only (``_young``): no window recalls from it unless its module is cut
below that room (an over-budget window, a condense rule), and then recall's ``ask`` gives it its vectors in the turn,
at most ``EMBED_AT_ONCE`` parts, as a fresh index would. A conversation that ends young (a question or two) is never
embedded. In the long-session bench (16K, the smallest room 1,408 tokens) only a session's first turn is young: its
second's history holds a ~950-token tool result, and from its third conversation_history asks recall's lead (the
allocation's 3,770 tokens), whose continuity reads the vectors of the query and the newest questions."""


def call_recall(svc: TDAService, beginnings: Sequence[str] = ()) -> HistoryRecall | None:
    """Recall for one stateless call: an index of the conversation it sent, held by the call's context (kept in the
    service's index under one session id, every stateless call's conversation would stay there, hundreds of
    thousands of objects the cycle collector walks, and be rebuilt by the next call with another conversation).
    Its vectors by text are the service's (a bounded cache). ``beginnings``: the digests of the conversation's
    beginnings (``Digests.prints``): the call goes on from the index an earlier call built of the longest one it
    repeats, and ``call_done`` keeps its own for the next (a few, bounded: ``CallIndexes``), so a client resending
    its conversation has only what it added indexed."""
    recall = svc.sources.history_recall
    return recall.for_one_call(beginnings) if isinstance(recall, SessionRecall) else recall


def call_done(ctx: AssemblyContext) -> None:
    """A stateless call is over: its recall index is kept for the call that goes on from its conversation."""
    if isinstance(ctx.history_recall, SessionRecall):
        ctx.history_recall.call_done()


async def index_history(svc: TDAService, session_id: str, data: SessionData | None = None) -> None:
    """Bring ``session_id``'s recall index up to its stored history (only what was added since is read). ``data``:
    the session as it now stands, when the caller knows (the turn that recorded it: no second load)."""
    recall = svc.sources.history_recall
    if recall is None or not hasattr(recall, "sync"):
        return
    data = data or await svc.store.sessions.load(session_id)
    source = await svc.history.source(data)
    with write_now():  # the vectors are written before the job ends, so before the session's lock goes
        await recall.sync(Session(id=session_id, user_id=data.session.user_id, history=source), dense=True)


def index_after(svc: TDAService, session_id: str, data: SessionData | None = None) -> None:
    """Index what was just stored for ``session_id``, after the response (call it holding the session's lock, which
    keeps ``data``, the session as the caller recorded it, current until the job has run)."""
    job = partial(index_history, svc, session_id, data)
    svc.writer.submit(session_id, job, f"history index of session {session_id}")


async def vectors_ready(svc: TDAService, ctx: AssemblyContext, window_type: ContextWindowType) -> None:
    """Bring the recall index of ``ctx``'s session up to its history, every message with its vectors, before the
    window is assembled (outside the modules' timeouts): the same stored state gives the same window whether the
    background indexing had finished or not (cold = warm, issue 32). A history met cold (a fresh replica, a long
    conversation a client sends at once) waits for its vectors once (read from the vectors store when another
    replica embedded them); later turns embed only what is new, which the indexing after each turn has done."""
    recall = ctx.history_recall  # the service's, or a stateless call's own (``call_recall``)
    recalling = _recalling(window_type)
    if not isinstance(recall, SessionRecall) or recall.embedder is None or not recalling:
        return
    source = ctx.session.message_source()
    if await _young(source, _smallest_share(ctx, window_type, recalling)):
        # by words: the indexing after the turn goes on from an index that holds its vectors back
        await recall.sync(ctx.session, dense=True, vectors=False)
        return
    if await _beyond(source, _largest_share(ctx, window_type, recalling)):
        recall.embed_ahead(ctx.session, ctx.query)  # recall's lead will rank for the query: its vector comes now
    if recall.outlive_calls:  # a session's: its question and the tool loop the client sent are history at its next call
        recall.embed_joining(joining(ctx))
    await recall.sync(ctx.session, dense=True, vectors=True)


def joining(ctx: AssemblyContext) -> tuple[Message, ...]:
    """What a session call adds to its history for the session's next call, as far as known before the reply: its
    question (as the client sent it) and its tool loop so far."""
    return (ctx.query_message or Message("user", ctx.query), *ctx.continuation)


def embed_reply_ahead(ctx: AssemblyContext, window_type: ContextWindowType, reply: Message) -> None:
    """After a session call's response: its ``reply`` is history at the session's next call, whose ``vectors_ready``
    finds its vectors made meanwhile (or under way) rather than embedding them before its window."""
    recall = ctx.history_recall
    if not isinstance(recall, SessionRecall) or not recall.outlive_calls or not _recalling(window_type):
        return
    if not recall.holds_back_vectors(ctx.session):  # a young history's next call indexes it by words
        recall.embed_joining([reply])


def _recalling(window_type: ContextWindowType) -> list[ModuleSlot]:
    """The active modules of ``window_type`` that recall older history (their ``recall_pct`` option is on)."""
    return [s for s in window_type.modules.values() if s.active and float(s.config.get("recall_pct") or 0) > 0]


def _largest_share(ctx: AssemblyContext, window_type: ContextWindowType, slots: Sequence[ModuleSlot]) -> int:
    """The most tokens any of ``slots`` is allocated in ``ctx``'s window (its ``max_pct`` of what the window has
    for content, as the handler finds it): a history beyond it is not sent whole, so its module recalls."""
    return int(window_limits(ctx, window_type).available * max(s.max_pct for s in slots) / 100)


def _smallest_share(ctx: AssemblyContext, window_type: ContextWindowType, slots: Sequence[ModuleSlot]) -> int:
    """The fewest tokens any of ``slots`` is allocated in ``ctx``'s window by its ``min_pct`` (a module is cut
    below that only when the window is over its budget, or by a condense rule)."""
    return int(window_limits(ctx, window_type).available * min(s.min_pct for s in slots) / 100)


async def _young(source: MessageSource, room: int) -> bool:
    """Whether the history is too young for recall (``YOUNG_MESSAGES``): few messages, all within ``room``."""
    return source.total <= YOUNG_MESSAGES and not await _beyond(source, room)


async def _beyond(source: MessageSource, tokens: int) -> bool:
    """Whether the history holds more than ``tokens`` (rough counts), read newest first only as far as that."""
    held = 0
    async with aclosing(pages_newest_first(source)) as pages:
        async for _, messages in pages:
            held += sum(map(rough_tokens, messages))
            if held > tokens:
                return True
    return False


async def forget_history(svc: TDAService, session_id: str, what: str) -> int:
    """Drop ``session_id``'s recall index and delete its stored vectors (a deletion or a memory purge); returns how
    many vectors went. A store that cannot be reached refuses: vectors of a forgotten history are never kept."""
    recall = svc.sources.history_recall
    if recall is not None and hasattr(recall, "forget"):
        recall.forget(session_id)
    if svc.history_vectors is None:
        return 0
    try:
        return await svc.history_vectors.delete(session_id)
    except Exception as exc:
        raise Unavailable(
            f"the history vectors of session {session_id!r} could not be deleted ({exc}); {what}: "
            "try again once the database answers"
        ) from exc
