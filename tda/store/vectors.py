"""Recall's part vectors (``HistoryVectorRow``): read by session and embedder, written in bulk ignoring the parts a
session already has, deleted with the session (a cascade) or its memory purge."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite

from ..db import Database, rowcount
from ..models import HistoryVectorRow, SessionRow

V = HistoryVectorRow
DTYPE = np.dtype("<f4")
"""float32 as stored: a vector read back is the very one embedded, so a cold replica ranks as a warm one."""
BY_KEYS = 500
"""Up to this many parts are read by key (``IN``); more are read as the session's whole set and filtered here
(one statement either way, within the database's limit on parameters)."""


def to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=DTYPE).tobytes()


def from_bytes(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=DTYPE)


class HistoryVectorStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def get(self, session_id: str, embedder: str, keys: Collection[str]) -> dict[str, np.ndarray]:
        """The vectors ``session_id`` has under ``keys`` for ``embedder``."""
        wanted = set(keys)
        if not wanted:
            return {}
        query = select(V.part_key, V.vector).where(V.session_id == session_id, V.embedder == embedder)
        if len(wanted) <= BY_KEYS:
            query = query.where(V.part_key.in_(wanted))
        async with self.db.read_rows() as c:
            rows = (await c.execute(query)).all()
        return {key: from_bytes(blob) for key, blob in rows if key in wanted}

    async def add(self, embedder: str, vectors: Mapping[str, Mapping[str, np.ndarray]]) -> int:
        """Insert ``vectors`` (session -> key -> vector) in one transaction, leaving the parts a session already
        has; the vectors of a session deleted meanwhile are dropped. Returns how many rows were offered."""
        async with self.db.write_rows() as c:
            live = set((await c.execute(select(SessionRow.id).where(SessionRow.id.in_(list(vectors))))).scalars())
            rows = [
                {"session_id": session_id, "embedder": embedder, "part_key": key, "vector": to_bytes(vector)}
                for session_id, held in vectors.items()
                if session_id in live
                for key, vector in held.items()
            ]
            if rows:
                await c.execute(self._insert_ignoring_existing(), rows)
        return len(rows)

    def _insert_ignoring_existing(self) -> Any:
        if self.db.is_postgres:
            return postgresql.insert(V).on_conflict_do_nothing()
        return sqlite.insert(V).on_conflict_do_nothing()

    async def delete(self, session_id: str) -> int:
        """Every vector of ``session_id`` (every embedder's); returns how many went."""
        async with self.db.write_rows() as c:
            return rowcount(await c.execute(delete(V).where(V.session_id == session_id)))
