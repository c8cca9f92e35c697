"""Projects, and the one place their isolation is applied: every ORM statement of any store (SELECT, UPDATE, DELETE,
``Session.get`` included) gets ``project_id = <the request's project>`` on each project-owned row it touches, in
subqueries and joins too. Another project's row is then not found, so it answers 404 like any missing id, and no
code path has to remember a check.

Rows reached only through their session (messages, turns, attachments) are read by a session id the caller has
already loaded through this filter; statements that bypass the ORM (a turn's Core inserts and history pages) take
such ids only. The Core statements of an owned row, a session's read by its id (``SessionStore.get``, on every chat
call) and its creation's checks on SQLite (``SessionStore._created_here``), write this filter out.
"""

from __future__ import annotations

import functools
import re
import weakref
from typing import Any

from sqlalchemy import event, or_, select
from sqlalchemy.orm import ORMExecuteState, Session, with_loader_criteria

from .. import scope
from ..db import Database
from ..errors import Conflict, Invalid
from ..models import AuditRow, ExperimentRow, ProfileRow, ProjectRow, SessionRow, SnapshotRow, WindowTypeRow
from . import audit

OWNED: tuple[Any, ...] = (ProfileRow, SessionRow, SnapshotRow, ExperimentRow)
"""Rows a project sees only if they are its own."""
SHARED: tuple[Any, ...] = (WindowTypeRow,)
"""Rows a project sees if they are its own or nobody's (``project_id`` None: the shipped window types)."""
SERVERS: tuple[Any, ...] = (AuditRow,)
"""Rows a project sees if they are its own, and those who administer what projects share (``scope.Acting.shared``)
see nobody's too (the audit entries of the operator, the CLI and the system)."""

NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
"""A project name: lower-case letters, digits, '-' and '_' (it prefixes its knowledge collections' names)."""


@event.listens_for(Session, "do_orm_execute")
def _only_the_current_project(state: ORMExecuteState) -> None:
    acting = scope.acting()
    if acting.project is None or state.is_column_load or state.is_relationship_load:
        return
    if state.is_select or state.is_update or state.is_delete:
        state.statement = _filtered(state.statement, acting.project, acting.shared)


_FILTERED: weakref.WeakKeyDictionary[Any, dict[tuple[str, bool], Any]] = weakref.WeakKeyDictionary()
"""statement -> (project, shared) -> the statement with its criteria: a statement built once (the store's prebuilt
reads) keeps its cache key, computed once, instead of a new statement's per call. Ad hoc statements drop out with
their statement."""


def _filtered(statement: Any, project: str, shared: bool) -> Any:
    per_project = _FILTERED.setdefault(statement, {})
    found = per_project.get((project, shared))
    if found is None:
        found = per_project[(project, shared)] = statement.options(*_criteria(project, shared))
    return found


@functools.lru_cache(maxsize=1024)
def _criteria(project: str, shared: bool) -> tuple[Any, ...]:
    """The options that filter a statement for ``project``: built once per project (building them cost more than
    the read they filter). Lambdas, so the compiled statement is cached with ``project`` as a bound parameter."""
    with_nobodys = SHARED + SERVERS if shared else SHARED
    own = [
        with_loader_criteria(row, lambda cls: cls.project_id == project, include_aliases=True)
        for row in (*OWNED, *SERVERS)
        if row not in with_nobodys
    ]
    own_or_nobodys = [
        with_loader_criteria(
            row, lambda cls: or_(cls.project_id == project, cls.project_id.is_(None)), include_aliases=True
        )
        for row in with_nobodys
    ]
    return (*own, *own_or_nobodys)


def project_dict(row: ProjectRow) -> dict[str, Any]:
    return {"name": row.name, "created_at": row.created_at.isoformat()}


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        msg = "a project name is 1-63 lower-case letters, digits, '-' or '_', starting with a letter or digit"
        raise Invalid(f"{msg}; got {name!r}", errors=[{"loc": "name", "msg": msg, "type": "value_error"}])
    return name


class ProjectStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def create(self, name: str, actor: str) -> ProjectRow:
        check_name(name)
        async with self.db.write() as s:
            if await s.get(ProjectRow, name) is not None:
                raise Conflict(f"a project named {name!r} already exists")
            row = ProjectRow(name=name)
            s.add(row)
            await s.flush()
            audit.record(s, actor, "create", "project", name, None, project_dict(row))
        return row

    async def all(self) -> list[ProjectRow]:
        async with self.db.read() as s:
            return list((await s.scalars(select(ProjectRow).order_by(ProjectRow.name))).all())

    async def exists(self, name: str) -> bool:
        async with self.db.read() as s:
            return await s.get(ProjectRow, name) is not None
