"""Champion cases: successful turns kept in their own collection and served to rag_context.

A case is embedded by its query, so a new question finds past turns that asked the same thing.
Every case is recorded in a scope (its profile, session and user, and whether it was built on tool results) and
every search is bound to one: a window sees only the cases its profile's ``case_sharing`` allows (``scope.py``).
Identical (query, answer) pairs of one owner are stored once; recording one again updates its plan and tokens, and
its feedback only when the record carries a rating: a rated case keeps its rating through later identical
turns. Cases with negative feedback are never served. ``recorded_at`` is when the case was first recorded,
so a replay can ask for the cases that existed when its turn was assembled (``recorded_before``).

The store is bounded (``MAX_CASES``): once full, a new case takes the record of the case least worth keeping
(rated negative first, then unrated, then positive; the oldest first among them), written over in place.
A case's id is its content hash; the record holding it may carry an older case's id (``case_id`` in its
metadata says whose it is now).

Where cases are kept: an embedded store keeps them in a ``CaseTable`` (SQLite) and searches a mirror of every
written case in memory (``_Mirror``: at most ``MAX_CASES`` vectors, ~3 MB), ranked by exact cosine with one
matrix product, 0.2-0.4 ms at 2,000 cases. It is their only writer, so the mirror stays right. With a Chroma
server (``write_through``), where other replicas write too, they are a Chroma collection and searches go there.

``record`` keeps the case in memory (served from there at once) and ``flush`` writes what is pending in one
transaction. ``LiveKnowledge`` flushes right after each record, before the turn naming the case is answered (turns
recorded meanwhile share the commit); a rating is written through at once; ``close`` (service shutdown) flushes.
With a Chroma server every case is written as it is recorded: the other replicas serve it at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from components.context_window.base import ChampionCase

from .by_worth import ByWorth
from .case_table import CaseTable
from .embeddings import embeds_at_once, row_products
from .scope import CaseScope, case_groups, case_id
from .store import CASES_COLLECTION, KnowledgeStore, included

__all__ = ["CaseRecord", "CaseScope", "ChampionCaseStore", "case_id"]

OVERFETCH = 4
"""Cases fetched per case served with ``profile`` sharing: the negative ones (and, in a replay, the later ones) are
filtered out here, which is much cheaper than Chroma's ``where`` (it builds an allow-list of every matching record per
query). A narrower scope is a small part of the collection: it is asked for with a ``where`` at once."""
MAX_CASES = 2_000
"""Cases kept at most (~3 MB of vectors in the mirror)."""
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
    scope: CaseScope = dataclasses.field(kw_only=True)
    """The session whose turn this is: who may be shown the case."""
    from_tools: bool = dataclasses.field(default=False, kw_only=True)
    """The answer may quote tool data (the turn's tool loop ran, or an earlier one whose results its history may
    show), so the case stays in its session unless the profile shares every case."""

    @property
    def id(self) -> str:
        return case_id(self.query, self.answer, self.scope.owner(self.from_tools))


@dataclass(frozen=True, slots=True)
class _Pending:
    """A case recorded but not yet written: what will be upserted."""

    document: str
    metadata: dict[str, Any]
    embedding: np.ndarray


class ChampionCaseStore:
    """Serves each scope the cases it may see (``retrieve_cases``; windows reach it through ``tda.sources.ScopedCases``,
    bound to their session); ``record``, ``set_feedback`` and ``flush`` are called by the application."""

    def __init__(self, store: KnowledgeStore, max_cases: int = MAX_CASES, *, write_through: bool = False) -> None:
        self.store = store
        self.max_cases = max_cases
        self.write_through = write_through
        """Write each case as it is recorded (a Chroma server: other replicas serve it at once, and an HTTP write
        leaves the GIL free) instead of in batches."""
        self._records: ByWorth[_Kept] | None = None
        """Case id -> the record holding it, its first record time and rating (loaded on first write), listing the
        cases least worth keeping without reading every one."""
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()
        """Guards ``_pending`` (records, searches and flushes run in worker threads)."""
        self._flushing = threading.Lock()
        self._cached: tuple[Any, Any] | None = None
        self._mirror: _Mirror | None = None
        """Every written case, when this store is the collection's only writer (loaded on first use)."""

    def _collection(self) -> Any:
        return self._opened()[0]

    def _opened(self) -> tuple[Any, Any]:
        """Where the cases are kept (a Chroma server's collection, or an embedded store's ``CaseTable``) and the
        embedding function they were recorded with, opened once."""
        if self._cached is None:
            if self.write_through:
                col = self.store.collection(CASES_COLLECTION, create=True, kind="cases")
                self._cached = (col, col.configuration.get("embedding_function"))
            else:
                table = CaseTable.open(self.store)
                self._cached = (table, table.embedding_function)
        return self._cached

    def close(self) -> None:
        """Write what is pending and let go of the table (the Chroma client is the knowledge store's to close)."""
        self.flush()
        if self._cached is not None and isinstance(self._cached[0], CaseTable):
            self._cached[0].close()

    def load_model(self) -> None:
        """Load the embedding model the cases are searched with (one text embedded): a search finds nothing to
        compare while no case is kept, and returns before embedding its query."""
        self._embed("warm up")

    def _embed(self, text: str) -> np.ndarray:
        return np.asarray(self._opened()[1]([text])[0], dtype=np.float32)  # recent texts' vectors are kept there

    def _written(self) -> _Mirror | None:
        """The mirror of the written cases, or None when others write to the collection too (a Chroma server)."""
        if self._mirror is None and not self.write_through:
            self._mirror = _Mirror(self._collection().get(include=["documents", "metadatas", "embeddings"]))
        return self._mirror

    def record(self, case: CaseRecord) -> str:
        if not case.query.strip():
            raise ValueError("a champion case needs a non-empty query")
        if case.feedback not in (-1, 0, 1, None):
            raise ValueError("feedback must be -1, 0 or +1")
        cid = case.id
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
            **case.scope.metadata(case.from_tools),
            # kept from the first record: the turns assembled since then saw this case
            "recorded_at": float(stored.get("recorded_at", time.time())),
        }
        embedding = pending.embedding if pending and pending.document == case.query else self._embed(case.query)
        with self._lock:
            self._pending[cid] = _Pending(case.query, metadata, embedding)
            full = len(self._pending) >= MAX_PENDING
        if case.feedback is not None or full or self.write_through:  # a rating: written before it is answered
            self.flush()
        return cid

    def _stored(self, cid: str) -> dict[str, Any]:
        mirror = self._written()
        if mirror is not None:
            with self._lock:
                return mirror.metadata(cid)
        record = self._kept().get(cid)
        found = self._collection().get(ids=[record.record_id if record else cid], include=["metadatas"])
        meta = dict((found["metadatas"] or [{}])[0] or {}) if found["ids"] else {}
        return meta if meta and _case_id(found["ids"][0], meta) == cid else {}

    def _kept(self) -> ByWorth[_Kept]:
        """What the store holds, read once (from the mirror when there is one), then kept up to date by writes."""
        if self._records is None:
            mirror = self._written()
            if mirror is not None:  # it holds every record already: no second read of the store
                with self._lock:
                    ids, metas = list(mirror.record_ids), list(mirror.metadatas)
            else:
                found = self._collection().get(include=["metadatas"])
                ids, metas = found["ids"], found["metadatas"] or []
            self._records = ByWorth(
                (_case_id(rid, meta or {}), _Kept.of(rid, meta or {})) for rid, meta in zip(ids, metas, strict=True)
            )
        return self._records

    def _record_ids(self, batch: dict[str, _Pending]) -> list[str]:
        """The record for each case of ``batch``: its own, a fresh one while there is room, else the record
        of a case least worth keeping (written over in place)."""
        kept = self._kept()
        new = [cid for cid in batch if cid not in kept]
        room = max(self.max_cases - len(kept), 0)
        over = len(new) - room
        # the least worth keeping, as a stable sort's first ``over`` (a full store scanned each flush: ~1-2 ms)
        victims = kept.least(over, excluded=batch)
        reuse = iter(v.record_id for v in victims)
        for victim in victims:
            del kept[victim.case_id]
        ids = {cid: kept[cid].record_id if cid in kept else cid for cid in batch}
        for cid in new[room:]:
            ids[cid] = next(reuse, cid)
        for cid, p in batch.items():
            kept[cid] = _Kept.of(ids[cid], {**p.metadata, "case_id": cid})
        return [ids[cid] for cid in batch]

    def _fitted(self, batch: dict[str, _Pending]) -> dict[str, _Pending]:
        """``batch`` without the new cases least worth keeping past ``max_cases`` (one batch can hold more new
        cases than the store keeps: they would all be written, none written over)."""
        new = [cid for cid in batch if cid not in self._kept()]
        excess = len(new) - self.max_cases
        if excess <= 0:
            return batch
        dropped = set(sorted(new, key=lambda cid: _Kept.of(cid, batch[cid].metadata).worth())[:excess])
        return {cid: p for cid, p in batch.items() if cid not in dropped}

    def flush(self) -> int:
        """Write every pending case (one upsert per batch); returns how many were written. A case recorded again
        meanwhile stays pending with its newer content."""
        with self._flushing:
            with self._lock:
                batch = dict(self._pending)
            if not batch:
                return 0
            kept = self._fitted(batch)
            col, cids, ids = self._collection(), list(kept), self._record_ids(kept)
            mirror = self._written()
            step = self.store.client.get_max_batch_size()
            for start in range(0, len(ids), step):
                part = cids[start : start + step]
                records = _Records(
                    ids=ids[start : start + step],
                    documents=[kept[cid].document for cid in part],
                    metadatas=[{**kept[cid].metadata, "case_id": cid} for cid in part],
                    embeddings=[kept[cid].embedding for cid in part],
                )
                col.upsert(**records)
                if mirror is not None:
                    with self._lock:  # a search sees a case pending or mirrored, never neither
                        mirror.write(**records)
            with self._lock:  # still served from memory until written, so never missing in between
                for cid, written in batch.items():
                    if self._pending.get(cid) is written:
                        del self._pending[cid]
            return len(kept)

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
        if not self._stored(cid):
            raise KeyError(f"no champion case {cid!r}")
        record = self._kept().get(cid)
        record_id = record.record_id if record else cid
        self._collection().update(ids=[record_id], metadatas=[{"feedback": feedback}])
        if record is not None:
            self._kept()[cid] = dataclasses.replace(record, feedback=feedback)
        if self._mirror is not None:
            with self._lock:
                self._mirror.rate(record_id, feedback)

    def count(self) -> int:
        self.flush()
        return self._collection().count()

    async def retrieve_cases(
        self, query: str, *, scope: CaseScope, k: int = 3, recorded_before: float | None = None
    ) -> list[ChampionCase]:
        """Searched on the event loop when that is cheap: the mirror is loaded and the query's vector needs no
        model run (0.2-0.4 ms at 2,000 cases; a hop to a worker thread and back cost more), or the scope sees no case.
        Else in a worker thread."""
        if self._mirror is not None and (
            embeds_at_once(self._opened()[1], query) or self.finds_none(scope, recorded_before)
        ):
            return self.search(query, scope=scope, k=k, recorded_before=recorded_before)
        return await asyncio.to_thread(self.search, query, scope=scope, k=k, recorded_before=recorded_before)

    def finds_none(self, scope: CaseScope, recorded_before: float | None = None) -> bool:
        """Whether a search in ``scope`` is known to find no case without embedding its query: none written (the
        mirror loaded) or pending that the scope may see. Cheap enough for the event loop."""
        if not scope.groups():
            return True
        if self._mirror is None:
            return False
        servable = _Servable(scope, recorded_before)
        with self._lock:
            rows = self._mirror.rows_of(scope)
            return not len(rows) and not any(servable(p.metadata) for p in self._pending.values())

    def search(
        self, query: str, *, scope: CaseScope, k: int = 3, recorded_before: float | None = None
    ) -> list[ChampionCase]:
        """The ``k`` most similar cases ``scope`` may see without negative feedback, best first, scores 0..1; with
        ``recorded_before`` (a Unix time), only the cases first recorded by then."""
        if not query.strip() or k <= 0 or not scope.groups():
            return []
        mirror = self._written()
        if self.finds_none(scope, recorded_before):
            return []  # nothing this scope may see: the query is not even embedded
        servable = _Servable(scope, recorded_before)
        with self._lock:
            pending = dict(self._pending)
            rows = mirror.rows_of(scope) if mirror is not None else None
        vector = self._embed(query)
        found: list[ChampionCase] | None = None
        with self._lock:
            if mirror is not None and rows is not None:
                found = mirror.nearest(vector, k, lambda cid, meta: cid not in pending and servable(meta), rows)
        if mirror is None:  # a narrow scope is a small part of the collection: ask Chroma for it at once
            found = (
                self._stored_nearest(vector, k * OVERFETCH, pending, servable) if scope.sharing == "profile" else None
            )
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
        rows = list(zip(*(included(column)[0] for column in columns), strict=True))
        cases = [
            _case(_case_id(rid, meta or {}), text, meta or {}, 1.0 - float(distance))
            for rid, text, meta, distance in rows
            if _case_id(rid, meta or {}) not in pending and servable(meta or {})  # pending: newer than written
        ]
        wanted = n if where is not None else n // OVERFETCH
        if where is None and len(cases) < wanted and len(rows) == n:
            return None
        return cases


