"""Profiles: an agent configuration that binds a context window type and may lower the context limit."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import select

from components.context_window.session_cache import BoundedCache

from ..db import Database
from ..errors import Conflict, Invalid, NotFound
from ..models import ProfileRow, SessionRow, WindowTypeLabelRow, WindowTypeRow, utcnow
from . import audit
from .types import CACHE_TTL_S

MAX_CACHED = 1024
"""Profiles kept by ``current`` at most (a full cache starts over)."""

EDITABLE = (
    "name",
    "type",
    "system_prompt",
    "context_window_type_id",
    "context_window_type_label",
    "context_limit",
    "model",
    "tools",
    "components",
    "knowledge_collections",
    "system_prompt_mode",
    "case_sharing",
    "query_rewrite",
    "upstream",
)


def profile_dict(row: ProfileRow) -> dict[str, Any]:
    return {
        "id": row.id,
        **{f: getattr(row, f) for f in EDITABLE},
        "created_at": row.created_at.isoformat(),
        "updated_at": row.updated_at.isoformat(),
    }


class ProfileStore:
    def __init__(self, db: Database, cache_ttl_s: float = CACHE_TTL_S) -> None:
        self.db = db
        self.cache_ttl_s = cache_ttl_s
        self._current: BoundedCache[str, tuple[float, ProfileRow]] = BoundedCache(MAX_CACHED)

    async def current(self, profile_id: str) -> ProfileRow:
        """``get`` for the per-call path (the gateway): served from memory for up to ``cache_ttl_s``, as types are
        (a save through another replica is seen within that; a save here at once)."""
        cached = self._current.get(profile_id)
        if cached is not None and time.monotonic() - cached[0] < self.cache_ttl_s:
            return cached[1]
        row = await self.get(profile_id)
        self._current.put(profile_id, (time.monotonic(), row))
        return row

    async def all(self) -> list[ProfileRow]:
        async with self.db.read() as s:
            return list((await s.scalars(select(ProfileRow).order_by(ProfileRow.id))).all())

    async def get(self, profile_id: str) -> ProfileRow:
        async with self.db.read() as s:
            return await _profile(s, profile_id)

    async def create(self, profile_id: str, fields: dict[str, Any], actor: str) -> ProfileRow:
        self._current.discard(profile_id)
        async with self.db.write() as s:
            if await s.get(ProfileRow, profile_id) is not None:
                raise Conflict(f"a profile with id {profile_id!r} already exists; choose another id")
            await _check_binding(s, fields.get("context_window_type_id"), fields.get("context_window_type_label"))
            row = ProfileRow(id=profile_id, **fields)
            s.add(row)
            await s.flush()
            audit.record(s, actor, "create", "profile", profile_id, None, profile_dict(row))
        return row

    async def update(self, profile_id: str, fields: dict[str, Any], actor: str) -> ProfileRow:
        self._current.discard(profile_id)
        async with self.db.write() as s:
            row = await _profile(s, profile_id)
            binding = ("context_window_type_id", "context_window_type_label")
            type_id, label = (fields[f] if f in fields else getattr(row, f) for f in binding)
            await _check_binding(s, type_id, label)
            before = profile_dict(row)
            for name, value in fields.items():
                setattr(row, name, value)
            row.updated_at = utcnow()
            await s.flush()
            audit.record(s, actor, "update", "profile", profile_id, before, profile_dict(row))
        return row

    async def delete(self, profile_id: str, actor: str) -> None:
        self._current.discard(profile_id)
        async with self.db.write() as s:
            row = await _profile(s, profile_id)
            sessions = (
                await s.scalars(select(SessionRow.id).where(SessionRow.profile_id == profile_id).limit(20))
            ).all()
            if sessions:
                raise Conflict(
                    f"profile {profile_id!r} has sessions {list(sessions)}; delete them first", sessions=list(sessions)
                )
            audit.record(s, actor, "delete", "profile", profile_id, profile_dict(row), None)
            await s.delete(row)


async def _check_binding(s: Any, type_id: str | None, label: str | None) -> None:
    """The type exists, and so does the label on it when the profile binds by label."""
    if type_id is not None and await s.get(WindowTypeRow, type_id) is None:
        raise Invalid(
            f"context_window_type_id {type_id!r} does not exist",
            errors=[{"loc": "context_window_type_id", "msg": f"no context window type {type_id!r}", "type": "missing"}],
        )
    if label is None:
        return
    if type_id is None:
        msg = "a label names a version of the bound type: set context_window_type_id too, or send the label as null"
        raise Invalid(msg, errors=[{"loc": "context_window_type_label", "msg": msg, "type": "value_error"}])
    if await s.get(WindowTypeLabelRow, (type_id, label)) is None:
        msg = f"{type_id!r} has no label {label!r}: put it on a version first, or bind the type's current version"
        raise Invalid(msg, errors=[{"loc": "context_window_type_label", "msg": msg, "type": "missing"}])


async def _profile(s: Any, profile_id: str) -> ProfileRow:
    row = await s.get(ProfileRow, profile_id)
    if row is None:
        raise NotFound(f"no profile {profile_id!r}")
    return row
