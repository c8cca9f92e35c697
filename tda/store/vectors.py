"""Recall's part vectors (``HistoryVectorRow``): read by session and embedder, written in bulk ignoring the parts a
session already has, deleted with the session (a cascade) or its memory purge."""

from __future__ import annotations

from collections.abc import Collection, Mapping

import numpy as np
from sqlalchemy import bindparam, delete, select
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
        where = {"session_id": session_id, "embedder": embedder}
        async with self.db.read_rows() as c:
            if len(wanted) <= BY_KEYS:
                rows = (await c.execute(_BY_KEYS, {**where, "keys": list(wanted)})).all()
            else:
                rows = (await c.execute(_WHOLE_SET, where)).all()
        return {key: from_bytes(blob) for key, blob in rows if key in wanted}

    async def add(self, embedder: str, vectors: Mapping[str, Mapping[str, np.ndarray]]) -> int:
        """Insert ``vectors`` (session -> key -> vector) in one transaction, leaving the parts a session already
        has; the vectors of a session deleted meanwhile are dropped. Returns how many rows were offered."""
        async with self.db.write_rows() as c:
            live = set((await c.execute(_LIVE, {"ids": list(vectors)})).scalars())
            rows = [
                {"session_id": session_id, "embedder": embedder, "part_key": key, "vector": to_bytes(vector)}
                for session_id, held in vectors.items()
                if session_id in live
                for key, vector in held.items()
            ]
            if rows:
                await c.execute(_INSERT_NEW_POSTGRES if self.db.is_postgres else _INSERT_NEW_SQLITE, rows)
        return len(rows)

    async def delete(self, session_id: str) -> int:
        """Every vector of ``session_id`` (every embedder's); returns how many went."""
        async with self.db.write_rows() as c:
            return rowcount(await c.execute(delete(V).where(V.session_id == session_id)))


_V = V.__table__.c
_OF_SESSION = (_V.session_id == bindparam("session_id"), _V.embedder == bindparam("embedder"))
_WHOLE_SET = select(_V.part_key, _V.vector).where(*_OF_SESSION)
_BY_KEYS = _WHOLE_SET.where(_V.part_key.in_(bindparam("keys", expanding=True)))
_LIVE = select(SessionRow.__table__.c.id).where(SessionRow.__table__.c.id.in_(bindparam("ids", expanding=True)))
_INSERT_NEW_SQLITE = sqlite.insert(V).on_conflict_do_nothing()
_INSERT_NEW_POSTGRES = postgresql.insert(V).on_conflict_do_nothing()
"""Statements built once: a turn's read of its few parts is then mostly the database's work."""
