"""Sessions and what happens in them: messages, turns, attachments and the snapshots of each assembly."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import sqlite3
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

from sqlalchemy import BigInteger, Row, bindparam, exists, func, insert, or_, select, tuple_, update
from sqlalchemy import text as sql_text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.orm import make_transient_to_detached
from sqlalchemy.orm.attributes import set_committed_value

from components.context_window.base import Message
from components.context_window.token_estimator import counts_to_store

from .. import scope
from ..db import Database, advisory_xact_lock, rowcount
from ..errors import Conflict, Invalid, NotFound
from ..inline_sqlite import OFF_LOOP_ROWS, Statements
from ..models import AttachmentRow, Base, MessageRow, ProfileRow, SessionRow, SnapshotRow, TurnRow, utcnow
from ..offload import sized
from . import audit


def new_id() -> str:
    return uuid.uuid4().hex[:16]


def session_dict(row: SessionRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "profile_id": row.profile_id,
        "user_id": row.user_id,
        "title": row.title,
        "context_limit": row.context_limit,
        "phase": row.phase,
        "created_at": row.created_at.isoformat(),
        "updated_at": row.updated_at.isoformat(),
    }


def message_dict(row: MessageRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "turn": row.turn,
        "role": row.role,
        "content": row.content,
        "tool_calls": row.tool_calls,
        "tool_call_id": row.tool_call_id,
        "name": row.name,
        "valid": row.valid,
        "phase": row.phase,
        "tokens": row.tokens,
        "parts": row.parts,
        "created_at": row.created_at.isoformat(),
    }


def turn_dict(row: TurnRow | TurnTuple) -> dict[str, Any]:
    return {
        "turn": row.turn,
        "query": row.query,
        "plan": row.plan,
        "answer": row.answer,
        "outcome": row.outcome,
        "results": row.results,
        "summary": row.summary,
        "tokens_in": row.tokens_in,
        "tokens_out": row.tokens_out,
        "valid": row.valid,
        "phase": row.phase,
        "model": row.model,
        "snapshot_id": row.snapshot_id,
        "labels": row.labels or {},
        "created_at": row.created_at.isoformat(),
    }


def attachment_dict(row: AttachmentRow, with_text: bool = False) -> dict[str, Any]:
    out = {
        "id": row.id,
        "name": row.name,
        "mime_type": row.mime_type,
        "chars": len(row.text),
        "created_at": row.created_at.isoformat(),
    }
    return {**out, "text": row.text} if with_text else out


def snapshot_dict(row: SnapshotRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "session_id": row.session_id,
        "turn": row.turn,
        "type_id": row.type_id,
        "type_version": row.type_version,
        "model": row.model,
        "created_at": row.created_at.isoformat(),
        "snapshot": row.data,
    }


_T = TypeVar("_T")

RECENT_TURNS = 40
"""How many of the newest turns a turn reads: workflow_history shows 10 by default, plan_hydration the newest
valid one (a session whose newest 40 turns are all invalid or in another phase shows none)."""


@dataclass(frozen=True)
class SessionData:
    """A session's header and what assembly reads besides the history, which is paged on demand
    (``message_page``): loading a session costs the same at 10 or 10,000 messages."""

    session: SessionRow
    profile: ProfileRow
    message_count: int
    last_message_turn: int
    turns: list[TurnTuple]
    """The newest ``RECENT_TURNS`` turns, oldest first, with a ``TurnRow``'s attributes (read without the ORM,
    whose objects cost three times as much to build, every turn)."""
    attachments: list[AttachmentRow]
    before_turn: int | None = None
    """Set for a replay: only what existed before this turn (messages, turns) was loaded."""
    recorded: int = 0
    """Messages appended since the load, by the turn that loaded it, under the session's lock (``with_recorded``)."""

    @property
    def stored_messages(self) -> int:
        """The session's message count as stored now (the whole history's, whatever part a turn sees)."""
        return self.session.message_count + self.recorded

    def with_recorded(self, added: int, last_turn: int) -> SessionData:
        """The history as a load after its turn appended ``added`` messages up to ``last_turn`` would find it (the
        header and turns are the load's): what the turn's indexing reads, without reading the session again."""
        count, last = self.message_count + added, max(self.last_message_turn, last_turn)
        return dataclasses.replace(self, message_count=count, last_message_turn=last, recorded=self.recorded + added)


MessageCursor = tuple[int, int]
"""(turn, id) of the oldest message of a page: the next page holds the messages before it."""

_MESSAGE_COLUMNS = (
    MessageRow.id,
    MessageRow.turn,
    MessageRow.role,
    MessageRow.content,
    MessageRow.tool_calls,
    MessageRow.tool_call_id,
    MessageRow.name,
    MessageRow.valid,
    MessageRow.phase,
    MessageRow.token_counts,
    MessageRow.parts,
)


class MessageTuple(NamedTuple):
    """A message as a history page reads it (tda/history.py builds a Message and a fingerprint from each: 15 attribute
    reads, ~0.3 µs each on a Row)."""

    id: int
    turn: int
    role: str
    content: str
    tool_calls: list[Any]
    tool_call_id: str | None
    name: str | None
    valid: bool
    phase: str | None
    token_counts: dict[str, Any] | None
    parts: list[Any] | None


_TURN_COLUMNS = tuple(TurnRow.__table__.columns)


class TurnTuple(NamedTuple):
    """A turn as ``load`` reads it: a Row's attributes cost ~1 µs each, and a turn reads 10 of 40 turns' (0.4 ms)."""

    id: int
    session_id: str
    turn: int
    query: str
    plan: str
    answer: str
    outcome: str
    results: list[Any]
    summary: str
    tokens_in: int
    tokens_out: int
    valid: bool
    phase: str | None
    model: str
    snapshot_id: int | None
    request_key: str | None
    conversation_key: str | None
    labels: dict[str, Any] | None
    created_at: datetime


class TurnEnd(NamedTuple):
    """Where a chat client's turn ended: its number and its conversation's digest through its last reply."""

    turn: int
    conversation_key: str | None


class CallState(NamedTuple):
    """What a chat client's call finds of its session (``call_state``)."""

    asking: TurnEnd | None
    """The newest turn its conversation opened (a retry, or the next step of its tool loop), if any."""
    newest: TurnEnd | None
    """The session's newest turn (None: it has none)."""
    attached: bool
    """Whether the session has attachments (most have none: their read is then left out)."""


# The tuples' fields are the columns each statement selects, in order.
assert MessageTuple._fields == tuple(c.key for c in _MESSAGE_COLUMNS)
assert TurnTuple._fields == tuple(c.key for c in _TURN_COLUMNS)

