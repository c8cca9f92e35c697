"""The audit log: every change, who made it, and the state before and after. Written inside the change's transaction."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db import Database
from ..inline_sqlite import Statements
from ..models import AuditRow, Base


def record(
    session: AsyncSession,
    actor: str,
    action: str,
    entity: str,
    entity_id: str,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> None:
    session.add(AuditRow(actor=actor, action=action, entity=entity, entity_id=entity_id, before=before, after=after))


INSERT = insert(Base.metadata.tables[AuditRow.__tablename__])
"""An entry's row by a ``LoopWriter`` transaction (``record_here``; the table's, as the ORM's flush writes it)."""
INSERT_NAMES = ("actor", "action", "entity", "entity_id", "before", "after")
"""The columns ``record_here`` names (its project and time: the columns' defaults, as in ``record``)."""


def record_here(
    sql: Statements,
    actor: str,
    action: str,
    entity: str,
    entity_id: str,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> None:
    """``record`` in a ``LoopWriter`` transaction: the same row, without an ORM session's flush."""
    values = (actor, action, entity, entity_id, before, after)
    sql.first(INSERT, dict(zip(INSERT_NAMES, values, strict=True)))


class AuditStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def all(
        self,
        entity: str | None = None,
        entity_id: str | None = None,
        limit: int = 100,
        *,
        actor: str | None = None,
        offset: int = 0,
    ) -> list[AuditRow]:
        """Entries newest first; ``actor``: whose actor contains it, in any case."""
        query = select(AuditRow).order_by(AuditRow.id.desc()).limit(limit).offset(offset)
        if actor:
            query = query.where(func.lower(AuditRow.actor).contains(actor.lower(), autoescape=True))
        if entity:
            query = query.where(AuditRow.entity == entity)
        if entity_id:
            query = query.where(AuditRow.entity_id == entity_id)
        async with self.db.read() as s:
            return list((await s.scalars(query)).all())


_TOKEN_ACTOR = re.compile(r"token:(?P<name>.+)#\d+")


def author_of(actor: str) -> str:
    """Who to show for an actor: an API token's name ("token:ops-admin#3" -> "ops-admin"), other actors as they are
    ("cli", "system"). The full actor stays alongside, since token names need not be unique."""
    match = _TOKEN_ACTOR.fullmatch(actor)
    return match["name"] if match else actor


def audit_dict(row: AuditRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "at": row.at.isoformat(),
        "actor": row.actor,
        "author": author_of(row.actor),
        "action": row.action,
        "entity": row.entity,
        "entity_id": row.entity_id,
        "before": row.before,
        "after": row.after,
    }
