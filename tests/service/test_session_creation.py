"""A new session's creation on SQLite by the loop's own writer (``SessionStore._created_here``): the session's row
and its audit entry byte for byte as the ORM's flush writes them, the same checks (the project's filter, the
profile), and a session created meanwhile, here or by another process, a Conflict as before."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tda import models, scope
from tda.errors import Conflict, Invalid
from tda.store import Store

NOW = datetime(2026, 12, 6, 14, 52, 57, 123456, tzinfo=UTC)


class _Frozen(datetime):
    @classmethod
    def now(cls, tz: Any = None) -> Any:
        return NOW.astimezone(tz) if tz is not None else NOW.replace(tzinfo=None)


@pytest.fixture
async def store(template_db: Path, tmp_path: Path) -> AsyncIterator[Store]:
    (tmp_path / "tda.db").write_bytes(template_db.read_bytes())
    opened = Store.connect(f"sqlite+aiosqlite:///{tmp_path / 'tda.db'}")
    try:
        yield opened
    finally:
        await opened.close()


@contextlib.contextmanager
def _frozen_clock() -> Iterator[None]:
    """Every column's ``utcnow`` default reads ``NOW`` (both ways then write the same timestamps)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(models, "datetime", _Frozen)
        yield


@contextlib.contextmanager
def _in(project: str | None) -> Iterator[None]:
    scope.act_as(scope.Acting(project, shared=project is None) if project else scope.EVERYWHERE)
    try:
        yield
    finally:
        scope.act_as(scope.EVERYWHERE)


async def _by_the_orm(store: Store, fields: dict[str, Any]) -> None:
    """``create`` as before: through an ORM session (no loop writer to take it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store.db, "single_writes", None)
        await store.sessions.create(dict(fields), "token:ops#1")


def _stored(store: Store, session_id: str) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
    """The session's row and its audit entries (but their ids) as SQLite holds them, read by another connection."""
    with contextlib.closing(sqlite3.connect(store.db.reader.database)) as c:  # type: ignore[union-attr]
        session = c.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        entries = c.execute(
            "SELECT project_id, at, actor, action, entity, entity_id, before, after, typeof(before) FROM audit_log"
            " WHERE entity = 'session' AND entity_id = ? ORDER BY id",
            (session_id,),
        ).fetchall()
    return session, entries


_IDS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=64)
_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "user_id": st.text(max_size=100),
        "title": st.text(max_size=200),
        "context_limit": st.none() | st.integers(1, 10**7),
        "phase": st.none() | st.text(max_size=32),
    },
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(session_id=_IDS, project=st.sampled_from([None, "default", "acme"]), fields=_FIELDS)
async def test_a_session_created_by_the_loop_writer_is_the_row_the_orm_writes(
    store: Store, session_id: str, project: str | None, fields: dict[str, Any]
) -> None:
    """Every column of the session and of its audit entry (the project, the defaults, the timestamps' text, the
    entry's JSON and its SQL NULL ``before``) as the ORM stored them for the same id in a copy of the database."""
    profile = f"p-{project}"  # a profile's id is its project's
    fields = {**fields, "profile_id": profile}
    with _in(project):
        with contextlib.suppress(Conflict):
            await store.profiles.create(profile, {"name": "P", "type": "tool_enabled"}, "test")
        writes = store.db.single_writes.writes  # type: ignore[union-attr]
        with _frozen_clock():
            returned = await store.sessions.create({"id": session_id, **fields}, "token:ops#1")
            here = _stored(store, session_id)
            assert store.db.single_writes.writes == writes + 1  # type: ignore[union-attr]
            await _delete(store, session_id)
            await _by_the_orm(store, {"id": session_id, **fields})
        assert _stored(store, session_id) == here
        read = await store.sessions.get(session_id)
        assert [getattr(returned, c) for c in ("id", "profile_id", "user_id", "title", "context_limit", "phase")] == [
            getattr(read, c) for c in ("id", "profile_id", "user_id", "title", "context_limit", "phase")
        ]
        assert returned.created_at == NOW and returned.project_id == (project or scope.DEFAULT_PROJECT)
        await _delete(store, session_id)


async def _delete(store: Store, session_id: str) -> None:
    with contextlib.closing(sqlite3.connect(store.db.reader.database)) as c:  # type: ignore[union-attr]
        c.execute("DELETE FROM audit_log WHERE entity = 'session' AND entity_id = ?", (session_id,))
        c.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        c.commit()


async def test_a_session_created_meanwhile_is_a_conflict_as_before(store: Store) -> None:
    """Two requests creating one session: one creates it, the other's Conflict (``resolve_ids`` reads it then);
    a session another process created, or another project holds under the id, a Conflict too; nothing written."""
    await store.profiles.create("p", {"name": "P", "type": "tool_enabled"}, "test")
    writes = store.db.single_writes.writes  # type: ignore[union-attr]
    done = await asyncio.gather(
        *(store.sessions.create({"id": "s", "profile_id": "p"}, "a") for _ in range(2)), return_exceptions=True
    )
    assert sorted(type(d).__name__ for d in done) == ["Conflict", "SessionRow"]
    assert store.db.single_writes.writes == writes + 2  # type: ignore[union-attr]
    with contextlib.closing(sqlite3.connect(store.db.reader.database)) as c:  # type: ignore[union-attr]
        c.execute(
            "INSERT INTO sessions (id, project_id, profile_id, user_id, title, message_count, history_version,"
            " created_at, updated_at) VALUES ('other', 'acme', 'p', 'u', '', 0, 0, '2026-01-01', '2026-01-01')"
        )
        c.commit()
    with pytest.raises(Conflict, match="already exists"):
        await store.sessions.create({"id": "other", "profile_id": "p"}, "a")
    with _in("default"), pytest.raises(Conflict, match="concurrent change"):  # the ORM's IntegrityError, as before
        await store.sessions.create({"id": "other", "profile_id": "p"}, "a")
    with pytest.raises(Invalid, match="no profile"):
        await store.sessions.create({"id": "new", "profile_id": "gone"}, "a")
    assert _stored(store, "s")[1] and len(_stored(store, "s")[1]) == 1
    assert _stored(store, "new") == (None, []) and _stored(store, "other")[1] == []
