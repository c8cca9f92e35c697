"""Module activation chosen by admins (the registry keeps it only in memory)."""

from __future__ import annotations

from sqlalchemy import select

from ..db import Database
from ..models import ModuleStateRow, utcnow
from . import audit


class ModuleStateStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def all(self) -> dict[str, bool]:
        async with self.db.read() as s:
            return {r.module_id: r.active for r in (await s.scalars(select(ModuleStateRow))).all()}

    async def set(self, module_id: str, active: bool, actor: str) -> None:
        async with self.db.write() as s:
            row = await s.get(ModuleStateRow, module_id)
            before = None if row is None else {"active": row.active}
            if row is None:
                s.add(ModuleStateRow(module_id=module_id, active=active))
            else:
                row.active, row.updated_at = active, utcnow()
            audit.record(
                s, actor, "activate" if active else "deactivate", "module", module_id, before, {"active": active}
            )

    async def forget(self, module_id: str, actor: str) -> None:
        async with self.db.write() as s:
            row = await s.get(ModuleStateRow, module_id)
            if row is not None:
                await s.delete(row)
            audit.record(s, actor, "uninstall", "module", module_id, None, None)
