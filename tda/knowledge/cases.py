"""Champion cases: successful turns kept in their own collection and served to rag_context.

A case is embedded by its query, so a new question finds past turns that asked the same thing.
Identical (query, answer) pairs are stored once; recording one again updates its plan and tokens, and
its feedback only when the record carries a rating: a rated case keeps its rating through later identical
turns. Cases with negative feedback are never served. ``recorded_at`` is when the case was first recorded,
so a replay can ask for the cases that existed when its turn was assembled (``recorded_before``).

Writes are batched: ``record`` keeps the case in memory (served from there at once) and ``flush`` writes
what is pending in one upsert. An embedded Chroma holds the GIL for a whole write, fsync included (~25 ms
on a plain disk), stalling every thread of the server: one write per turn cost each turn that much. A rating
is written through at once; ``close`` (service shutdown) flushes, so nothing recorded is lost.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from components.context_window.base import ChampionCase

from .store import CASES_COLLECTION, KnowledgeStore

OVERFETCH = 4
"""Cases fetched per case served: the negative ones (and, in a replay, the later ones) are filtered out here,
which is much cheaper than Chroma's ``where`` (it builds an allow-list of every matching record per query)."""
MAX_PENDING = 2000
"""Cases kept in memory at most; past this, ``record`` writes them before returning."""


@dataclass(frozen=True, slots=True)
class CaseRecord:
    query: str
    answer: str
    plan: str = ""
    tokens: int = 0
    feedback: int | None = None
    """-1 negative, 0 none, +1 positive; None keeps the stored case's rating (0 for a new case)."""
    session_id: str = ""
    turn: int = 0


@dataclass(frozen=True, slots=True)
class _Pending:
    """A case recorded but not yet written: what will be upserted."""

    document: str
    metadata: dict[str, Any]
    embedding: np.ndarray


def case_id(query: str, answer: str) -> str:
    return hashlib.sha256(f"{' '.join(query.split())}\x00{' '.join(answer.split())}".encode()).hexdigest()[:32]


