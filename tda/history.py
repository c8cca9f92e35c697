"""A session's history as the component's MessageSource: paged newest first from the store, and the messages
already read kept per session, so a turn reads from the database only what was added since the one before.

What is kept is a contiguous run of a session's newest messages. It stays right while the session's
``history_version`` is unchanged: recording a turn only appends (a turn's own messages are added as it records
them; what another replica appended is read with one "newer than" query, when the session's message count says
there is some), and every other change to the history (validity, purge, imported messages) bumps the version,
which drops the run.
The version lives in the database, so a change made through another replica is seen here on the next turn.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from components.context_window.base import Message, MessagePage, MessageSource

from .store.sessions import MessageCursor, SessionData, SessionStore

READ_AHEAD = 256
"""Messages fetched at least per database read when a walk goes past what is kept (fewer round trips)."""


COUNTS_KEPT = 4096
"""Distinct stored-count mappings kept to be shared (then the table starts again): a session's messages' counts
repeat (short questions and answers of alike lengths), and one kept message's own decoded dict, with its own copies
of the encodings' names, was ~310 bytes (a native session keeps two a turn for its life)."""
_shared_counts: dict[tuple[tuple[str, Any], ...], Mapping[str, int]] = {}


def shared_counts(counts: Mapping[str, int] | None) -> Mapping[str, int] | None:
    """``counts`` as one shared, equal mapping for every message with the same figures (never changed in place: a
    message's ``tokens`` is read only), its keys the interned encoding names."""
    if not counts:
        return counts
    items = tuple(counts.items())
    found = _shared_counts.get(items)
    if found is None:
        if len(_shared_counts) >= COUNTS_KEPT:
            _shared_counts.clear()
        found = _shared_counts[items] = {sys.intern(name): value for name, value in items}
    return found


def message_of(row: Any) -> Message:
    """A stored message row (ORM or Core) as the component's Message, its stored token counts included."""
    return Message(
        role=row.role,
        content=row.content,
        turn=row.turn,
        valid=row.valid,
        tool_calls=tuple(row.tool_calls or ()),
        tool_call_id=row.tool_call_id,
        name=row.name,
        phase=row.phase,
        tokens=shared_counts(row.token_counts),
        parts=tuple(row.parts) if row.parts else None,
    )


def fingerprint(row: Any) -> str:
    """Identifies a message as read (replay compares them): its id, turn, validity and content."""
    digest = hashlib.blake2b(row.content.encode(), digest_size=8).hexdigest()
    return f"{row.id}:{row.turn}:{int(bool(row.valid))}:{digest}"


