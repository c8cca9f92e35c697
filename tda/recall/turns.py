"""Earlier turns in the service: what plan_hydration and workflow_history search of a session's turns beyond the newest
``RECENT_TURNS`` a turn loads (``EarlierTurns`` in the component), kept as turns are recorded.

Per session, one entry per turn: its validity, its phase and each module's description of it (``describe`` runs once per
turn and kind; the results themselves are not kept). A recorded turn is described, and its gist embedded, by the
background writer right after the response, holding the session's lock (``index_turn_after``): the next turn finds both
ready and embeds only its own query (the gist only of a session whose turns a module searches: not the gateway's). A
replica meeting a session for the first time (another one recorded it, or it restarted) reads the turns from the
database once, at the first turn that asks. Validity is the database's: the session's ``history_version`` moves with
every validity change and memory purge, and then the flags are read again (one light query); the phase is the window's
own, so a move to a later phase hides the earlier phases' turns at once. A recalled turn's whole record is read when it
is recalled, by number, in one query.
"""

from __future__ import annotations

import asyncio
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import BigInteger, bindparam, select

from components.context_window.base import D, Embedder, TurnRecord
from components.context_window.grown import Numbered
from components.context_window.phases import visible
from components.context_window.recall.turns import TurnRecall, turn_gist
from components.context_window.session_cache import BoundedCache

from ..knowledge.scope import session_key
from ..models import SessionRow, TurnRow
from ..store.sessions import TurnTuple

if TYPE_CHECKING:
    from ..background import BackgroundWriter
    from ..db import Database

Key = tuple[str, str]
"""A session's id, and its id with its creation time (``session_key``)."""
PAGE = 256
"""Turns read at a time when a session is met for the first time (their results are described, then let go)."""
RECALLED = 16
"""Whole records kept per session of the turns recalled lately."""
OPEN = "tool_calls"
"""The outcome of a turn whose tool loop may still go on (on another replica): described again once it is older."""

_COLUMNS = tuple(TurnRow.__table__.columns)
_BETWEEN = (
    select(*_COLUMNS)
    .where(
        TurnRow.session_id == bindparam("session_id"),
        TurnRow.turn >= bindparam("start", type_=BigInteger),
        TurnRow.turn < bindparam("end", type_=BigInteger),
    )
    .order_by(TurnRow.turn)
    .limit(PAGE)
)
_NUMBERED = select(*_COLUMNS).where(
    TurnRow.session_id == bindparam("session_id"), TurnRow.turn.in_(bindparam("numbers", expanding=True))
)
_VALIDITY = select(TurnRow.turn, TurnRow.valid).where(TurnRow.session_id == bindparam("session_id"))


def record_of(row: Any) -> TurnRecord:
    """A turn row (``TurnTuple`` or ``TurnRow``) as the component's record."""
    return TurnRecord(
        turn=row.turn,
        query=row.query,
        plan=row.plan,
        answer=row.answer,
        outcome=row.outcome,
        tokens_in=row.tokens_in,
        tokens_out=row.tokens_out,
        results=tuple(row.results or ()),
        valid=row.valid,
        phase=row.phase,
    )


_UNDESCRIBED: Any = object()