class _Records(TypedDict):
    """One upsert's records, as Chroma takes them and the mirror keeps them."""

    ids: list[str]
    documents: list[str]
    metadatas: list[dict[str, Any]]
    embeddings: list[np.ndarray]


class _Mirror:
    """The written cases, one row per record, as the table holds them. The vectors live in one array grown by
    doubling and written in place (a new array per write left the freed ones to fragment the heap: ~14 MB more RSS
    over 3,000 turns); callers hold the store's lock, so a search never sees a row half written."""

    def __init__(self, found: dict[str, Any]) -> None:
        self.record_ids: list[str] = list(found["ids"])
        self.documents: list[str] = list(found["documents"] or [])
        self.metadatas: list[dict[str, Any]] = [dict(m or {}) for m in found["metadatas"] or []]
        self.matrix = _unit_rows(np.asarray(found["embeddings"], dtype=np.float32)) if self.record_ids else None
        self.row = {rid: i for i, rid in enumerate(self.record_ids)}
        self.case_rows = {
            _case_id(rid, meta): i for i, (rid, meta) in enumerate(zip(self.record_ids, self.metadatas, strict=True))
        }
        self.groups: dict[tuple[str, ...], set[int]] = {}
        """The rows of each group of cases (``case_groups``): a search reads only its scope's rows (a full scan
        of 2,000 for a session's few cases took 1.2-1.6 ms, against 0.2 ms)."""
        self._rows: dict[tuple[tuple[str, ...], ...], np.ndarray] = {}
        """``rows_of`` by a scope's groups, until the next write (a profile's 2,000 rows sorted: 0.07 ms a search)."""
        for i, meta in enumerate(self.metadatas):
            self._group(i, meta)

    def _group(self, row: int, meta: dict[str, Any], *, remove: bool = False) -> None:
        self._rows.clear()
        for group in case_groups(meta):
            if remove:
                self.groups.get(group, set()).discard(row)
            else:
                self.groups.setdefault(group, set()).add(row)

    def rows_of(self, scope: CaseScope) -> np.ndarray:
        """The rows holding the cases ``scope`` may see, in row order."""
        groups = scope.groups()
        found = self._rows.get(groups)
        if found is None:
            rows = set().union(*(self.groups.get(group, ()) for group in groups))
            found = np.fromiter(sorted(rows), dtype=np.intp, count=len(rows))
            if len(self._rows) >= 1024:
                self._rows.clear()
            self._rows[groups] = found
        return found

    def metadata(self, cid: str) -> dict[str, Any]:
        row = self.case_rows.get(cid)
        return dict(self.metadatas[row]) if row is not None else {}

    def write(
        self, ids: list[str], documents: list[str], metadatas: list[dict[str, Any]], embeddings: list[np.ndarray]
    ) -> None:
        """What an upsert of these records wrote (a record written over now holds another case)."""
        vectors = _unit_rows(np.asarray(embeddings, dtype=np.float32))
        for rid, document, meta, vector in zip(ids, documents, metadatas, vectors, strict=True):
            i = self.row.get(rid)
            if i is None:
                i = self.row[rid] = len(self.record_ids)
                self.record_ids.append(rid)
                self.documents.append(document)
                self.metadatas.append({})
                self._make_room(len(vector))
            else:
                self.case_rows.pop(_case_id(rid, self.metadatas[i]), None)
                self._group(i, self.metadatas[i], remove=True)
            self._group(i, meta)
            self.documents[i], self.metadatas[i] = document, dict(meta)
            self.matrix[i] = vector  # type: ignore[index]
            self.case_rows[_case_id(rid, meta)] = i

    def _make_room(self, dimensions: int) -> None:
        if self.matrix is None:
            self.matrix = np.zeros((64, dimensions), dtype=np.float32)
        elif len(self.record_ids) > len(self.matrix):
            grown = np.zeros((2 * len(self.matrix), dimensions), dtype=np.float32)
            grown[: len(self.matrix)] = self.matrix
            self.matrix = grown

    def rate(self, record_id: str, feedback: int) -> None:
        i = self.row[record_id]
        self.metadatas[i] = {**self.metadatas[i], "feedback": feedback}

    def nearest(
        self, vector: np.ndarray, k: int, keep: Callable[[str, dict[str, Any]], bool], rows: np.ndarray
    ) -> list[ChampionCase]:
        """The ``k`` cases among ``rows`` that ``keep`` accepts nearest ``vector`` by cosine, nearest first."""
        if not len(rows) or self.matrix is None:
            return []
        norm = float(np.linalg.norm(vector))
        matrix = self.matrix[rows] if len(rows) < len(self.record_ids) else self.matrix[: len(self.record_ids)]
        similarity = row_products(matrix, vector / norm) if norm else np.zeros(len(rows), dtype=np.float32)
        found = []
        for j in np.argsort(-similarity, kind="stable"):
            i = rows[j]
            rid, meta = self.record_ids[i], self.metadatas[i]
            cid = _case_id(rid, meta)
            if keep(cid, meta):
                found.append(_case(cid, self.documents[i], meta, float(similarity[j])))
                if len(found) == k:
                    break
        return found


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


