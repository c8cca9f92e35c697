"""Component instructions: how to use each UI component, sent by component_instructions for a profile's components."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select

from ..db import Database
from ..errors import NotFound
from ..models import ComponentInstructionRow, utcnow
from . import audit

INTENSITIES = ("full", "medium", "light")
CACHE_TTL_S = 1.0
"""Every turn reads the texts: a replica re-reads them at most this often (its own writes are seen at once)."""


def instruction_dict(row: ComponentInstructionRow) -> dict[str, Any]:
    return {
        "component_id": row.component_id,
        **{i: getattr(row, i) for i in INTENSITIES},
        "updated_at": row.updated_at.isoformat(),
    }


class ComponentInstructionStore:
    def __init__(self, db: Database, cache_ttl_s: float = CACHE_TTL_S) -> None:
        self.db = db
        self.cache_ttl_s = cache_ttl_s
        self._texts: tuple[float, dict[str, dict[str, str]]] | None = None
        """When read, and every component's texts."""

    async def all(self) -> list[ComponentInstructionRow]:
        async with self.db.read() as s:
            query = select(ComponentInstructionRow).order_by(ComponentInstructionRow.component_id)
            return list((await s.scalars(query)).all())

    async def get(self, component_id: str) -> ComponentInstructionRow:
        async with self.db.read() as s:
            row = await s.get(ComponentInstructionRow, component_id)
        if row is None:
            raise NotFound(f"no instructions for component {component_id!r}; PUT them first")
        return row

    async def texts_for(self, component_ids: Sequence[str]) -> dict[str, dict[str, str]]:
        """``{component: {intensity: text}}`` for the named components that have instructions."""
        if not component_ids:
            return {}
        every = await self._all_texts()
        return {c: every[c] for c in component_ids if c in every}

    async def _all_texts(self) -> dict[str, dict[str, str]]:
        """Every component's texts (a handful), re-read at most every ``cache_ttl_s``."""
        cached = self._texts
        if cached is not None and time.monotonic() - cached[0] < self.cache_ttl_s:
            return cached[1]
        checked = time.monotonic()
        async with self.db.read() as s:
            rows = (await s.scalars(select(ComponentInstructionRow))).all()
        texts = {r.component_id: {i: getattr(r, i) for i in INTENSITIES if getattr(r, i).strip()} for r in rows}
        self._texts = (checked, texts)
        return texts

    async def put(self, component_id: str, texts: dict[str, str], actor: str) -> tuple[ComponentInstructionRow, bool]:
        """Create or replace; returns the row and whether it was created."""
        async with self.db.write() as s:
            row = await s.get(ComponentInstructionRow, component_id)
            before = None if row is None else instruction_dict(row)
            if row is None:
                row = ComponentInstructionRow(component_id=component_id)
                s.add(row)
            for intensity in INTENSITIES:
                setattr(row, intensity, texts.get(intensity) or "")
            row.updated_at = utcnow()
            await s.flush()
            audit.record(s, actor, "put", "component", component_id, before, instruction_dict(row))
        self._texts = None
        return row, before is None

    async def delete(self, component_id: str, actor: str) -> None:
        async with self.db.write() as s:
            row = await s.get(ComponentInstructionRow, component_id)
            if row is None:
                raise NotFound(f"no instructions for component {component_id!r}")
            audit.record(s, actor, "delete", "component", component_id, instruction_dict(row), None)
            await s.delete(row)
        self._texts = None