# What ``load`` reads, built once (building a statement costs more than SQLite answering it). ``before`` and
# ``turns_before`` are turn numbers; none given reads as _NO_TURN, past every turn (a 64-bit parameter: PostgreSQL
# compares it with the 32-bit column as it is).
_NO_TURN = 2**31
_BEFORE, _TURNS_BEFORE = bindparam("before", type_=BigInteger), bindparam("turns_before", type_=BigInteger)
_SESSION_COLUMNS, _PROFILE_COLUMNS = tuple(SessionRow.__table__.columns), tuple(ProfileRow.__table__.columns)
_SESSION_WIDTH = len(_SESSION_COLUMNS)
_HEADER = (
    select(
        *_SESSION_COLUMNS,
        *_PROFILE_COLUMNS,
        select(func.max(MessageRow.turn))
        .where(MessageRow.session_id == bindparam("session_id"), MessageRow.turn < _BEFORE)
        .scalar_subquery(),
        # Most sessions have no attachments: knowing it here saves their query (an index probe) on most turns.
        exists().where(AttachmentRow.session_id == bindparam("session_id")),
    )
    .join(ProfileRow, ProfileRow.id == SessionRow.profile_id)
    .where(SessionRow.id == bindparam("session_id"))
)
_HEADER_IN = _HEADER.where(SessionRow.project_id == bindparam("project"), ProfileRow.project_id == bindparam("project"))
"""``_HEADER`` in the acting project (``scope.current``): the ORM's filter (tda/store/projects.py) written out, as a
Core read bypasses it."""
_MESSAGES_FROM_TURN = select(func.count()).where(
    MessageRow.session_id == bindparam("session_id"), MessageRow.turn >= _BEFORE
)
_NEWEST_TURNS = (
    select(*_TURN_COLUMNS)
    .where(
        TurnRow.session_id == bindparam("session_id"),
        TurnRow.turn < _BEFORE,
        TurnRow.turn < _TURNS_BEFORE,
    )
    .order_by(TurnRow.turn.desc())
    .limit(bindparam("turns"))
)
# History pages, newest first or (``_MESSAGES_AFTER``) what was appended since, on a bare connection: with the
# statement built once and no ORM session, reading 200 messages and building them costs 1.6 ms instead of 2.8.
_CURSOR = tuple_(bindparam("turn", type_=BigInteger), bindparam("id", type_=BigInteger))
_MESSAGE_PAGE = (
    select(*_MESSAGE_COLUMNS)
    .where(MessageRow.session_id == bindparam("session_id"), tuple_(MessageRow.turn, MessageRow.id) < _CURSOR)
    .order_by(MessageRow.turn.desc(), MessageRow.id.desc())
    .limit(bindparam("limit"))
)
_MESSAGES_AFTER = (
    select(*_MESSAGE_COLUMNS)
    .where(MessageRow.session_id == bindparam("session_id"), tuple_(MessageRow.turn, MessageRow.id) > _CURSOR)
    .order_by(MessageRow.turn, MessageRow.id)
)
_ATTACHMENTS = (
    select(*AttachmentRow.__table__.columns)
    .where(AttachmentRow.session_id == bindparam("session_id"))
    .order_by(AttachmentRow.created_at)
)


def _with_defaults(table: Any, given: dict[str, Any]) -> dict[str, Any]:
    """``given`` and every other column's Python default, in the table's order (each callable called once, as the
    ORM's flush calls them): the row as the ORM writes it, its values known before the INSERT."""
    row = {}
    for key, column in table.c.items():
        if key in given:
            row[key] = given[key]
        elif column.default is not None:
            row[key] = column.default.arg(None) if column.default.is_callable else column.default.arg
        else:
            row[key] = None
    return row


def _detached(row_type: Any, values: Sequence[Any]) -> Any:
    """A row of ``row_type`` as an ORM session's read leaves it once closed: every column loaded, no session."""
    row = row_type(**dict(zip(row_type.__table__.columns.keys(), values, strict=True)))
    make_transient_to_detached(row)
    return row


class SessionStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # --- sessions --------------------------------------------------------------------------------

    async def all(self, profile_id: str | None = None, limit: int = 200) -> list[SessionRow]:
        query = select(SessionRow).order_by(SessionRow.created_at.desc()).limit(limit)
        if profile_id:
            query = query.where(SessionRow.profile_id == profile_id)
        async with self.db.read() as s:
            return list((await s.scalars(query)).all())

    async def get(self, session_id: str) -> SessionRow:
        """The session (NotFound: none, or another project's), read on a bare connection by a statement built once
        and made a detached ``SessionRow``, as an ORM session's read would leave it: ~0.1-0.3 ms less of every
        session's chat call than through an ORM session. The project's filter is the ORM's (tda/store/projects.py)
        written out, as a Core read bypasses it: a session is owned, never shared."""
        project = scope.current()
        statement = _SESSION_IN if project else _SESSION
        found = await self.db.first_row(statement, {"session_id": session_id, "project": project})
        if found is None:
            raise NotFound(f"no session {session_id!r}")
        row = SessionRow(**dict(zip(statement.selected_columns.keys(), found, strict=True)))
        make_transient_to_detached(row)
        return row

    async def load(
        self,
        session_id: str,
        before_turn: int | None = None,
        turns: int = RECENT_TURNS,
        turns_before: int | None = None,
    ) -> SessionData:
        """The header, the newest ``turns`` turns and the attachments, without the messages (index reads only).
        ``before_turn`` (replay) leaves out every message and turn from that turn on; ``turns_before`` pages
        the turns only."""
        params = {"session_id": session_id, "before": _NO_TURN if before_turn is None else before_turn}
        turn_params = {**params, "turns": turns, "turns_before": _NO_TURN if turns_before is None else turns_before}
        project = scope.current()
        # One round trip for the session, its profile and its last turn; by statements built once on a bare
        # connection (the loop's own on SQLite), the rows made detached ORM objects as ``get``'s do (an ORM session's
        # reads cost more: the demo session's load, 0.78-0.84 ms of CPU against 0.29-0.30, docs/benchmarks.md).
        statement = _HEADER_IN if project else _HEADER
        found = await self.db.first_row(statement, {**params, "project": project})
        if found is None:
            raise NotFound(f"no session {session_id!r}")
        row, profile = _detached(SessionRow, found[:_SESSION_WIDTH]), _detached(ProfileRow, found[_SESSION_WIDTH:-2])
        last_turn, attached, count = found[-2] or 0, found[-1], row.message_count
        if before_turn is not None:  # counted from the newest end: a continuation's own turn is a few messages
            count = row.message_count - ((await self.db.first_row(_MESSAGES_FROM_TURN, params) or (0,))[0] or 0)
        newest_turns = [TurnTuple._make(t) for t in await self.db.all_rows(_NEWEST_TURNS, turn_params)]
        attached_rows = await self.db.all_rows(_ATTACHMENTS, params) if attached else []
        attachments = [_detached(AttachmentRow, a) for a in attached_rows]
        return SessionData(row, profile, count, last_turn, newest_turns[::-1], attachments, before_turn)

    async def messages_after(self, session_id: str, after: MessageCursor) -> list[MessageTuple]:
        """The messages newer than ``after``, oldest first (what was appended since a replica last read)."""
        return await self._messages(_MESSAGES_AFTER, {"session_id": session_id, "turn": after[0], "id": after[1]})

    async def message_page(self, session_id: str, before: MessageCursor | None, limit: int) -> list[MessageTuple]:
        """Up to ``limit`` messages older than ``before`` (None: the newest), newest first: one index range read."""
        turn, id_ = before if before is not None else (_NO_TURN, 0)
        return await self._messages(_MESSAGE_PAGE, {"session_id": session_id, "turn": turn, "id": id_, "limit": limit})

    async def _messages(self, statement: Any, params: dict[str, Any]) -> list[MessageTuple]:
        async with self.db.read_rows() as connection:
            return [MessageTuple._make(row) for row in await connection.execute(statement, params)]

    async def create(self, fields: dict[str, Any], actor: str) -> SessionRow:
        session_id = fields.pop("id", None) or new_id()
        if self.db.single_writes is not None and fields.keys() <= set(_SESSIONS.c.keys()):
            return await self._created_here(session_id, fields, actor)
        async with self.db.write() as s:
            if await s.get(SessionRow, session_id) is not None:
                raise Conflict(f"a session with id {session_id!r} already exists")
            if await s.get(ProfileRow, fields["profile_id"]) is None:
                raise Invalid(
                    f"no profile {fields['profile_id']!r}",
                    errors=[{"loc": "profile_id", "msg": f"no profile {fields['profile_id']!r}", "type": "missing"}],
                )
            row = SessionRow(id=session_id, **fields)
            s.add(row)
            await s.flush()
            audit.record(s, actor, "create", "session", session_id, None, session_dict(row))
        return row

    async def _created_here(self, session_id: str, fields: dict[str, Any], actor: str) -> SessionRow:
        """``create`` on SQLite by the loop's own connection (``LoopWriter``), by statements compiled at start-up:
        the same checks (the project's filter written out), the same row and audit entry, each column's Python
        default taken as the ORM's flush takes it, without an ORM session (its flush cost ~2.5 ms of a new
        session's first call, ~2 more the process's first: the ORM's statements compiled)."""
        project = scope.current()
        row = _with_defaults(_SESSIONS, {"id": session_id, **fields})
        created = _detached(SessionRow, list(row.values()))

        def create(sql: Statements) -> None:
            if sql.first(_SESSION_IN if project else _SESSION, {"session_id": session_id, "project": project}):
                raise Conflict(f"a session with id {session_id!r} already exists")
            profile_id = fields["profile_id"]
            if sql.first(_PROFILE_IN if project else _PROFILE, {"profile_id": profile_id, "project": project}) is None:
                msg = f"no profile {profile_id!r}"
                raise Invalid(msg, errors=[{"loc": "profile_id", "msg": msg, "type": "missing"}])
            sql.first(_INSERT_SESSION, row)
            audit.record_here(sql, actor, "create", "session", session_id, None, session_dict(created))

        await self.db.write_here(create)
        return created

    async def update(
        self,
        session_id: str,
        fields: dict[str, Any],
        actor: str,
        action: str = "update",
        carry: list[dict[str, Any]] | None = None,
    ) -> SessionRow:
        """``carry``: messages written in the same transaction (what a forward phase change carries)."""
        async with self.db.write() as s:
            row = await _session(s, session_id)
            before = session_dict(row)
            for name, value in fields.items():
                setattr(row, name, value)
            row.updated_at = utcnow()
            if carry:
                await _append(s, session_id, carry)
                await _history_changed(s, session_id)  # carried messages need not come last in the order
            await s.flush()
            audit.record(s, actor, action, "session", session_id, before, session_dict(row))
        return row

    async def delete(self, session_id: str, actor: str) -> None:
        async with self.db.write() as s:
            row = await _session(s, session_id)
            audit.record(s, actor, "delete", "session", session_id, session_dict(row), None)
            await s.delete(row)

    # --- history ---------------------------------------------------------------------------------

    async def messages(self, session_id: str) -> list[MessageRow]:
        async with self.db.read() as s:
            await _session(s, session_id)
            query = (
                select(MessageRow).where(MessageRow.session_id == session_id).order_by(MessageRow.turn, MessageRow.id)
            )
            return list((await s.scalars(query)).all())

    async def turns(self, session_id: str) -> list[TurnRow]:
        async with self.db.read() as s:
            await _session(s, session_id)
            query = select(TurnRow).where(TurnRow.session_id == session_id).order_by(TurnRow.turn)
            return list((await s.scalars(query)).all())

    async def matching_turns(self, session_id: str, filters: dict[str, Any]) -> list[TurnRow]:
        """The session's turns that match every filter (``turn_filters``), in order."""
        async with self.db.read() as s:
            await _session(s, session_id)
            query = select(TurnRow).where(TurnRow.session_id == session_id, *turn_filters(filters))
            return list((await s.scalars(query.order_by(TurnRow.turn))).all())

    async def search(
        self,
        profile_id: str | None,
        filters: dict[str, Any],
        limit: int = 200,
        *,
        find: str | None = None,
        offset: int = 0,
    ) -> list[tuple[SessionRow, list[int]]]:
        """Sessions (newest first; ``limit`` from ``offset``), each with its turns that match every filter; with
        filters, only the sessions that have such a turn. ``find``: whose id, title or user contains it, in any
        case. The turn lists stop at the newest ``SEARCH_TURNS`` matching turns in all."""
        query = select(SessionRow).order_by(SessionRow.created_at.desc(), SessionRow.id).limit(limit).offset(offset)
        if profile_id:
            query = query.where(SessionRow.profile_id == profile_id)
        if find:
            needle = find.lower()
            query = query.where(
                or_(
                    *(
                        func.lower(c).contains(needle, autoescape=True)
                        for c in (SessionRow.id, SessionRow.title, SessionRow.user_id)
                    )
                )
            )
        async with self.db.read() as s:
            if not filters:
                return [(row, []) for row in (await s.scalars(query)).all()]
            # Joined with the sessions always: only the project's turns compete for the SEARCH_TURNS newest.
            turns = (
                select(TurnRow.session_id, TurnRow.turn)
                .join(SessionRow, SessionRow.id == TurnRow.session_id)
                .where(*turn_filters(filters))
            )
            if profile_id:
                turns = turns.where(SessionRow.profile_id == profile_id)
            matched: dict[str, list[int]] = {}
            newest_first = turns.order_by(TurnRow.created_at.desc(), TurnRow.id.desc()).limit(SEARCH_TURNS)
            for session_id, turn in (await s.execute(newest_first)).all():
                matched.setdefault(session_id, []).append(turn)
            for numbers in matched.values():
                numbers.sort()
            rows = (await s.scalars(query.where(SessionRow.id.in_(list(matched))))).all() if matched else []
            return [(row, matched[row.id]) for row in rows]

    async def turn(self, session_id: str, turn: int) -> TurnRow:
        async with self.db.read() as s:
            await _session(s, session_id)
            row = await s.scalar(select(TurnRow).where(TurnRow.session_id == session_id, TurnRow.turn == turn))
            if row is None:
                raise NotFound(f"session {session_id!r} has no turn {turn}")
            return row

    async def newest_turn(self, session_id: str) -> TurnRow | None:
        async with self.db.read() as s:
            await _session(s, session_id)
            query = select(TurnRow).where(TurnRow.session_id == session_id).order_by(TurnRow.turn.desc()).limit(1)
            return await s.scalar(query)

    async def turn_messages(self, session_id: str, turn: int) -> list[MessageTuple]:
        """One turn's messages in the order they were recorded."""
        async with self.db.read_rows() as c:
            return [
                MessageTuple._make(row)
                for row in await c.execute(_TURN_MESSAGES, {"session_id": session_id, "turn": turn})
            ]

    def prepare(self, names: CallNames) -> None:
        """The statements a session's chat call runs by the loop's own connections (SQLite: the session's read, the
        call's place, its snapshot, a new turn or a step and their messages), compiled now for the parameters its
        callers name (``names``), as a call would compile them on first use: at start-up, so the process's first
        session call compiles none (SQLAlchemy's compiler, ~9 ms over its first two calls). Nothing elsewhere."""
        reader, writer = self.db.reader, self.db.single_writes
        if reader is None or writer is None:
            return
        for session in (_SESSION, _SESSION_IN):
            reader.compiled(session, ("session_id", "project"))
            writer.compiled(session, ("session_id", "project"))  # a new session's creation: its check
        for profile in (_PROFILE, _PROFILE_IN):
            writer.compiled(profile, ("profile_id", "project"))
        writer.compiled(_INSERT_SESSION, _SESSIONS.c.keys())
        writer.compiled(audit.INSERT, audit.INSERT_NAMES)
        reader.compiled(CALL_STATE, ("session_id", "request_key"))
        writer.compiled(_INSERT_SNAPSHOT, (*names.snapshot, "of_session"))
        for priced in (("model_call",), ("model_call", "timings_ms")):  # ``Priced.added``: timings when measured
            writer.compiled(_json_set(priced), (*priced, "id"))
        writer.compiled(_INSERT_TURN, ("session_id", *names.turn))
        writer.compiled(_TURN, ("session_id", "turn"))
        writer.compiled(_turn_update(names.step), (*names.step, "row_id"))
        writer.compiled(_INSERT_MESSAGES_ONLY, ("session_id", "turn", *names.message, "token_counts"))
        writer.compiled(_COUNT_MESSAGES, ("session_id", "added"))

    async def call_state(self, session_id: str, request_key: str | None) -> CallState:
        """What a chat client's call is placed and loaded by, in one read (``CALL_STATE``). ``session_id`` is one the
        caller loaded (through the project filter); ``request_key`` None: the turn it opened is not asked for."""
        found = await self.db.first_row(CALL_STATE, {"session_id": session_id, "request_key": request_key})
        if found is None:
            raise NotFound(f"no session {session_id!r}")
        asking, asking_key, newest, key, attached = found
        return CallState(
            TurnEnd(asking, asking_key) if asking is not None else None,
            TurnEnd(newest, key) if newest is not None else None,
            bool(attached),
        )

    async def turn_ending(self, session_id: str, conversation_keys: list[str]) -> TurnEnd | None:
        """The newest turn whose conversation (through its last reply) has one of these digests: the turn a chat
        client's conversation goes on from. ``session_id`` is one the caller loaded."""
        found: TurnEnd | None = None
        async with self.db.read_rows() as c:
            for start in range(0, len(conversation_keys), 500):
                query = (
                    select(_TURNS.c.turn, _TURNS.c.conversation_key)
                    .where(
                        _TURNS.c.session_id == session_id,
                        _TURNS.c.conversation_key.in_(conversation_keys[start : start + 500]),
                    )
                    .order_by(_TURNS.c.turn.desc())
                    .limit(1)
                )
                row = (await c.execute(query)).first()
                if row is not None and (found is None or row[0] > found.turn):
                    found = TurnEnd(row[0], row[1])
        return found

    async def newest_messages(self, session_id: str, limit: int) -> list[MessageRow]:
        """The newest ``limit`` messages, valid or not, oldest first (what a client's copy of the chat ends with)."""
        async with self.db.read() as s:
            await _session(s, session_id)
            query = (
                select(MessageRow)
                .where(MessageRow.session_id == session_id)
                .order_by(MessageRow.turn.desc(), MessageRow.id.desc())
                .limit(limit)
            )
            return list(reversed((await s.scalars(query)).all()))

    async def record_turn(
        self,
        session_id: str,
        turn: dict[str, Any],
        messages: list[dict[str, Any]],
        *,
        returning: bool = True,
        priced: Priced | None = None,
    ) -> tuple[TurnTuple, list[MessageTuple] | list[Row[Any]]]:
        """The turn and its messages in one transaction: a turn is never half-recorded. Returns rows with a
        ``TurnRow``'s and a message page's attributes (``returning`` False: no message rows; a long history's rows
        are then written without being read back and decoded on the event loop). Core inserts on a bare
        connection: an ORM session's unit of work cost more than the writes (3 ms against 1.6); on SQLite a turn's
        few rows go by the loop's own connection (``_recorded_here``). Whether the session exists is asked only if
        the write fails (a turn is recorded right after its session loaded). ``priced``: the model call of the
        turn's snapshot, stored in the same transaction (one commit a turn, not two)."""
        base = {"session_id": session_id, "turn": turn["turn"]}
        counted = await sized(lambda sent: _rows_of(base, sent), messages)  # before the write lock
        recorded = await self._recorded_here(session_id, turn, counted, priced, returning=returning)
        if recorded is not None:
            return recorded
        try:
            async with self.db.write_rows() as c:
                if priced is not None:
                    await _price(c, priced, sqlite=self.db.is_sqlite)
                row = (await c.execute(_INSERT_TURN, {"session_id": session_id, **turn})).one()
                rows = await _insert_messages(c, counted, returning=returning)
                await c.execute(_COUNT_MESSAGES, {"session_id": session_id, "added": len(counted)})
        except Conflict:  # the (session, turn) constraint, or the session is gone
            raise await self._taken_meanwhile(session_id, turn["turn"], priced) from None
        return TurnTuple._make(row), rows

    async def extend_turn(
        self,
        session_id: str,
        turn: int,
        changes: dict[str, Any],
        messages: list[dict[str, Any]],
        *,
        priced: Priced | None = None,
    ) -> TurnTuple:
        """One more step of a turn's tool loop, in one transaction: its messages appended in order, and the
        turn row updated (``results`` and ``plan`` are appended to, token figures added, the rest replaced).
        ``priced``: the model call of the step's snapshot, stored in the same transaction. Returns the turn as it
        now is. Core statements on a bare connection, as ``record_turn``'s (an ORM session's unit of work cost 4.8 ms
        a step against ~1.5); ``session_id`` is one the caller loaded (through the project filter)."""
        counted = await sized(lambda sent: _rows_of({"session_id": session_id, "turn": turn}, sent), messages)
        extended = await self._extended_here(session_id, turn, changes, counted, priced)
        if extended is not None:
            return extended
        async with self.db.write_rows() as c:
            if priced is not None:
                await _price(c, priced, sqlite=self.db.is_sqlite)
            found = (await c.execute(_TURN, {"session_id": session_id, "turn": turn})).first()
            if found is None:
                await self.get(session_id)  # NotFound names the session when it is gone
                raise NotFound(f"session {session_id!r} has no turn {turn}")
            row = TurnTuple._make(found)
            values = _extended(row, changes)
            await c.execute(_turn_update(tuple(values)), {**values, "row_id": row.id})
            await _insert_messages(c, counted, returning=False)
            await c.execute(_COUNT_MESSAGES, {"session_id": session_id, "added": len(counted)})
        return row._replace(**values)

    async def _taken_meanwhile(self, session_id: str, turn: int, priced: Priced | None) -> Conflict:
        """What a turn recorded meanwhile (its number taken, or its session gone: NotFound) tells the caller; the
        model call was made and paid for all the same, so it is stored."""
        if priced is not None:
            await self.record_model_call(priced.snapshot_id, priced.data, priced.call, priced.timings)
        await self.get(session_id)
        return Conflict(f"turn {turn} of session {session_id!r} was recorded meanwhile; send the query again")

    async def _recorded_here(
        self,
        session_id: str,
        turn: dict[str, Any],
        counted: list[dict[str, Any]],
        priced: Priced | None,
        *,
        returning: bool,
    ) -> tuple[TurnTuple, list[MessageTuple]] | None:
        """``record_turn``'s transaction on SQLite by the loop's own connection (``LoopWriter``: a turn's few
        statements without a pooled connection and SQLAlchemy's execution of each, ~1 ms of a turn's record); None
        when it is not one for it (another database, a long history's rows, a priced figure SQLite's JSON cannot
        edit): the pool's way then. ``returning``: the message rows as stored (a native turn's history cache keeps
        them), else none."""
        if not self._here(counted, priced):
            return None

        def record(sql: Statements) -> tuple[TurnTuple, list[MessageTuple]]:
            _price_here(sql, priced)
            row = sql.first(_INSERT_TURN, {"session_id": session_id, **turn})
            assert row is not None
            return TurnTuple._make(row), _insert_here(sql, counted, session_id, returning=returning)

        try:
            return await self._written_here(record)
        except Conflict:
            raise await self._taken_meanwhile(session_id, turn["turn"], priced) from None

    async def _extended_here(
        self,
        session_id: str,
        turn: int,
        changes: dict[str, Any],
        counted: list[dict[str, Any]],
        priced: Priced | None,
    ) -> TurnTuple | None:
        """``extend_turn``'s transaction by the loop's own connection, as ``_recorded_here``; None: the pool's way."""
        if not self._here(counted, priced):
            return None

        def extend(sql: Statements) -> TurnTuple:
            _price_here(sql, priced)
            found = sql.first(_TURN, {"session_id": session_id, "turn": turn})
            if found is None:
                raise _NoTurn  # rolled back, its price too, as the pool's transaction is
            row = TurnTuple._make(found)
            values = _extended(row, changes)
            sql.first(_turn_update(tuple(values)), {**values, "row_id": row.id})
            _insert_here(sql, counted, session_id)
            return row._replace(**values)

        try:
            return await self._written_here(extend)
        except _NoTurn:
            await self.get(session_id)  # NotFound names the session when it is gone
            raise NotFound(f"session {session_id!r} has no turn {turn}") from None

    async def _written_here(self, work: Callable[[Statements], _T]) -> _T | None:
        """``work`` by the loop's own connection; None when SQLite's JSON cannot read the snapshot it prices (a NaN
        stored before): nothing of it was written, and the pool's way takes it."""
        try:
            return await self.db.write_here(work)
        except sqlite3.OperationalError as exc:
            if _MALFORMED_JSON not in str(exc):
                raise
            return None

    def _here(self, counted: list[dict[str, Any]], priced: Priced | None) -> bool:
        """Whether a record goes by the loop's own connection: SQLite, a call's few rows (a long history's are
        written in batches, some in a worker thread), its priced figures plain JSON (no NaN)."""
        if self.db.single_writes is None or len(counted) > OFF_LOOP_ROWS:
            return False
        return priced is None or _json_set_params(priced) is not None

    async def add_messages(self, session_id: str, messages: list[dict[str, Any]], actor: str) -> list[MessageRow]:
        """Import history recorded elsewhere (the platform, the demo)."""
        async with self.db.write() as s:
            await _session(s, session_id)
            rows = await _append(s, session_id, messages)
            await _history_changed(s, session_id)  # imported turns may fall anywhere in the order
            audit.record(s, actor, "add_messages", "session", session_id, None, {"count": len(rows)})
        return rows

    async def set_turn_validity(self, session_id: str, turn: int, valid: bool, actor: str) -> TurnRow:
        async with self.db.write() as s:
            await _session(s, session_id)
            row = await s.scalar(select(TurnRow).where(TurnRow.session_id == session_id, TurnRow.turn == turn))
            if row is None:
                raise NotFound(f"session {session_id!r} has no turn {turn}")
            before = row.valid
            row.valid = valid
            await _history_changed(s, session_id)
            await s.execute(
                update(MessageRow)
                .where(MessageRow.session_id == session_id, MessageRow.turn == turn)
                .values(valid=valid)
            )
            audit.record(
                s,
                actor,
                "turn_validity",
                "session",
                session_id,
                {"turn": turn, "valid": before},
                {"turn": turn, "valid": valid},
            )
        return row

    async def set_turn_labels(self, session_id: str, turn: int, labels: dict[str, Any], actor: str) -> TurnRow:
        """What a person says of the turn (expected evidence, rating), for experiments to check; audited."""
        async with self.db.write() as s:
            await _session(s, session_id)
            row = await s.scalar(select(TurnRow).where(TurnRow.session_id == session_id, TurnRow.turn == turn))
            if row is None:
                raise NotFound(f"session {session_id!r} has no turn {turn}")
            before = {"turn": turn, "labels": row.labels or {}}
            row.labels = labels
            audit.record(s, actor, "turn_labels", "session", session_id, before, {"turn": turn, "labels": labels})
        return row

    async def experiment_slice(
        self,
        *,
        profile_id: str | None,
        type_id: str | None,
        since: datetime | None,
        until: datetime | None,
        session_ids: list[str],
        limit: int,
        sample: str,
    ) -> list[tuple[SnapshotRow, dict[str, Any] | None]]:
        """The first window of each recorded turn in the slice with the turn's labels, newest turns first: the
        ``limit`` newest, or (``sample`` "random") ``limit`` of them at random. Windows assembled in process (their
        inputs stayed with the agent) are not in it."""
        first = select(func.min(SnapshotRow.id)).group_by(SnapshotRow.session_id, SnapshotRow.turn)
        if type_id:
            first = first.where(SnapshotRow.type_id == type_id)
        if since:
            first = first.where(SnapshotRow.created_at >= since)
        if until:
            first = first.where(SnapshotRow.created_at < until)
        if session_ids:
            first = first.where(SnapshotRow.session_id.in_(session_ids))
        if profile_id:
            first = first.where(
                SnapshotRow.session_id.in_(select(SessionRow.id).where(SessionRow.profile_id == profile_id))
            )
        order = func.random() if sample == "random" else SnapshotRow.id.desc()
        query = (
            select(SnapshotRow, TurnRow.labels)
            .outerjoin(TurnRow, (TurnRow.session_id == SnapshotRow.session_id) & (TurnRow.turn == SnapshotRow.turn))
            .where(SnapshotRow.id.in_(first))
            .order_by(order)
            .limit(limit)
        )
        async with self.db.read() as s:
            rows = [(r[0], r[1]) for r in (await s.execute(query)).all()]
            for row, _ in rows:
                set_committed_value(row, "inputs", await _with_chat(s, row.inputs))
        return [(row, labels) for row, labels in rows if "library" not in row.inputs]

    async def purge_memory(self, session_id: str, actor: str) -> dict[str, int]:
        """Mark the whole history invalid: nothing is deleted, so the audit trail and replays keep it."""
        async with self.db.write() as s:
            await _session(s, session_id)
            messages = await s.execute(
                update(MessageRow)
                .where(MessageRow.session_id == session_id, MessageRow.valid.is_(True))
                .values(valid=False)
            )
            turns = await s.execute(
                update(TurnRow).where(TurnRow.session_id == session_id, TurnRow.valid.is_(True)).values(valid=False)
            )
            await _history_changed(s, session_id)
            counts = {"messages_invalidated": rowcount(messages), "turns_invalidated": rowcount(turns)}
            audit.record(s, actor, "purge_memory", "session", session_id, None, counts)
        return counts

    # --- attachments -----------------------------------------------------------------------------

    async def attachments(self, session_id: str, *, loaded: bool = False) -> list[AttachmentRow]:
        """``loaded``: the caller loaded the session (through the project filter), so its attachments are read by
        its id alone, on a bare connection (an ORM session and the session's row again cost ~0.6 ms a call)."""
        if loaded:
            async with self.db.read_rows() as c:
                return [
                    AttachmentRow(**row._mapping) for row in await c.execute(_ATTACHMENTS, {"session_id": session_id})
                ]
        async with self.db.read() as s:
            await _session(s, session_id)
            query = (
                select(AttachmentRow).where(AttachmentRow.session_id == session_id).order_by(AttachmentRow.created_at)
            )
            return list((await s.scalars(query)).all())

    async def add_attachment(self, session_id: str, fields: dict[str, Any], actor: str) -> AttachmentRow:
        async with self.db.write() as s:
            await _session(s, session_id)
            row = AttachmentRow(id=new_id(), session_id=session_id, **fields)
            s.add(row)
            await s.flush()
            audit.record(s, actor, "attach", "session", session_id, None, attachment_dict(row))
        return row

    async def delete_attachment(self, session_id: str, attachment_id: str, actor: str) -> None:
        async with self.db.write() as s:
            await _session(s, session_id)
            row = await s.get(AttachmentRow, attachment_id)
            if row is None or row.session_id != session_id:
                raise NotFound(f"session {session_id!r} has no attachment {attachment_id!r}")
            audit.record(s, actor, "detach", "session", session_id, attachment_dict(row), None)
            await s.delete(row)

    # --- snapshots -------------------------------------------------------------------------------

    async def record_snapshot(self, fields: dict[str, Any]) -> tuple[int, str]:
        """Store a snapshot; returns its id and its session's project (an INSERT ... RETURNING: no ORM object to
        build and flush)."""
        if self.db.single_writes is not None:  # SQLite: one statement, on the loop's own connection
            row = {**fields, "of_session": fields["session_id"]}
            stored = await self.db.write_here(lambda sql: sql.first(_INSERT_SNAPSHOT, row))
            assert stored is not None
            return int(stored[0]), str(stored[1])
        async with self.db.write_rows() as c:
            # Ids commit in id order across replicas, so an SSE resume (id > Last-Event-ID) skips none.
            if self.db.is_postgres:
                await advisory_xact_lock(c, "snapshots")
            stored = (await c.execute(_INSERT_SNAPSHOT, {**fields, "of_session": fields["session_id"]})).one()
            return int(stored[0]), str(stored[1])

    async def record_model_call(
        self, snapshot_id: int, data: dict[str, Any], call: dict[str, Any], timings: dict[str, float] | None = None
    ) -> None:
        """A snapshot's model call (``Priced``) stored on its own: a turn stores it with its record (``record_turn``,
        ``extend_turn``: ``priced``)."""
        async with self.db.write_rows() as c:
            await _price(c, Priced(snapshot_id, data, call, timings), sqlite=self.db.is_sqlite)

    async def snapshot(self, snapshot_id: int) -> SnapshotRow:
        async with self.db.read() as s:
            row = await s.get(SnapshotRow, snapshot_id)
            if row is None:
                raise NotFound(f"no snapshot {snapshot_id}")
            set_committed_value(row, "inputs", await _with_chat(s, row.inputs))
        return row

    async def turn_snapshot_inputs(self, session_id: str, turn: int) -> list[tuple[int, dict[str, Any]]]:
        """The id and inputs of each window assembled for one turn (each step of its tool loop), oldest first."""
        query = (
            select(SnapshotRow.id, SnapshotRow.inputs)
            .where(SnapshotRow.session_id == session_id, SnapshotRow.turn == turn)
            .order_by(SnapshotRow.id)
        )
        async with self.db.read() as s:
            return [(int(i), await _with_chat(s, inputs)) for i, inputs in (await s.execute(query)).all()]

    async def model_calls_of_profile(self, profile_id: str) -> list[tuple[str, dict[str, Any] | None]]:
        """(session id, ``model_call``) of each snapshot of the profile's sessions, oldest first: only that part of
        each snapshot is read (a window's data is large; its call is a few numbers)."""
        query = (
            select(SnapshotRow.session_id, SnapshotRow.data["model_call"])
            .join(SessionRow, SessionRow.id == SnapshotRow.session_id)
            .where(SessionRow.profile_id == profile_id)
            .order_by(SnapshotRow.id)
        )
        async with self.db.read() as s:
            return [(session_id, call) for session_id, call in (await s.execute(query)).all()]

    async def type_figures(self, type_id: str) -> list[Row[Any]]:
        """What metrics per version read of each window assembled under ``type_id``, oldest first: its version,
        session, turn, time, model call, use and condensations (a few fields of each snapshot, not the window)."""
        d = SnapshotRow.data
        query = (
            select(
                SnapshotRow.type_version,
                SnapshotRow.session_id,
                SnapshotRow.turn,
                SnapshotRow.created_at,
                d["model_call"].label("model_call"),
                d["utilisation"].label("utilisation"),
                d["condensations"].label("condensations"),
            )
            .where(SnapshotRow.type_id == type_id)
            .order_by(SnapshotRow.id)
        )
        async with self.db.read() as s:
            return list((await s.execute(query)).all())

    async def snapshots(
        self, session_id: str | None, after_id: int = 0, limit: int = 500, newest_first: bool = False
    ) -> list[SnapshotRow]:
        """Oldest first unless ``newest_first``; ``session_id=None`` means all sessions (the global stream's resume)."""
        order = SnapshotRow.id.desc() if newest_first else SnapshotRow.id
        query = select(SnapshotRow).where(SnapshotRow.id > after_id).order_by(order).limit(limit)
        async with self.db.read() as s:
            if session_id is not None:
                await _session(s, session_id)
                query = query.where(SnapshotRow.session_id == session_id)
            return list((await s.scalars(query)).all())