@dataclass(frozen=True, slots=True)
class _Kept:
    """A written case, as far as choosing which to write over needs it."""

    case_id: str
    record_id: str
    recorded_at: float
    feedback: int

    @classmethod
    def of(cls, record_id: str, meta: dict[str, Any]) -> _Kept:
        cid = _case_id(record_id, meta)
        return cls(cid, record_id, float(meta.get("recorded_at", 0.0)), int(meta.get("feedback", 0)))

    def worth(self) -> tuple[int, float]:
        """Sorts the case to drop first first: negative (never served), unrated, positive; older first."""
        return (self.feedback, self.recorded_at)


def _case_id(record_id: str, meta: dict[str, Any]) -> str:
    """Which case a record holds (a record written over in place keeps its first case's id)."""
    return str(meta.get("case_id") or record_id)


@dataclass(frozen=True, slots=True)
class _Servable:
    """Which cases may be served: in the scope, not rated negative, and recorded by the cutoff (a replay's) if
    there is one."""

    scope: CaseScope
    recorded_before: float | None

    def __call__(self, metadata: dict[str, Any]) -> bool:
        if int(metadata.get("feedback", 0)) < 0 or not self.scope.allows(metadata):
            return False
        return self.recorded_before is None or float(metadata.get("recorded_at", 0.0)) <= self.recorded_before

    def where(self) -> dict[str, Any]:
        """The same as a Chroma ``where``."""
        clauses: list[dict[str, Any]] = [self.scope.where(), {"feedback": {"$gte": 0}}]
        if self.recorded_before is not None:
            clauses.append({"recorded_at": {"$lte": self.recorded_before}})
        return {"$and": clauses}


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