class _Entries:
    """Per turn number, what the index keeps of a turn in columns: whether it has an entry and is valid (a byte), its
    phase (the number of its name), and per kind its description (``_UNDESCRIBED``: none yet). A turn's number is its
    place: a session's turns are numbered 0, 1, 2, ... Held for the session's life: ~20 bytes a turn and no object of
    its own (an entry object a turn, its tuple of descriptions and its dict slot were ~175 bytes, and one more object
    for every full pass of the collector to walk; docs/history/benchmarks-log.md, "Session 52 (memflat10)")."""

    ENTERED, VALID = 1, 2

    def __init__(self) -> None:
        self._flags = bytearray()
        self._phases = array("H")
        self._phase_names: list[str | None] = [None]
        self._described: list[list[Any]] = []
        """Per kind (``TurnIndex._describers``' order), per turn number."""
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def __contains__(self, number: int) -> bool:
        return 0 <= number < len(self._flags) and bool(self._flags[number] & self.ENTERED)

    def numbers(self, below: int | None = None) -> Iterator[int]:
        """The numbers with an entry (below ``below``), ascending."""
        flags = self._flags
        end = len(flags) if below is None else min(below, len(flags))
        return (n for n in range(end) if flags[n] & self.ENTERED)

    def enter(self, number: int, valid: bool, phase: str | None, described: tuple[Any, ...]) -> None:
        if number < 0:
            raise ValueError(f"turn {number}: a session's turns are numbered from 0")
        if number >= len(self._flags):
            grow = number + 1 - len(self._flags)
            self._flags.extend(bytes(grow))
            self._phases.frombytes(bytes(2 * grow))
            for column in self._described:
                column.extend([_UNDESCRIBED] * grow)
        if not self._flags[number] & self.ENTERED:
            self._count += 1
        self._flags[number] = self.ENTERED | (self.VALID if valid else 0)
        self._phases[number] = self._phase_number(phase)
        while len(self._described) < len(described):
            self._described.append([_UNDESCRIBED] * len(self._flags))
        for slot, column in enumerate(self._described):
            column[number] = described[slot] if slot < len(described) else _UNDESCRIBED

    def valid(self, number: int) -> bool:
        return number in self and bool(self._flags[number] & self.VALID)

    def set_valid(self, number: int, valid: bool) -> None:
        self._flags[number] = self.ENTERED | (self.VALID if valid else 0)

    def phase(self, number: int) -> str | None:
        return self._phase_names[self._phases[number]]

    def shown_in(self, number: int, phase: str | None) -> bool:
        """Whether ``number`` has an entry, is valid and is visible in ``phase``."""
        return self.valid(number) and visible(self.phase(number), phase)

    def description(self, number: int, slot: int) -> Any:
        return self._described[slot][number] if slot < len(self._described) else _UNDESCRIBED

    def forget(self, slot: int) -> None:
        """Every turn's description of the kind at ``slot`` let go (its module asks anew)."""
        if slot < len(self._described):
            self._described[slot] = [_UNDESCRIBED] * len(self._flags)

    def _phase_number(self, phase: str | None) -> int:
        try:
            return self._phase_names.index(phase)
        except ValueError:
            self._phase_names.append(phase)
            return len(self._phase_names) - 1


@dataclass(eq=False)
class _Session:
    entries: _Entries = field(default_factory=_Entries)
    read_below: int = 0
    """Every turn numbered below this has an entry (read from the database or recorded here)."""
    open: set[int] = field(default_factory=set)
    """The turns whose entry is not final (a sync looks at these, not at every entry)."""
    listed: dict[tuple[str, str | None], tuple[int, int, Numbered[Any]]] = field(default_factory=dict)
    """Per kind and phase, the last list ``described`` made: (generation, before, list). The next turn's list is it
    and the turns since, while no entry below its end changed (a session's turns only grow, most turns): appended in
    place, so neither is copied, and a module holding the last one sees the new one extend it (``Numbered.extends``).
    A list is two columns, the turns' numbers and their descriptions: no (number, description) pair held a turn; a
    turn described as ``None`` is not in it (nothing of it to search: plan_hydration's turns without results, most of
    a chat's turns, listed a number and a pointer each for the session's life before)."""
    generation: int = 0
    """Bumped whenever the entries may have changed anywhere (validity read again, a module asking anew): every list
    is made afresh. A turn entered again (its tool loop went on) or below a list's end cuts the lists there instead."""
    listed_below: int = 0
    """The largest ``before`` of a list in ``listed``."""
    version: int | None = None
    """The session's ``history_version`` the validity flags were read at."""
    recalled: BoundedCache[int, TurnRecord] = field(default_factory=lambda: BoundedCache(RECALLED))
    """Whole records of turns recalled lately: a turn a conversation keeps coming back to is read once."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def searched(self) -> bool:
        """Whether a module has asked for this session's earlier turns (``described``) since the entry was made."""
        return bool(self.listed)