class CallNames(NamedTuple):
    """The parameters a session's chat call names in its statements (``SessionStore.prepare``), in the order its
    callers build them (a step's UPDATE is built per tuple of columns)."""

    snapshot: tuple[str, ...]
    """A snapshot's fields (``record_snapshot``)."""
    turn: tuple[str, ...]
    """A new turn's fields but its session (``record_turn``)."""
    step: tuple[str, ...]
    """The turn columns a later step changes (``extend_turn``)."""
    message: tuple[str, ...]
    """A message's fields as given to ``record_turn`` and ``extend_turn`` (its token counts are the store's)."""


@dataclass(frozen=True)
class Priced:
    """What a turn's model call reported and cost (``model_call``), for its snapshot: known only after the answer,
    while the snapshot is stored as the model starts answering. ``data``: the snapshot as stored; ``timings``: the
    milliseconds each step took so far (``timings_ms``, for the trace's latency breakdown)."""

    snapshot_id: int
    data: dict[str, Any]
    call: dict[str, Any]
    timings: dict[str, float] | None = None

    def added(self) -> dict[str, Any]:
        """The keys the snapshot's data gains."""
        added: dict[str, Any] = {"model_call": self.call}
        if self.timings:
            added["timings_ms"] = {step: round(ms, 3) for step, ms in self.timings.items() if ms > 0}
        return added