@dataclass(eq=False)
class _Run:
    """The newest messages of one session, oldest first; ``complete`` once they reach its first message."""

    key: tuple[str, str]
    version: int
    keys: list[MessageCursor] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    prints: list[str] = field(default_factory=list)
    complete: bool = False
    synced: int = -1
    """The session's message count when the run last held all of its newest messages (-1: not yet)."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def add(self, rows: list[Any], *, older: bool) -> None:
        """Rows oldest first; ``older``: they go before what is kept, else after it."""
        keys = [(r.turn, r.id) for r in rows]
        messages = [message_of(r) for r in rows]
        prints = [fingerprint(r) for r in rows]
        if older:
            self.keys[:0], self.messages[:0], self.prints[:0] = keys, messages, prints
        else:
            self.keys += keys
            self.messages += messages
            self.prints += prints


KEPT_MESSAGES = 5_000
"""Messages kept over all sessions (~0.5 KB each: a few MB). The sessions turned over most recently stay; a session
dropped from here reads its history from the database again, a page per window (20,000 kept grew a long-running
server by ~10 MB for hits on sessions that were idle anyway). One session alone keeps its newest this many: a
window reaches far less deep, and a session of 10,000 turns held every message it ever recorded."""


class HistoryCache:
    """Per session (by id and creation time: a deleted and re-created id starts afresh), the kept run."""

    def __init__(self, sessions: SessionStore, max_messages: int = KEPT_MESSAGES) -> None:
        self.sessions = sessions
        self.max_messages = max_messages
        self._runs: OrderedDict[tuple[str, str], _Run] = OrderedDict()
        self._kept = 0

    async def source(self, data: SessionData) -> StoredHistory:
        """The session's history as this turn sees it (before ``data.before_turn`` for a continuation or replay)."""
        run = await self._current(data)
        return StoredHistory(self, run, data)

    async def _current(self, data: SessionData) -> _Run:
        key = (data.session.id, data.session.created_at.isoformat())
        run = self._runs.get(key)
        stored = data.stored_messages  # the whole history's, whatever part this turn sees
        if run is None or run.version != data.session.history_version or not run.keys:
            # empty: whatever is read from here on is the newest (the turn holds the session's lock)
            run = self._replace(_Run(key, data.session.history_version, complete=stored == 0, synced=stored))
        elif run.synced != stored:  # messages were added since (by a turn recorded elsewhere): read them
            async with run.lock:
                rows = await self.sessions.messages_after(data.session.id, run.keys[-1])
                self._add(run, rows, older=False)
                run.synced = stored
            if len(run.keys) > stored or (run.complete and len(run.keys) != stored):
                # Written meanwhile by another replica, or not by appending: start again from the database.
                run = self._replace(_Run(key, data.session.history_version, complete=stored == 0))
        if self._runs.get(key) is run:  # else dropped while it read (other sessions needed the room): used uncached
            self._runs.move_to_end(key)
        self._evict()
        return self._runs.get(key) or run  # trimmed by the eviction: the run now kept

    def recorded(self, data: SessionData, rows: list[Any]) -> None:
        """``rows`` were just appended to the session ``data`` was loaded for, by its turn, under the session's lock
        (every other way of adding messages bumps ``history_version``): kept with its run, no read next turn."""
        run = self._runs.get((data.session.id, data.session.created_at.isoformat()))
        if run is None or run.synced != data.stored_messages or not rows:
            return  # not in sync when the turn began: the next turn reads what is new
        if run.keys and (rows[0].turn, rows[0].id) < run.keys[-1]:
            return
        self._add(run, rows, older=False)
        run.synced = data.stored_messages + len(rows)
        self._evict()

    def after_recorded(self, data: SessionData) -> SessionData | None:
        """``data`` as it stands once its turn's messages were kept here (``recorded``): what the turn's indexing
        would read the session again for. None when they were not (not in sync, a replay or a continuation's
        data): the indexing reads it."""
        run = self._runs.get((data.session.id, data.session.created_at.isoformat()))
        if data.before_turn is not None or run is None or run.version != data.session.history_version:
            return None
        added = run.synced - data.stored_messages
        if added <= 0 or not run.keys:
            return None
        return data.with_recorded(added, run.keys[-1][0])

    async def read_older(self, session_id: str, run: _Run, want: int) -> None:
        """Extend ``run`` back by at least ``want`` messages (fewer when the history starts sooner)."""
        limit = max(want, READ_AHEAD)
        rows = await self.sessions.message_page(session_id, run.keys[0] if run.keys else None, limit)
        self._add(run, rows[::-1], older=True)
        if len(rows) < limit:
            run.complete = True
        self._evict()

    def _add(self, run: _Run, rows: list[Any], *, older: bool) -> None:
        run.add(rows, older=older)
        if self._runs.get(run.key) is run:  # a run dropped meanwhile is no longer counted
            self._kept += len(rows)

    def _replace(self, run: _Run) -> _Run:
        old = self._runs.pop(run.key, None)
        if old is not None:
            self._kept -= len(old.keys)
        self._runs[run.key] = run
        return run

    def _evict(self) -> None:
        while self._kept > self.max_messages and len(self._runs) > 1:
            _, run = self._runs.popitem(last=False)
            self._kept -= len(run.keys)
        if self._kept > self.max_messages and self._runs:  # one session alone over the bound: its oldest go
            self._trim(next(iter(self._runs.values())), self._kept - self.max_messages)

    def _trim(self, run: _Run, cut: int) -> None:
        """``run`` without its ``cut`` oldest messages, as a new run: a turn reading the old one (it holds it) goes
        on with what it holds, and a walk reaching further back reads the rest from the database again."""
        trimmed = _Run(run.key, run.version, run.keys[cut:], run.messages[cut:], run.prints[cut:], synced=run.synced)
        self._runs[run.key] = trimmed
        self._kept -= cut

    def stats(self) -> dict[str, int]:
        return {"sessions": len(self._runs), "messages": self._kept}


class StoredHistory:
    """One turn's view of a session's history: the kept run as it was when the turn began, extended back on demand."""

    def __init__(self, cache: HistoryCache, run: _Run, data: SessionData) -> None:
        self._cache = cache
        self._run = run
        self._session_id = data.session.id
        self.total = data.message_count
        self.last_turn = data.last_message_turn
        self._upper: MessageCursor | None = (data.before_turn, 0) if data.before_turn is not None else None
        """Keys below this are this turn's history: those before its own turn (a continuation, a replay), else
        those kept when it began (a later turn's messages, appended meanwhile, are not)."""
        if self._upper is None and run.keys:
            self._upper = _after(run.keys[-1])
        self._oldest_read: MessageCursor | None = None
        self.version = (run.key, run.version)
        """Changes whenever the history changes other than by appending (``MessageSource``'s optional version)."""

    def _end(self, cursor: MessageCursor | None) -> int:
        bound = cursor if cursor is not None else self._upper
        return bisect_left(self._run.keys, bound) if bound is not None else len(self._run.keys)

    async def page(self, cursor: Any, limit: int) -> MessagePage:
        run = self._run
        cursor = tuple(cursor) if cursor is not None else None
        async with run.lock:
            if self._end(cursor) < limit and not run.complete:
                await self._cache.read_older(self._session_id, run, limit - self._end(cursor))
                if self._upper is None and run.keys:
                    self._upper = _after(run.keys[-1])
            end = self._end(cursor)
            start = max(0, end - limit)
            if start < end:
                first = run.keys[start]
                self._oldest_read = first if self._oldest_read is None else min(first, self._oldest_read)
            older = run.keys[start] if end and (start > 0 or not run.complete) else None
            return MessagePage(run.messages[start:end][::-1], older)

    @property
    def read(self) -> list[str]:
        """Fingerprints of the messages this turn read, oldest first (what replay compares)."""
        if self._oldest_read is None:
            return []
        run = self._run
        return run.prints[bisect_left(run.keys, self._oldest_read) : self._end(None)]


def history_read(source: MessageSource) -> list[str] | None:
    """What a stored history's walk read, or None for an in-memory one."""
    return source.read if isinstance(source, StoredHistory) else None


def _after(key: MessageCursor) -> MessageCursor:
    """The smallest key after ``key``."""
    return (key[0], key[1] + 1)
