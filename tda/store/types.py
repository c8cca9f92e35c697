"""Context window types: versioned rows with full history, compare-and-swap updates, exactly one default."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from sqlalchemy import bindparam, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from components.context_window.session_cache import BoundedCache
from components.context_window.window_type import ContextWindowType

from .. import scope
from ..builtins import default_types
from ..db import Database, rowcount
from ..errors import Conflict, Invalid, NotFound, PreconditionFailed
from ..models import (
    AuditRow,
    ExperimentRow,
    ProfileRow,
    WindowTypeLabelRow,
    WindowTypeRow,
    WindowTypeVersionRow,
    utcnow,
)
from . import audit


@dataclass(frozen=True)
class StoredType:
    type: ContextWindowType
    version: int
    updated_at: datetime

    @property
    def id(self) -> str:
        return self.type.id

    @property
    def etag(self) -> str:
        return etag_for(self.id, self.version)

    @cached_property
    def _as_dict(self) -> dict[str, Any]:
        return {**self.type.model_dump(mode="json"), "version": self.version, "updated_at": self.updated_at.isoformat()}

    def to_dict(self) -> dict[str, Any]:
        return dict(self._as_dict)


def etag_for(type_id: str, version: int) -> str:
    return f'"{type_id}.v{version}"'


_PARSED: BoundedCache[tuple[str, int, datetime], StoredType] = BoundedCache(4096)
"""(id, version, updated_at) -> parsed type: a version's content never changes, so it is validated once."""


def _stored(row: WindowTypeRow) -> StoredType:
    key = (row.id, row.version, row.updated_at)
    stored = _PARSED.get(key)
    if stored is None:
        stored = _PARSED.put(key, StoredType(ContextWindowType.model_validate(row.data), row.version, row.updated_at))
    return stored


_HEAD = (WindowTypeRow.id, WindowTypeRow.version, WindowTypeRow.updated_at)
_HEADS = select(*_HEAD).order_by(WindowTypeRow.is_default.desc(), WindowTypeRow.id)
_HEADS_IN = _HEADS.where(or_(WindowTypeRow.project_id == bindparam("project"), WindowTypeRow.project_id.is_(None)))
"""``_HEADS`` a project sees (its own types and the shared ones): the ORM's filter (tda/store/projects.py) written out,
as a Core read bypasses it."""


def _data(t: ContextWindowType) -> dict[str, Any]:
    return t.model_dump(mode="json")


CACHE_TTL_S = 1.0
"""How long a replica serves the current types without asking the database which versions are current: a save
through another replica is seen within this. Saves here are seen at once; writes always check the database."""


@dataclass(frozen=True, eq=False)
class TypeList:
    """The current types, the default first, as of ``checked`` (monotonic). Compared by identity: a new list is a
    new generation, so what callers derive from one (a response body) can be cached against it."""

    types: tuple[StoredType, ...]
    checked: float

    def find(self, type_id: str) -> StoredType | None:
        return next((t for t in self.types if t.id == type_id), None)