async def _price(c: AsyncConnection | AsyncSession, priced: Priced, *, sqlite: bool) -> None:
    """Adds ``priced``'s keys to its snapshot's data. On SQLite, SQLite adds them to the stored JSON: the ~10 KB
    snapshot is not encoded a second time on the event loop, nor its data read first. The whole data is written
    again on PostgreSQL (its ``json`` has no such edit that keeps the keys' order), and on SQLite when its JSON
    functions cannot read what Python wrote (NaN or infinity in a figure)."""
    added = priced.added()
    if sqlite:
        try:
            params = {key: json.dumps(value, allow_nan=False) for key, value in added.items()}
            await c.execute(_json_set(tuple(added)), {**params, "id": priced.snapshot_id})
            return
        except (ValueError, DBAPIError):  # a failed statement leaves SQLite's transaction as it was
            pass
    whole = update(SnapshotRow).where(SnapshotRow.id == priced.snapshot_id).values(data={**priced.data, **added})
    await c.execute(whole.execution_options(synchronize_session=False))


class _NoTurn(Exception):
    """A step's turn is not in the session (``_extended_here``'s transaction is rolled back)."""


_MALFORMED_JSON = "malformed JSON"
"""SQLite's error when its JSON functions cannot read a snapshot's stored data (NaN or infinity in a figure)."""


