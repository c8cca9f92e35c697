"""Experiments: what was asked, how far the replay got, and its figures once it ended (tda/experiments.py runs them).
Scoped to the caller's project like every owned row (tda/store/projects.py): another project's id is a 404."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import defer

from ..db import Database
from ..errors import Conflict, NotFound
from ..models import ExperimentRow, utcnow
from . import audit

RUNNING = "running"
ENDED = ("done", "cancelled", "failed")


def experiment_dict(row: ExperimentRow, *, turns: bool = True) -> dict[str, Any]:
    out = {
        "id": row.id,
        "status": row.status,
        "actor": row.actor,
        "author": audit.author_of(row.actor),
        "spec": row.spec,
        "total": row.total,
        "done": row.done,
        "totals": row.totals,
        "error": row.error,
        "created_at": row.created_at.isoformat(),
        "finished_at": row.finished_at.isoformat() if row.finished_at else None,
    }
    if turns:
        out["turns"] = row.turns or []
    return out


class ExperimentStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def create(self, spec: dict[str, Any], total: int, actor: str) -> ExperimentRow:
        async with self.db.write() as s:
            row = ExperimentRow(id=uuid.uuid4().hex[:16], actor=actor, status=RUNNING, spec=spec, total=total, done=0)
            s.add(row)
            await s.flush()
            audit.record(s, actor, "create", "experiment", row.id, None, {"spec": spec, "total": total})
        return row

    async def get(self, experiment_id: str) -> ExperimentRow:
        async with self.db.read() as s:
            row = await s.get(ExperimentRow, experiment_id)
        if row is None:
            raise NotFound(f"no experiment {experiment_id!r}")
        return row

    async def all(self, limit: int = 50, offset: int = 0) -> list[ExperimentRow]:
        """Newest first, without their turns (a large column: read only for one experiment)."""
        query = (
            select(ExperimentRow)
            .options(defer(ExperimentRow.turns))
            .order_by(ExperimentRow.created_at.desc())
            .limit(limit)
            .offset(offset)
        )
        async with self.db.read() as s:
            return list((await s.scalars(query)).all())

    async def progress(self, experiment_id: str, done: int) -> str:
        """Record how many turns are replayed; returns the status (``cancelled`` once someone asked to stop)."""
        async with self.db.write() as s:
            await s.execute(update(ExperimentRow).where(ExperimentRow.id == experiment_id).values(done=done))
            status = await s.scalar(select(ExperimentRow.status).where(ExperimentRow.id == experiment_id))
        return status or "failed"

    async def cancel(self, experiment_id: str, actor: str) -> ExperimentRow:
        """Ask a running experiment to stop (the replica running it stops at its next turn); 409 once it ended."""
        async with self.db.write() as s:
            row = await s.get(ExperimentRow, experiment_id)
            if row is None:
                raise NotFound(f"no experiment {experiment_id!r}")
            if row.status != RUNNING:
                raise Conflict(f"experiment {experiment_id!r} has ended ({row.status}); there is nothing to cancel")
            row.status = "cancelled"
            audit.record(s, actor, "cancel", "experiment", experiment_id, {"status": RUNNING}, {"status": "cancelled"})
        return row

    async def finish(
        self, experiment_id: str, status: str, totals: dict[str, Any], turns: list[Any], error: str = ""
    ) -> None:
        """Store the figures; a cancelled experiment keeps its status and saves what it replayed."""
        async with self.db.write() as s:
            row = await s.get(ExperimentRow, experiment_id)
            if row is None:
                return
            if row.status == RUNNING or status == "cancelled":
                row.status = status
            row.totals, row.turns, row.error, row.done = totals, turns, error, len(turns)
            row.finished_at = utcnow()
