"""Champion cases: successful turns kept in their own collection and served to rag_context.

A case is embedded by its query, so a new question finds past turns that asked the same thing.
Identical (query, answer) pairs are stored once; recording one again updates its plan and tokens, and
its feedback only when the record carries a rating: a rated case keeps its rating through later identical
turns. Cases with negative feedback are never served. ``recorded_at`` is when the case was first recorded,
so a replay can ask for the cases that existed when its turn was assembled (``recorded_before``).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass
from typing import Any

from components.context_window.base import ChampionCase

from .store import CASES_COLLECTION, KnowledgeStore


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


def case_id(query: str, answer: str) -> str:
    return hashlib.sha256(f"{' '.join(query.split())}\x00{' '.join(answer.split())}".encode()).hexdigest()[:32]


class ChampionCaseStore:
    """Implements ``CaseRetriever``; ``record`` and ``set_feedback`` are called by the application."""

    def __init__(self, store: KnowledgeStore) -> None:
        self.store = store

    def _collection(self) -> Any:
        return self.store.collection(CASES_COLLECTION, create=True, kind="cases")

    def record(self, case: CaseRecord) -> str:
        if not case.query.strip():
            raise ValueError("a champion case needs a non-empty query")
        if case.feedback not in (-1, 0, 1, None):
            raise ValueError("feedback must be -1, 0 or +1")
        cid = case_id(case.query, case.answer)
        collection = self._collection()
        found = collection.get(ids=[cid], include=["metadatas"])["metadatas"]
        stored = (found[0] or {}) if found else {}
        # an unrated record never resets a rating given earlier
        feedback = int(stored.get("feedback", 0)) if case.feedback is None else case.feedback
        collection.upsert(
            ids=[cid],
            documents=[case.query],
            metadatas=[
                {
                    "answer": case.answer,
                    "plan": case.plan,
                    "tokens": case.tokens,
                    "feedback": feedback,
                    "session_id": case.session_id,
                    "turn": case.turn,
                    # kept from the first record: the turns assembled since then saw this case
                    "recorded_at": float(stored.get("recorded_at", time.time())),
                }
            ],
        )
        return cid

    def set_feedback(self, cid: str, feedback: int) -> None:
        if feedback not in (-1, 0, 1):
            raise ValueError("feedback must be -1, 0 or +1")
        col = self._collection()
        if not col.get(ids=[cid], include=[])["ids"]:
            raise KeyError(f"no champion case {cid!r}")
        col.update(ids=[cid], metadatas=[{"feedback": feedback}])

    def count(self) -> int:
        return self._collection().count()

    async def retrieve_cases(
        self, query: str, *, k: int = 3, recorded_before: float | None = None
    ) -> list[ChampionCase]:
        return await asyncio.to_thread(self.search, query, k=k, recorded_before=recorded_before)

    def search(self, query: str, *, k: int = 3, recorded_before: float | None = None) -> list[ChampionCase]:
        """The ``k`` most similar cases without negative feedback, best first, scores 0..1; with
        ``recorded_before`` (a Unix time), only the cases first recorded by then."""
        col = self._collection()
        total = col.count()
        if not query.strip() or k <= 0 or not total:
            return []
        found = col.query(
            query_texts=[query],
            n_results=min(k, total),
            where=_served(recorded_before),
            include=["documents", "metadatas", "distances"],
        )
        cases = [
            ChampionCase(
                id=cid,
                query=text,
                score=round(max(0.0, 1.0 - float(distance)), 6),
                plan=str(meta.get("plan", "")),
                answer=str(meta.get("answer", "")),
                tokens=int(meta.get("tokens", 0)),
                feedback=int(meta.get("feedback", 0)),
            )
            for cid, text, meta, distance in zip(
                found["ids"][0],
                found["documents"][0],
                found["metadatas"][0],
                found["distances"][0],
                strict=True,  # type: ignore[index]
            )
        ]
        return sorted(cases, key=lambda c: -c.score)


def _served(recorded_before: float | None) -> dict[str, Any]:
    """The Chroma ``where`` for cases that may be served: not rated negative, and recorded by the cutoff."""
    rated_ok: dict[str, Any] = {"feedback": {"$gte": 0}}
    if recorded_before is None:
        return rated_ok
    return {"$and": [rated_ok, {"recorded_at": {"$lte": recorded_before}}]}