def _json_set_params(priced: Priced) -> dict[str, str] | None:
    """``_price``'s values as SQLite's ``json()`` reads them; None when one cannot be (NaN, infinity)."""
    try:
        return {key: json.dumps(value, allow_nan=False) for key, value in priced.added().items()}
    except ValueError:
        return None


def _price_here(sql: Statements, priced: Priced | None) -> None:
    """``_price``'s SQLite edit, in a ``LoopWriter`` transaction."""
    if priced is not None:
        params = _json_set_params(priced)
        assert params is not None  # ``_here`` let only these through
        sql.first(_json_set(tuple(params)), {**params, "id": priced.snapshot_id})


def _insert_here(
    sql: Statements, counted: list[dict[str, Any]], session_id: str, *, returning: bool = False
) -> list[MessageTuple]:
    """A record's message rows and the session's count of them, in a ``LoopWriter`` transaction; ``returning``: the
    rows as stored, in the order given (one INSERT ... RETURNING a row: a turn writes two), else none."""
    stored = []
    if returning:
        stored = [MessageTuple._make(_inserted(sql, row)) for row in counted]
    else:
        for _, alike in itertools.groupby(counted, key=dict.keys):
            sql.many(_INSERT_MESSAGES_ONLY, list(alike))
    sql.first(_COUNT_MESSAGES, {"session_id": session_id, "added": len(counted)})
    return stored