class ChampionCaseStore:
    """Implements ``CaseRetriever``; ``record``, ``set_feedback`` and ``flush`` are called by the application."""

    def __init__(self, store: KnowledgeStore) -> None:
        self.store = store
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()
        """Guards ``_pending`` (records, searches and flushes run in worker threads)."""
        self._flushing = threading.Lock()
        self._cached: tuple[Any, Any] | None = None

    def _collection(self) -> Any:
        return self._opened()[0]

    def _opened(self) -> tuple[Any, Any]:
        """The collection and its embedding function, looked up once (the collection is tda's own)."""
        if self._cached is None:
            col = self.store.collection(CASES_COLLECTION, create=True, kind="cases")
            self._cached = (col, col.configuration.get("embedding_function"))
        return self._cached

    def _embed(self, text: str) -> np.ndarray:
        return np.asarray(self._opened()[1]([text])[0], dtype=np.float32)

    def record(self, case: CaseRecord) -> str:
        if not case.query.strip():
            raise ValueError("a champion case needs a non-empty query")
        if case.feedback not in (-1, 0, 1, None):
            raise ValueError("feedback must be -1, 0 or +1")
        cid = case_id(case.query, case.answer)
        with self._lock:
            pending = self._pending.get(cid)
        stored = pending.metadata if pending else self._stored(cid)
        # an unrated record never resets a rating given earlier
        feedback = int(stored.get("feedback", 0)) if case.feedback is None else case.feedback
        metadata = {
            "answer": case.answer,
            "plan": case.plan,
            "tokens": case.tokens,
            "feedback": feedback,
            "session_id": case.session_id,
            "turn": case.turn,
            # kept from the first record: the turns assembled since then saw this case
            "recorded_at": float(stored.get("recorded_at", time.time())),
        }
        embedding = pending.embedding if pending and pending.document == case.query else self._embed(case.query)
        with self._lock:
            self._pending[cid] = _Pending(case.query, metadata, embedding)
            full = len(self._pending) >= MAX_PENDING
        if case.feedback is not None or full:  # a rating is a user's action: written before it is answered
            self.flush()
        return cid

    def _stored(self, cid: str) -> dict[str, Any]:
        found = self._collection().get(ids=[cid], include=["metadatas"])["metadatas"]
        return dict(found[0] or {}) if found else {}

    def flush(self) -> int:
        """Write every pending case (one upsert per batch); returns how many. A case recorded again meanwhile
        stays pending with its newer content."""
        with self._flushing:
            with self._lock:
                batch = dict(self._pending)
            if not batch:
                return 0
            col, ids = self._collection(), list(batch)
            step = self.store.client.get_max_batch_size()
            for start in range(0, len(ids), step):
                part = [batch[i] for i in ids[start : start + step]]
                col.upsert(
                    ids=ids[start : start + step],
                    documents=[p.document for p in part],
                    metadatas=[p.metadata for p in part],
                    embeddings=[p.embedding for p in part],
                )
            with self._lock:  # still served from memory until written, so never missing in between
                for cid, written in batch.items():
                    if self._pending.get(cid) is written:
                        del self._pending[cid]
            return len(batch)

    @property
    def pending(self) -> int:
        return len(self._pending)

    def set_feedback(self, cid: str, feedback: int) -> None:
        if feedback not in (-1, 0, 1):
            raise ValueError("feedback must be -1, 0 or +1")
        with self._lock:
            pending = self._pending.get(cid)
            if pending is not None:
                rated = {**pending.metadata, "feedback": feedback}
                self._pending[cid] = _Pending(pending.document, rated, pending.embedding)
        if pending is not None:
            self.flush()
            return
        col = self._collection()
        if not col.get(ids=[cid], include=[])["ids"]:
            raise KeyError(f"no champion case {cid!r}")
        col.update(ids=[cid], metadatas=[{"feedback": feedback}])

    def count(self) -> int:
        self.flush()
        return self._collection().count()

    async def retrieve_cases(
        self, query: str, *, k: int = 3, recorded_before: float | None = None
    ) -> list[ChampionCase]:
        return await asyncio.to_thread(self.search, query, k=k, recorded_before=recorded_before)

    def search(self, query: str, *, k: int = 3, recorded_before: float | None = None) -> list[ChampionCase]:
        """The ``k`` most similar cases without negative feedback, best first, scores 0..1; with
        ``recorded_before`` (a Unix time), only the cases first recorded by then."""
        if not query.strip() or k <= 0:
            return []
        vector = self._embed(query)
        with self._lock:
            pending = dict(self._pending)
        servable = _Servable(recorded_before)
        found = self._stored_nearest(vector, k * OVERFETCH, pending, servable)
        if found is None:  # too few servable among the nearest: ask Chroma for servable ones only
            found = self._stored_nearest(vector, k + len(pending), pending, servable, where=servable.where())
        cases = (found or []) + [
            _case(cid, p.document, p.metadata, _cosine(vector, p.embedding))
            for cid, p in pending.items()
            if servable(p.metadata)
        ]
        return sorted(cases, key=lambda c: -c.score)[:k]

    def _stored_nearest(
        self,
        vector: np.ndarray,
        n: int,
        pending: dict[str, _Pending],
        servable: _Servable,
        where: dict[str, Any] | None = None,
    ) -> list[ChampionCase] | None:
        """The servable written cases among the ``n`` nearest, or None when there may be nearer servable ones
        than the ``n`` hold (fewer than ``n`` - pending servable, and Chroma had more)."""
        found = self._collection().query(
            query_embeddings=[vector], n_results=n, where=where, include=["documents", "metadatas", "distances"]
        )
        columns = (found["ids"], found["documents"], found["metadatas"], found["distances"])
        rows = list(zip(*(column[0] for column in columns), strict=True))  # type: ignore[index]
        cases = [
            _case(cid, text, meta or {}, 1.0 - float(distance))
            for cid, text, meta, distance in rows
            if cid not in pending and servable(meta or {})  # a pending case is newer than its written copy
        ]
        wanted = n if where is not None else n // OVERFETCH
        if where is None and len(cases) < wanted and len(rows) == n:
            return None
        return cases


@dataclass(frozen=True, slots=True)
class _Servable:
    """Which cases may be served: not rated negative, and recorded by the cutoff (a replay's) if there is one."""

    recorded_before: float | None

    def __call__(self, metadata: dict[str, Any]) -> bool:
        if int(metadata.get("feedback", 0)) < 0:
            return False
        return self.recorded_before is None or float(metadata.get("recorded_at", 0.0)) <= self.recorded_before

    def where(self) -> dict[str, Any]:
        """The same as a Chroma ``where``."""
        rated_ok: dict[str, Any] = {"feedback": {"$gte": 0}}
        if self.recorded_before is None:
            return rated_ok
        return {"$and": [rated_ok, {"recorded_at": {"$lte": self.recorded_before}}]}


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Chroma's cosine similarity (1 - its cosine distance)."""
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.dot(a, b)) / norm if norm else 0.0


def _case(cid: str, query: str, meta: dict[str, Any], similarity: float) -> ChampionCase:
    return ChampionCase(
        id=cid,
        query=query,
        score=round(max(0.0, similarity), 6),
        plan=str(meta.get("plan", "")),
        answer=str(meta.get("answer", "")),
        tokens=int(meta.get("tokens", 0)),
        feedback=int(meta.get("feedback", 0)),
    )