class TurnIndex:
    """Every session's earlier turns as the modules search them (a bounded number of sessions, least recent out)."""

    def __init__(self, db: Database, embedder: Callable[[], Embedder | None], max_sessions: int = 64) -> None:
        self._db = db
        self._embedder = embedder
        self._sessions: BoundedCache[Key, _Session] = BoundedCache(max_sessions)
        """By session id and creation time: a session deleted and created again under its id starts afresh, on
        every replica."""
        self._describers: dict[str, Callable[[TurnRecord], Any]] = {}
        """Per kind, the describer a module last asked with: recorded turns are described with each at once."""

    def bound(self, session: SessionRow, phase: str | None) -> SessionTurns:
        """The component's ``EarlierTurns`` for one window of ``session`` in ``phase`` (the session's, or the replayed
        turn's), at its history version."""
        return SessionTurns(self, _key(session), phase, session.history_version)

    def forget(self, session_id: str) -> None:
        self._sessions.discard_where(lambda key: key[0] == session_id)

    def stats(self) -> dict[str, int]:
        return {"sessions": len(self._sessions), "turns": sum(len(s.entries) for s in self._sessions.values())}

    async def recorded(self, session: Key, row: Any) -> None:
        """A turn just recorded (or extended): described for every kind asked for so far, and its gist embedded when a
        module searches the session's turns (an embedder that fails leaves the description: the turn then embeds the
        gist itself). A session whose windows never hand turns (the gateway's: the client sends the conversation) has
        its gists searched by no one: embedding them cost ~20% of the embedder's work a gateway turn (43 of ~200 word
        pieces). A session searched later embeds the gists missing then, at its first search, as after a restart."""
        record = record_of(row)
        state = self._state(session)
        async with state.lock:
            self._enter(state, record)
        embedder = self._embedder()
        if embedder is not None and state.searched:
            await TurnRecall.embed_parts([turn_gist(record)], embedder)

    async def described(
        self,
        session: Key,
        phase: str | None,
        version: int,
        kind: str,
        describe: Callable[[TurnRecord], D],
        before: int,
    ) -> Numbered[D]:
        session_id = session[0]
        if self._describers.get(kind) is not describe:  # a module asks for the first time (or was reloaded)
            self._describers[kind] = describe
            for s in self._sessions.values():
                s.generation += 1
                s.entries.forget(self._slot(kind))
        slot = self._slot(kind)
        state = self._state(session)
        async with state.lock:
            await self._sync(session_id, state, version, before)
            listed = self._extended(state, kind, slot, phase, before)
            if listed is None:
                entries = state.entries
                numbers = [n for n in entries.numbers(before) if entries.shown_in(n, phase)]
                missing = [n for n in numbers if entries.description(n, slot) is _UNDESCRIBED]
                if missing:  # recorded before this kind was asked for: read once
                    for record in await self._read(session_id, missing):
                        self._enter(state, record)
                described = ((n, entries.description(n, slot)) for n in numbers)
                listed = Numbered((n, d) for n, d in described if d is not _UNDESCRIBED and d is not None)
            state.listed[(kind, phase)] = (state.generation, before, listed)
            state.listed_below = max(state.listed_below, before)
            return listed  # read-only: the next turn's list extends it in place

    @staticmethod
    def _extended(state: _Session, kind: str, slot: int, phase: str | None, before: int) -> Numbered[Any] | None:
        """The last list of ``kind`` in ``phase`` and the turns from its end to ``before`` (None: it no longer holds,
        or a turn to add has no description of this kind yet)."""
        last = state.listed.get((kind, phase))
        if last is None or last[0] != state.generation or last[1] > before:
            return None
        added = []
        for n in range(last[1], before):
            if not state.entries.shown_in(n, phase):
                continue
            description = state.entries.description(n, slot)
            if description is _UNDESCRIBED:
                return None
            if description is not None:  # nothing of it to search (plan_hydration's turn without results)
                added.append((n, description))
        return last[2].appended(added) if added else last[2]

    async def records(self, session: Key, phase: str | None, numbers: Sequence[int]) -> list[TurnRecord]:
        state = self._state(session)
        async with state.lock:
            missing = [n for n in numbers if state.recalled.get(n) is None]
            for record in await self._read(session[0], missing) if missing else []:
                state.recalled.put(record.turn, record)
            found = [r for n in numbers if (r := state.recalled.get(n)) is not None]
            # validity as of this window's sync (the entry's flag), not as cached
            usable = [r for r in found if state.entries.valid(r.turn)]
        return sorted((r for r in usable if visible(r.phase, phase)), key=lambda r: r.turn)

    def _slot(self, kind: str) -> int:
        """Where ``kind``'s description is in an entry's ``described``."""
        return list(self._describers).index(kind)

    def _state(self, session: Key) -> _Session:
        state = self._sessions.get(session)
        if state is None:
            return self._sessions.put(session, _Session())
        self._sessions.touch(session)
        return state

    def _enter(self, state: _Session, record: TurnRecord) -> None:
        described = tuple(describe(record) for describe in self._describers.values())
        if record.turn in state.entries or record.turn < state.listed_below:  # a list may hold it, or miss it
            _cut_lists(state, record.turn)
        state.entries.enter(record.turn, record.valid, record.phase, described)
        if record.outcome != OPEN:
            state.open.discard(record.turn)
        else:
            state.open.add(record.turn)

    async def _sync(self, session_id: str, state: _Session, version: int, before: int) -> None:
        """Entries for every turn below ``before``, as they now are."""
        if state.version != version and state.entries:  # validity changed (a turn, a purge) or never read here
            async with self._db.read_rows() as c:
                flags = {number: valid for number, valid in await c.execute(_VALIDITY, {"session_id": session_id})}
            for number in state.entries.numbers():
                state.entries.set_valid(number, flags.get(number, False))
            state.recalled.clear()
            state.generation += 1
        state.version = version
        while state.read_below < before:  # turns recorded elsewhere, or before this process met the session
            if all(n in state.entries for n in range(state.read_below, before)):
                state.read_below = before
                break
            params = {"session_id": session_id, "start": state.read_below, "end": before}
            async with self._db.read_rows() as c:
                rows = [TurnTuple._make(r) for r in await c.execute(_BETWEEN, params)]
            for row in rows:
                if row.turn not in state.entries:
                    self._enter(state, record_of(row))
            state.read_below = rows[-1].turn + 1 if len(rows) == PAGE else before
        reopened = sorted(n for n in state.open if n < before)
        if reopened:  # its tool loop may have gone on elsewhere; a newer turn exists now, so it is done
            for record in await self._read(session_id, reopened):
                self._enter(state, record)  # entered again: the lists holding it are made anew
                state.open.discard(record.turn)

    async def _read(self, session_id: str, numbers: Sequence[int]) -> list[TurnRecord]:
        async with self._db.read_rows() as c:
            rows = await c.execute(_NUMBERED, {"session_id": session_id, "numbers": list(numbers)})
            return [record_of(TurnTuple._make(r)) for r in rows]