def _inserted(sql: Statements, row: dict[str, Any]) -> tuple[Any, ...]:
    stored = sql.first(_INSERT_MESSAGES, row)
    assert stored is not None  # RETURNING gives the row it inserted
    return stored


@functools.cache
def _json_set(keys: tuple[str, ...]) -> Any:
    """``_price``'s edit of a snapshot's data on SQLite, built once per set of keys (every call adds the same)."""
    paths = ", ".join(f"'$.{key}', json(:{key})" for key in keys)
    return sql_text(f"UPDATE snapshots SET data = json_set(data, {paths}) WHERE id = :id")


async def _with_chat(s: AsyncSession, inputs: Any) -> Any:
    """A chat client's snapshot ``inputs`` with its conversation whole (``inputs.gateway.chat``): a snapshot that
    names the one before it (``chat_from``: its id and how many of its messages this conversation repeats, then
    ``chat_tail``, the messages after them) is put together from the chain back to a whole copy (tda/gateway.py
    names them so that the chain is short: ``_chat_link``). None when a link is gone: the conversation was not kept."""
    gateway = inputs.get("gateway") if isinstance(inputs, dict) else None
    if not isinstance(gateway, dict) or "chat_from" not in gateway:
        return inputs
    links: list[tuple[int, list[Any]]] = []
    at = gateway
    while isinstance(at.get("chat_from"), dict) and len(links) <= CHAT_LINKS:
        links.append((int(at["chat_from"]["keep"]), at.get("chat_tail") or []))
        before = await s.scalar(select(SnapshotRow.inputs).where(SnapshotRow.id == at["chat_from"]["snapshot_id"]))
        at = (before or {}).get("gateway") or {}
    chat = at.get("chat") if "chat_from" not in at else None
    for keep, tail in reversed(links):
        chat = None if chat is None else [*chat[:keep], *tail]
    kept = {k: v for k, v in gateway.items() if k not in ("chat_from", "chat_tail")}
    return {**inputs, "gateway": {**kept, "chat": chat}}


CHAT_LINKS = 64
"""The longest chain of snapshots followed back to a whole copy of a conversation (tda/gateway.py's are at most
log2 of a session's calls long: ``_chat_link``)."""
SEARCH_TURNS = 5_000
"""A search lists at most this many matching turns (a page of sessions never needs more)."""


def turn_filters(filters: dict[str, Any]) -> list[Any]:
    """SQL conditions on ``TurnRow`` for a search's filters (type_id, model, outcome, since, until, q)."""
    conditions: list[Any] = []
    if "type_id" in filters:
        conditions.append(
            exists().where(SnapshotRow.id == TurnRow.snapshot_id, SnapshotRow.type_id == filters["type_id"])
        )
    if "model" in filters:
        conditions.append(TurnRow.model == filters["model"])
    if "outcome" in filters:
        conditions.append(TurnRow.outcome == filters["outcome"])
    if "since" in filters:
        conditions.append(TurnRow.created_at >= filters["since"])
    if "until" in filters:
        conditions.append(TurnRow.created_at < filters["until"])
    if "q" in filters:
        text = filters["q"]
        in_messages = exists().where(
            MessageRow.session_id == TurnRow.session_id,
            MessageRow.turn == TurnRow.turn,
            MessageRow.content.icontains(text, autoescape=True),
        )
        conditions.append(
            or_(
                TurnRow.query.icontains(text, autoescape=True),
                TurnRow.answer.icontains(text, autoescape=True),
                in_messages,
            )
        )
    return conditions


async def _append(s: AsyncSession, session_id: str, messages: list[dict[str, Any]]) -> list[MessageRow]:
    """Add messages with their token counts per encoding, and count them on the session's row."""
    rows = [MessageRow(session_id=session_id, token_counts=_token_counts(m), **m) for m in messages]
    s.add_all(rows)
    await s.flush()
    await s.execute(_COUNT_MESSAGES, {"session_id": session_id, "added": len(rows)})
    return rows


