"""Token calibrations: per model, the largest ratio of the provider's prompt count to cl100k's, and how many seen."""

from __future__ import annotations

from sqlalchemy import case, insert, select, update

from ..db import Database, rowcount
from ..errors import Conflict
from ..models import TokenCalibrationRow, utcnow

T = TokenCalibrationRow


class CalibrationStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def all(self) -> dict[str, tuple[float, int]]:
        async with self.db.read_rows() as c:
            return {r.model: (r.ratio, r.samples) for r in await c.execute(select(T.model, T.ratio, T.samples))}

    async def record(self, model: str, ratio: float) -> tuple[float, int]:
        """One more provider count for ``model``: its ratio kept if it is the largest (in SQL, so two replicas
        recording at once both count). The row as it now is."""
        try:
            return await self._record(model, ratio)
        except Conflict:  # another replica inserted the model's first row meanwhile: now it updates
            return await self._record(model, ratio)

    async def _record(self, model: str, ratio: float) -> tuple[float, int]:
        async with self.db.write_rows() as c:
            larger = case((T.ratio < ratio, ratio), else_=T.ratio)
            bump = update(T).where(T.model == model).values(ratio=larger, samples=T.samples + 1, updated_at=utcnow())
            if rowcount(await c.execute(bump)) == 0:
                await c.execute(insert(T).values(model=model, ratio=ratio, samples=1, updated_at=utcnow()))
            row = (await c.execute(select(T.ratio, T.samples).where(T.model == model))).one()
        return float(row.ratio), int(row.samples)