def _forgets_current(write: Any) -> Any:
    """A write here is seen by the next read here at once (it re-checks the database)."""

    @functools.wraps(write)
    async def wrapper(self: TypeStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return await write(self, *args, **kwargs)
        finally:
            self._current = {}

    return wrapper


class TypeStore:
    def __init__(self, db: Database, cache_ttl_s: float = CACHE_TTL_S) -> None:
        self.db = db
        self.cache_ttl_s = cache_ttl_s
        self._current: dict[str | None, TypeList] = {}
        """Per project (the types each sees: its own and the shared ones)."""

    # --- reads ---------------------------------------------------------------------------------

    async def current(self) -> TypeList:
        """The current types: re-checked at most every ``cache_ttl_s``; a check reads only ids and versions,
        and the content of a version not seen before (a version's content never changes)."""
        project = scope.current()
        current = self._current.get(project)
        if current is not None and time.monotonic() - current.checked < self.cache_ttl_s:
            return current
        checked = time.monotonic()
        heads = await self._heads(project)
        known = {head: _PARSED.get(head) for head in heads}
        missing = [key[0] for key, stored in known.items() if stored is None]
        if missing:
            async with self.db.read() as s:
                for row in (await s.scalars(select(WindowTypeRow).where(WindowTypeRow.id.in_(missing)))).all():
                    known[(row.id, row.version, row.updated_at)] = _stored(row)
        found = [known.get(head) for head in heads]
        current = self._current[project] = TypeList(tuple(t for t in found if t is not None), checked)
        return current

    def prepare(self) -> None:
        """``_heads``' statements compiled now for the loop's own reader (SQLite; nothing elsewhere): at start-up, so
        the process's first call compiles neither."""
        if self.db.reader is not None:
            self.db.reader.compiled(_HEADS, ())
            self.db.reader.compiled(_HEADS_IN, ("project",))

    async def _heads(self, project: str | None) -> list[tuple[str, int, datetime]]:
        """Each type's (id, version, updated_at), the default first: a read most turns make (once a ``cache_ttl_s``),
        by a statement built once on a bare connection (the loop's own on SQLite), not an ORM session."""
        statement, params = (_HEADS_IN, {"project": project}) if project else (_HEADS, {})
        return [(str(i), int(v), u) for i, v, u in await self.db.all_rows(statement, params)]

    async def all(self) -> list[StoredType]:
        return list((await self.current()).types)

    async def get(self, type_id: str) -> StoredType:
        found = (await self.current()).find(type_id)
        if found is not None:
            return found
        async with self.db.read() as s:  # perhaps created through another replica within the last second
            return _stored(await self._row(s, type_id))

    async def default(self) -> StoredType:
        """The default type; a project that cannot see it (another project's) gets the first shared type."""
        types = (await self.current()).types
        found = next((t for t in types if t.type.is_default), None)
        if found is None:
            shared = await self._shared_ids()
            found = next((t for t in types if t.id in shared), None)
        if found is None:
            raise NotFound("no default context window type exists; create one with is_default=true")
        return found

    async def version(self, type_id: str, version: int) -> ContextWindowType:
        async with self.db.read() as s:
            row = await s.get(WindowTypeVersionRow, (type_id, version))
        if row is None:
            raise NotFound(f"context window type {type_id!r} has no version {version}")
        return ContextWindowType.model_validate(row.data)

    async def labels(self, type_id: str) -> list[dict[str, Any]]:
        """The type's labels, by name: the version each is on, who put it there, when and why."""
        async with self.db.read() as s:
            await self._row(s, type_id)
            return [label_dict(r) for r in await _labels(s, type_id)]

    async def labelled(self, type_id: str, label: str) -> StoredType:
        """The version of the type that carries ``label`` (what a profile bound by that label runs)."""
        async with self.db.read() as s:
            await self._row(s, type_id)  # the project's own type, or a shared one
            row = await s.get(WindowTypeLabelRow, (type_id, label))
            version = None if row is None else await s.get(WindowTypeVersionRow, (type_id, row.version))
        if row is None or version is None:
            raise NotFound(f"context window type {type_id!r} has no label {label!r}")
        key = (type_id, version.version, version.created_at)
        stored = _PARSED.get(key)
        if stored is None:
            parsed = ContextWindowType.model_validate(version.data)
            stored = _PARSED.put(key, StoredType(parsed, version.version, version.created_at))
        return stored

    async def versions(self, type_id: str) -> list[dict[str, Any]]:
        async with self.db.read() as s:
            labels = await _labels(s, type_id)
            current = await self._row(s, type_id)
            rows = (
                await s.scalars(
                    select(WindowTypeVersionRow)
                    .where(WindowTypeVersionRow.type_id == type_id)
                    .order_by(WindowTypeVersionRow.version.desc())
                )
            ).all()
            rollbacks = await _rollback_sources(s, type_id, rows)
        return [
            {
                "version": r.version,
                "current": r.version == current.version,
                "actor": r.actor,
                "author": audit.author_of(r.actor),
                "created_at": r.created_at.isoformat(),
                "data": r.data,
                "rollback_of": rollbacks.get(r.version),
                "labels": [label.label for label in labels if label.version == r.version],
            }
            for r in rows
        ]

    async def _shared_ids(self) -> set[str]:
        async with self.db.read() as s:
            return set((await s.scalars(select(WindowTypeRow.id).where(WindowTypeRow.project_id.is_(None)))).all())

    async def bound_profiles(self, type_id: str) -> list[str]:
        async with self.db.read() as s:
            return await _bound_profiles(s, type_id)

    # --- writes (each one transaction) ------------------------------------------------------------

    @_forgets_current
    async def create(self, t: ContextWindowType, actor: str) -> StoredType:
        async with self.db.write() as s:
            if await s.get(WindowTypeRow, t.id) is not None:
                raise Conflict(f"a context window type with id {t.id!r} already exists; choose another id")
            if t.is_default:
                scope.require_shared("which type is the default")
            has_default = await s.scalar(select(func.count()).where(WindowTypeRow.is_default.is_(True)))
            if not has_default and scope.acting().shared:
                t = t.model_copy(update={"is_default": True})  # there is always exactly one default
            elif t.is_default:
                await _demote_default(s, actor)
            await _purge_orphan_versions(s, t.id)
            row = WindowTypeRow(id=t.id, name=t.name, is_default=t.is_default, version=1, data=_data(t))
            s.add(row)
            s.add(WindowTypeVersionRow(type_id=t.id, version=1, data=row.data, actor=actor))
            audit.record(s, actor, "create", "context_window_type", t.id, None, row.data)
        return _stored(row)

    @_forgets_current
    async def update(self, t: ContextWindowType, expected_version: int, actor: str) -> StoredType:
        async with self.db.write() as s:
            current = await self._row(s, t.id, write=True)
            _check_version(current, expected_version)
            if t.is_default != current.is_default:
                scope.require_shared("which type is the default")
            if current.is_default and not t.is_default:
                raise Conflict(
                    f"{t.id!r} is the default type and there must always be one: "
                    "make another type the default instead of clearing is_default here"
                )
            if _data(t) == current.data:
                return _stored(current)  # nothing changed: no new version, the same ETag
            if t.is_default and not current.is_default:
                await _demote_default(s, actor)
            return _stored(await _write_version(s, current, _data(t), actor, "update"))

    @_forgets_current
    async def rollback(self, type_id: str, to_version: int, expected_version: int | None, actor: str) -> StoredType:
        """Make an old version current again (as a new version); the default flag stays as it is now."""
        async with self.db.write() as s:
            current = await self._row(s, type_id, write=True)
            if expected_version is not None:
                _check_version(current, expected_version)
            old = await s.get(WindowTypeVersionRow, (type_id, to_version))
            if old is None:
                raise NotFound(f"context window type {type_id!r} has no version {to_version}")
            data = {**old.data, "is_default": current.is_default}
            return _stored(await _write_version(s, current, data, actor, f"rollback to v{to_version}"))

    async def move_label(
        self, type_id: str, label: str, version: int, reason: str, actor: str, experiment_id: str | None = None
    ) -> dict[str, Any]:
        """Put ``label`` on ``version`` (the rollout, or the rollback), from wherever it was; audited as the label's
        move, with its reason and the experiment that justified it (one of the caller's project)."""
        async with self.db.write() as s:
            await self._row(s, type_id, write=True)
            if await s.get(WindowTypeVersionRow, (type_id, version)) is None:
                raise Invalid(
                    f"context window type {type_id!r} has no version {version}",
                    errors=[{"loc": "version", "msg": f"no version {version}", "type": "missing"}],
                )
            if experiment_id is not None and await s.get(ExperimentRow, experiment_id) is None:
                msg = f"no experiment {experiment_id!r}"
                raise Invalid(msg, errors=[{"loc": "experiment_id", "msg": msg, "type": "missing"}])
            row = await s.get(WindowTypeLabelRow, (type_id, label))
            before = None if row is None else {"label": label, "version": row.version, "reason": row.reason}
            if row is None:
                row = WindowTypeLabelRow(type_id=type_id, label=label, version=version)
                s.add(row)
            row.version, row.reason, row.actor, row.updated_at = version, reason, actor, utcnow()
            row.experiment_id = experiment_id
            await s.flush()
            after = {"label": label, "version": version, "reason": reason, "experiment_id": experiment_id}
            audit.record(s, actor, "label", "context_window_type", type_id, before, after)
            return label_dict(row)

    async def remove_label(self, type_id: str, label: str, actor: str) -> None:
        """Take ``label`` off the type; 409 while a profile is bound by it (its turns would have no version)."""
        async with self.db.write() as s:
            await self._row(s, type_id, write=True)
            row = await s.get(WindowTypeLabelRow, (type_id, label))
            if row is None:
                raise NotFound(f"context window type {type_id!r} has no label {label!r}")
            query = select(ProfileRow.id).where(
                ProfileRow.context_window_type_id == type_id, ProfileRow.context_window_type_label == label
            )
            bound = list((await s.scalars(query.order_by(ProfileRow.id))).all())
            if bound:
                raise Conflict(
                    f"profiles {bound} run {type_id!r} by its label {label!r}; bind them otherwise first",
                    profiles=bound,
                )
            audit.record(s, actor, "unlabel", "context_window_type", type_id, label_dict(row), None)
            await s.delete(row)

    @_forgets_current
    async def delete(self, type_id: str, expected_version: int, actor: str) -> None:
        async with self.db.write() as s:
            current = await self._row(s, type_id, write=True)
            _check_version(current, expected_version)
            if current.is_default:
                raise Conflict(f"{type_id!r} is the default type; make another type the default before deleting it")
            bound = await _bound_profiles(s, type_id)
            if bound:
                raise Conflict(
                    f"{type_id!r} is bound to profiles {bound}; bind them to another type first", profiles=bound
                )
            await s.delete(current)
            await _purge_orphan_versions(s, type_id)
            audit.record(s, actor, "delete", "context_window_type", type_id, current.data, None)

    async def seed_defaults(self, actor: str = "system", types: Iterable[ContextWindowType] | None = None) -> int:
        """Insert the shipped types (``types``, else the built-in ones) when there are none (a fresh database).
        Returns how many."""
        async with self.db.read() as s:
            if await s.scalar(select(func.count()).select_from(WindowTypeRow)):
                return 0
        created = 0
        for t in default_types() if types is None else types:
            try:
                await self.create(t, actor)
                created += 1
            except Conflict:  # another process seeded concurrently
                pass
        return created

    @staticmethod
    async def _row(s: AsyncSession, type_id: str, write: bool = False) -> WindowTypeRow:
        row = await s.get(WindowTypeRow, type_id)
        if row is None:
            raise NotFound(f"no context window type {type_id!r}")
        if write and row.project_id is None:
            scope.require_shared(f"the shipped type {type_id!r} (copy it under a new id to change it)")
        return row


def label_dict(row: WindowTypeLabelRow) -> dict[str, Any]:
    return {
        "label": row.label,
        "version": row.version,
        "reason": row.reason,
        "experiment_id": row.experiment_id,
        "actor": row.actor,
        "author": audit.author_of(row.actor),
        "updated_at": row.updated_at.isoformat(),
    }


async def _labels(s: AsyncSession, type_id: str) -> list[WindowTypeLabelRow]:
    query = select(WindowTypeLabelRow).where(WindowTypeLabelRow.type_id == type_id).order_by(WindowTypeLabelRow.label)
    return list((await s.scalars(query)).all())


async def _rollback_sources(s: AsyncSession, type_id: str, rows: Sequence[WindowTypeVersionRow]) -> dict[int, int]:
    """{version: the version it rolled back to}, from the audit log (written in the same transaction as the version:
    the same actor and content, within a second)."""
    query = (
        select(AuditRow)
        .where(AuditRow.entity == "context_window_type", AuditRow.entity_id == type_id)
        .where(AuditRow.action.like("rollback to v%"))
    )
    out: dict[int, int] = {}
    for entry in (await s.scalars(query)).all():
        for r in rows:
            close = abs((r.created_at - entry.at).total_seconds()) < 1
            if r.version not in out and r.actor == entry.actor and r.data == entry.after and close:
                out[r.version] = int(entry.action.removeprefix("rollback to v"))
                break
    return out


def _check_version(row: WindowTypeRow, expected_version: int) -> None:
    if row.version != expected_version:
        raise PreconditionFailed(
            f"{row.id!r} changed since you read it (you have v{expected_version}, it is now v{row.version}); "
            "reload, reapply your edit and send the new ETag",
            current_etag=etag_for(row.id, row.version),
            current_version=row.version,
        )


async def _write_version(
    s: AsyncSession, row: WindowTypeRow, data: dict[str, Any], actor: str, action: str
) -> WindowTypeRow:
    """Compare-and-swap on the version column, so two writers cannot both win even without a lock."""
    before, new_version = row.data, row.version + 1
    result = await s.execute(
        update(WindowTypeRow)
        .where(WindowTypeRow.id == row.id, WindowTypeRow.version == row.version)
        .values(data=data, name=data["name"], is_default=data["is_default"], version=new_version, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if rowcount(result) != 1:
        raise PreconditionFailed(f"{row.id!r} changed while saving; reload and try again")
    s.add(WindowTypeVersionRow(type_id=row.id, version=new_version, data=data, actor=actor))
    audit.record(s, actor, action, "context_window_type", row.id, before, data)
    await s.refresh(row)
    return row


async def _demote_default(s: AsyncSession, actor: str) -> None:
    for row in (await s.scalars(select(WindowTypeRow).where(WindowTypeRow.is_default.is_(True)))).all():
        await _write_version(s, row, {**row.data, "is_default": False}, actor, "demote default")


async def _bound_profiles(s: AsyncSession, type_id: str) -> list[str]:
    query = select(ProfileRow.id).where(ProfileRow.context_window_type_id == type_id).order_by(ProfileRow.id)
    return list((await s.scalars(query)).all())


async def _purge_orphan_versions(s: AsyncSession, type_id: str) -> None:
    """History goes with the type (the audit log keeps it), so a re-created id starts again at v1; so do its
    labels, which name versions of that history."""
    for v in (await s.scalars(select(WindowTypeVersionRow).where(WindowTypeVersionRow.type_id == type_id))).all():
        await s.delete(v)
    for label in await _labels(s, type_id):
        await s.delete(label)
    await s.flush()  # deletes first: a re-created type inserts version 1 with the same key