_ASKING = (
    select(TurnRow.turn)
    .where(TurnRow.session_id == bindparam("session_id"), TurnRow.request_key == bindparam("request_key"))
    .order_by(TurnRow.turn.desc())
    .limit(1)
)
"""Read through ix_turns_request: its cost is the session's number of turns' logarithm, not that number."""
_NEWEST_TURN = (
    select(TurnRow.turn).where(TurnRow.session_id == bindparam("session_id")).order_by(TurnRow.turn.desc()).limit(1)
)
CALL_STATE = select(
    _ASKING.scalar_subquery(),
    _ASKING.with_only_columns(TurnRow.conversation_key).scalar_subquery(),
    _NEWEST_TURN.scalar_subquery(),
    _NEWEST_TURN.with_only_columns(TurnRow.conversation_key).scalar_subquery(),
    exists().where(AttachmentRow.session_id == bindparam("session_id")),
).where(SessionRow.id == bindparam("session_id"))
"""``call_state``: the turn a conversation opened and the newest turn (each with its conversation's digest) and
whether there are attachments, each an index probe, in one statement (no row: no such session)."""
_TURN_MESSAGES = (
    select(*_MESSAGE_COLUMNS)
    .where(MessageRow.session_id == bindparam("session_id"), MessageRow.turn == bindparam("turn"))
    .order_by(MessageRow.id)
)
_COUNT_MESSAGES = (
    update(SessionRow)
    .where(SessionRow.id == bindparam("session_id"))
    .values(message_count=SessionRow.message_count + bindparam("added"))
    .execution_options(synchronize_session=False)
)
# Of the tables, not the mapped classes: a mapped class's insert goes through the ORM's bulk machinery.
_SNAPSHOTS, _TURNS, _MESSAGES = (Base.metadata.tables[row.__tablename__] for row in (SnapshotRow, TurnRow, MessageRow))
_SESSIONS = Base.metadata.tables[SessionRow.__tablename__]
_SESSION = select(*_SESSIONS.c).where(_SESSIONS.c.id == bindparam("session_id"))
_SESSION_IN = _SESSION.where(_SESSIONS.c.project_id == bindparam("project"))
"""``get``'s, in the acting project (``scope.current``)."""
_INSERT_SESSION = insert(_SESSIONS)
"""A new session's row, every column named (``_with_defaults``)."""
_PROFILE = select(ProfileRow.id).where(ProfileRow.id == bindparam("profile_id"))
_PROFILE_IN = _PROFILE.where(ProfileRow.project_id == bindparam("project"))
"""Whether a session's profile is there (in the acting project: the ORM's filter written out), as ``create``'s."""
_INSERT_SNAPSHOT = (
    insert(_SNAPSHOTS)
    .values(  # the session's project, whoever stores it (an operator's call is in no project)
        project_id=select(_SESSIONS.c.project_id).where(_SESSIONS.c.id == bindparam("of_session")).scalar_subquery()
    )
    .returning(_SNAPSHOTS.c.id, _SNAPSHOTS.c.project_id)
)
_INSERT_TURN = insert(_TURNS).returning(*_TURN_COLUMNS)
_TURN = select(*_TURN_COLUMNS).where(_TURNS.c.session_id == bindparam("session_id"), _TURNS.c.turn == bindparam("turn"))
_INSERT_MESSAGES_ONLY = insert(_MESSAGES)
_INSERT_MESSAGES = insert(_MESSAGES).returning(*(_MESSAGES.c[c.key] for c in _MESSAGE_COLUMNS))
_INSERT_MESSAGES_IN_ORDER = insert(_MESSAGES).returning(
    *(_MESSAGES.c[c.key] for c in _MESSAGE_COLUMNS), sort_by_parameter_order=True
)
"""PostgreSQL's RETURNING may list a multi-row insert's rows in any order: SQLAlchemy puts them in the order given.
It cannot on SQLite (it would insert row by row), where it need not: SQLite inserts the rows in the order given and
an AUTOINCREMENT id only grows, so ordered by id they are in that order."""
MESSAGE_BATCH = 200
"""Message rows per INSERT: a long history is written in a few hundred statements, not one per message (100,000
took ~30 s one by one, the write lock held all the while), each short enough not to hold up the event loop (~7 ms
of binding and writing on a loaded machine)."""


async def _insert_messages(c: AsyncConnection, rows: list[dict[str, Any]], *, returning: bool = True) -> list[Row[Any]]:
    """Insert ``rows``, ids in the order given, and return them as stored (``returning`` False: nothing)."""
    sqlite = c.dialect.name == "sqlite"
    stored: list[Row[Any]] = []
    for _, alike in itertools.groupby(rows, key=dict.keys):  # one statement's rows name the same columns
        batch = list(alike)
        for start in range(0, len(batch), MESSAGE_BATCH):
            some = batch[start : start + MESSAGE_BATCH]
            if sqlite and not returning:  # an executemany, nothing read back
                await c.execute(_INSERT_MESSAGES_ONLY, some)
            elif sqlite:
                stored += sorted((await c.execute(_INSERT_MESSAGES, some)).all(), key=lambda row: row.id)
            else:  # PostgreSQL: its ids in the order given are SQLAlchemy's to keep, with RETURNING
                stored += (await c.execute(_INSERT_MESSAGES_IN_ORDER, some)).all()
    return stored if returning else []


def _rows_of(base: dict[str, Any], messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The message rows to insert: ``base`` (session, turn) and each message's fields, with its token counts."""
    rows = [{**base, **m} for m in messages]
    return [{**fields, "token_counts": _token_counts(fields)} for fields in rows]


def _extended(row: TurnTuple, changes: dict[str, Any]) -> dict[str, Any]:
    """A turn's columns after one more step (``extend_turn``): results and plan appended to, tokens added."""
    values = dict(changes)
    if "results" in changes:
        values["results"] = [*(row.results or []), *changes["results"]]
    if "plan" in changes:
        values["plan"] = "\n".join(p for p in (row.plan, changes["plan"]) if p)
    for name in ("tokens_in", "tokens_out"):
        if name in changes:
            values[name] = getattr(row, name) + changes[name]
    return values


@functools.cache
def _turn_update(columns: tuple[str, ...]) -> Any:
    """The UPDATE of a turn's ``columns`` by its id, built once per set of columns (a step changes the same ones)."""
    return update(_TURNS).where(_TURNS.c.id == bindparam("row_id")).values({n: bindparam(n) for n in columns})


async def _history_changed(s: AsyncSession, session_id: str) -> None:
    await s.execute(
        update(SessionRow)
        .where(SessionRow.id == session_id)
        .values(history_version=SessionRow.history_version + 1)
        .execution_options(synchronize_session=False)
    )


def _token_counts(fields: dict[str, Any]) -> dict[str, int] | None:
    message = Message(
        role=fields.get("role", "user"),
        content=fields.get("content") or "",
        tool_calls=tuple(fields.get("tool_calls") or ()),
        tool_call_id=fields.get("tool_call_id"),
        name=fields.get("name"),
        parts=tuple(fields["parts"]) if fields.get("parts") else None,
    )
    return counts_to_store(message) or None


async def _session(s: AsyncSession, session_id: str) -> SessionRow:
    row = await s.get(SessionRow, session_id)
    if row is None:
        raise NotFound(f"no session {session_id!r}")
    return row