def _cut_lists(state: _Session, turn: int) -> None:
    """Every list that may hold ``turn`` cut before it: the next one goes on from there (the turns before it stand)."""
    for key, (generation, before, listed) in state.listed.items():
        if before > turn:
            state.listed[key] = (generation, turn, listed.cut(bisect_left(listed.numbers, turn)))


class SessionTurns:
    """``EarlierTurns`` for one window: its session, phase and history version fixed by the application."""

    __slots__ = ("__index", "__phase", "__session", "__version")

    def __init__(self, index: TurnIndex, session: Key, phase: str | None, version: int) -> None:
        self.__index, self.__session, self.__phase, self.__version = index, session, phase, version

    async def described(
        self, kind: str, describe: Callable[[TurnRecord], D], *, before: int
    ) -> Sequence[tuple[int, D]]:
        return await self.__index.described(self.__session, self.__phase, self.__version, kind, describe, before)

    async def records(self, turns: Sequence[int]) -> list[TurnRecord]:
        return await self.__index.records(self.__session, self.__phase, turns)


class _Indexed(Protocol):
    @property
    def turn_index(self) -> TurnIndex | None: ...


class _Service(Protocol):
    """What indexing a recorded turn needs of the service (the service imports this module)."""

    @property
    def sources(self) -> _Indexed: ...

    @property
    def writer(self) -> BackgroundWriter: ...


def index_turn_after(svc: _Service, session: SessionRow, row: Any) -> None:
    """Describe and embed the turn just recorded for ``session``, after the response (hold the session's lock)."""
    index, key = svc.sources.turn_index, _key(session)
    if index is not None:
        svc.writer.submit(session.id, lambda: index.recorded(key, row), f"turn index of session {session.id}")


def _key(session: SessionRow) -> Key:
    return (session.id, session_key(session.id, session.created_at))
