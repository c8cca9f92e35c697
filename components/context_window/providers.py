"""In-memory providers: the provider protocols over plain lists (session files, tests, embedding apps)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .base import ChampionCase, Passage


@dataclass
class StaticKnowledge:
    """A KnowledgeRetriever over a fixed list of passages (their scores are taken as given)."""

    passages: Sequence[Passage] = ()

    async def retrieve(
        self, query: str, *, collections: Sequence[str] = (), k: int = 8, min_score: float = 0.0
    ) -> list[Passage]:
        hits = [p for p in self.passages if p.score >= min_score and (not collections or p.collection in collections)]
        return sorted(hits, key=lambda p: (-p.score, p.document_id, p.chunk_index))[:k]

    async def neighbours(self, passage: Passage, *, before: int, after: int) -> list[Passage]:
        lo, hi = passage.chunk_index - before, passage.chunk_index + after
        same_doc = (
            p
            for p in self.passages
            if p.document_id == passage.document_id
            and lo <= p.chunk_index <= hi
            and p.chunk_index != passage.chunk_index
        )
        return sorted(same_doc, key=lambda p: p.chunk_index)


@dataclass
class StaticCases:
    """A CaseRetriever over a fixed list of champion cases."""

    cases: Sequence[ChampionCase] = field(default_factory=list)

    async def retrieve_cases(self, query: str, *, k: int = 3) -> list[ChampionCase]:
        return sorted(self.cases, key=lambda c: (-c.score, c.id))[:k]
