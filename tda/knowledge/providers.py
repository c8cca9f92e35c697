"""LiveKnowledge: the knowledge store of a running service, opened on first use, behind the module providers.

It is both the ``KnowledgeRetriever`` (knowledge_context) and the ``CaseRetriever`` (rag_context), and
records champion cases and their feedback for the turn endpoints. Opening Chroma and loading the
embedding model take seconds, so nothing heavy is imported until ``warm_up`` (at service start-up) or
the first call, and every blocking call runs in a worker thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from components.context_window.base import ChampionCase, Passage, SentenceWindow
from components.context_window.offload import retrieved

log = logging.getLogger(__name__)
T = TypeVar("T")

if TYPE_CHECKING:
    from .cases import CaseRecord, ChampionCaseStore
    from .retrieval import ChromaKnowledgeRetriever
    from .scope import CaseScope
    from .store import KnowledgeStore


@dataclass(frozen=True)
class _Opened:
    store: KnowledgeStore
    retriever: ChromaKnowledgeRetriever
    cases: ChampionCaseStore


class LiveKnowledge:
    def __init__(
        self,
        data_dir: Path,
        chroma_url: str | None = None,
        *,
        embedder: str = "minilm-int8",
        max_cases: int | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.chroma_url = chroma_url
        self.embedder = embedder
        self.max_cases = max_cases
        self._opened: _Opened | None = None
        self._embed_fn: Any = None
        self._lock = threading.Lock()
        self._closed = False
        self._writes = asyncio.Lock()
        self._ahead: dict[str, asyncio.Future[Any]] = {}
        """Queries being embedded ahead (``embed_ahead``), by text, held until done so that nothing collects them."""

    def _open(self) -> _Opened:
        """Runs in a worker thread; the lock makes concurrent first calls open the store once."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the knowledge store was closed (the service is shutting down)")
            opened = self._opened
            if opened is None:
                from .cases import MAX_CASES, ChampionCaseStore
                from .retrieval import ChromaKnowledgeRetriever
                from .store import KnowledgeStore

                store = KnowledgeStore.open(self.data_dir, self.chroma_url, embedder=self.embedder)
                cases = ChampionCaseStore(store, self.max_cases or MAX_CASES, write_through=self.chroma_url is not None)
                opened = self._opened = _Opened(store, ChromaKnowledgeRetriever(store), cases)
            return opened

    async def _ready(self) -> _Opened:
        opened = self._opened
        return opened if opened is not None else await asyncio.to_thread(self._open)

    async def warm_up(self) -> None:
        """Open the store and load the embedding model, so the first turn's retrieval does not wait for it."""
        opened = await self._ready()
        await asyncio.to_thread(opened.cases.load_model)

    async def check(self) -> None:
        """Raises unless the store opens and answers (the /readyz probe)."""
        opened = await self._ready()
        await asyncio.to_thread(opened.store.client.heartbeat)

    def close(self) -> None:
        """Write the pending champion cases, then release the store (blocking: call it from a worker thread)."""
        with self._lock:
            self._closed = True
            if self._opened is not None:
                try:
                    self._opened.cases.close()
                finally:
                    self._opened.store.close()
                    self._opened = None

    async def in_store(
        self, work: Callable[[KnowledgeStore, ChromaKnowledgeRetriever], T], *, write: bool = False
    ) -> T:
        """Run blocking ``work`` on the turns' own store and retriever in a worker thread (the HTTP API): writes
        through this store invalidate the retriever's caches, so the next turn sees them. Writes run one at a
        time (two ingests of one document never interleave), waiting here rather than in a worker thread, which
        the turns' retrieval needs."""
        opened = await self._ready()
        if not write:
            return await asyncio.to_thread(work, opened.store, opened.retriever)
        async with self._writes:
            return await asyncio.to_thread(work, opened.store, opened.retriever)

    # --- KnowledgeRetriever ----------------------------------------------------------------

    async def retrieve(
        self, query: str, *, collections: Sequence[str] = (), k: int = 8, min_score: float = 0.0
    ) -> list[Passage]:
        if not collections:  # a profile reads only the collections it names (the CLI searches all)
            return []
        opened = await self._ready()
        return await opened.retriever.retrieve(query, collections=collections, k=k, min_score=min_score)

    async def sentence_windows(
        self, query: str, *, collections: Sequence[str] = (), k: int = 100, radius: int = 1
    ) -> list[SentenceWindow]:
        if not collections:  # as ``retrieve``: a profile reads only the collections it names
            return []
        opened = await self._ready()
        return await opened.retriever.sentence_windows(query, collections=collections, k=k, radius=radius)

    async def held_words(self, words: Sequence[str], *, collections: Sequence[str] = ()) -> set[str]:
        if not collections:  # as ``retrieve``: a profile reads only the collections it names
            return set()
        opened = await self._ready()
        return await opened.retriever.held_words(words, collections=collections)

    async def neighbours(self, passage: Passage, *, before: int, after: int) -> list[Passage]:
        opened = await self._ready()
        return await opened.retriever.neighbours(passage, before=before, after=after)

    # --- Embedder (tool_definitions ranks tools by meaning with it) ------------------------

    @property
    def vector_space(self) -> str:
        """What its vectors depend on: the embedder it loads (turn recall's vector cache is kept per space)."""
        return f"knowledge:{self.embedder}"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors from the store's default embedder, computed in a worker thread unless it gives them at once (a
        lexical embedder, a query embedded moments ago): a thread hop costs more than that on a busy machine."""
        texts = list(texts)
        if len(texts) == 1:
            await self._vector_ahead(texts[0])
        if self._embed_fn is not None and len(texts) == 1:
            from .embeddings import embeds_at_once  # loaded with the embedder already

            if embeds_at_once(self._embed_fn, texts[0]):
                return self._embed(texts)
        return await asyncio.to_thread(self._embed, texts)

    def embed_ahead(self, text: str) -> None:
        """Start embedding a turn's query in a worker thread as soon as its request brings it, before its session is
        read: knowledge retrieval, the champion cases and recall ask for the same text's vector once their modules
        run, and find it made or under way (one model run, ``_RecentVectors``) instead of starting it only then, at
        the head of the knowledge path. Nothing before the store is open (its first use opens it) or when the vector
        comes at once (a lexical embedder, a text embedded moments ago)."""
        if self._opened is None or not text.strip():
            return
        from .embeddings import embeds_at_once, make_embedder

        if self._embed_fn is None:
            self._embed_fn = make_embedder(self.embedder)
        if embeds_at_once(self._embed_fn, text):
            return
        step = asyncio.ensure_future(asyncio.to_thread(self._embed_fn, [text]))
        self._ahead[text] = step
        step.add_done_callback(lambda done: self._ahead.pop(text) if self._ahead.get(text) is done else None)
        step.add_done_callback(retrieved)  # a failed run is the modules' to meet: they embed it again

    async def _vector_ahead(self, text: str) -> None:
        """Wait on the event loop for ``text``'s embedding when it is under way ahead (``embed_ahead``): its callers
        then find the vector at once, instead of each waiting for it in a worker thread of its own, which the vector
        wakes and which then hands back to the loop (a hop per caller on the turn's critical path, ~0.3-1 ms each,
        more on a busy machine; and a thread held meanwhile, of the few the default executor has)."""
        step = self._ahead.get(text)
        if step is not None:
            await asyncio.wait([step])  # a failed run is the caller's to meet: it embeds the text again

    def _embed(self, texts: list[str]) -> list[list[float]]:
        from .embeddings import as_floats, make_embedder

        if self._embed_fn is None:
            self._embed_fn = make_embedder(self.embedder)
        return as_floats(self._embed_fn(texts))

    # --- CaseRetriever and the champion-case writes ----------------------------------------

    async def retrieve_cases(
        self, query: str, *, scope: CaseScope, k: int = 3, recorded_before: float | None = None
    ) -> list[ChampionCase]:
        """The cases ``scope`` may see; with ``recorded_before`` (a Unix time), only those recorded by then (replay).
        A query being embedded ahead is waited for here, unless no case can be found: the search then runs on the loop
        (``ChampionCaseStore.retrieve_cases``)."""
        opened = await self._ready()
        if not opened.cases.finds_none(scope, recorded_before):
            await self._vector_ahead(query)
        return await opened.cases.retrieve_cases(query, scope=scope, k=k, recorded_before=recorded_before)

    def case_id(self, query: str, answer: str, *, scope: CaseScope, from_tools: bool) -> str:
        """The id ``record_case`` gives this query and answer in this scope (known before it is recorded)."""
        from .scope import case_id

        return case_id(query, answer, scope.owner(from_tools))

    async def record_case(
        self,
        query: str,
        answer: str,
        *,
        scope: CaseScope,
        from_tools: bool,
        plan: str = "",
        tokens: int = 0,
        feedback: int | None = None,
        session_id: str = "",
        turn: int = 0,
    ) -> str:
        """Store a champion case in ``scope``, or update that scope's case with the same query and answer; returns
        its id. ``from_tools``: the turn's tool loop ran, so the answer may quote tool data."""
        opened = await self._ready()
        from .cases import CaseRecord  # imported by _open already: no cost on the event loop

        case = CaseRecord(query, answer, plan, tokens, feedback, session_id, turn, scope=scope, from_tools=from_tools)
        return await asyncio.to_thread(_record_durably, opened.cases, case)


def _record_durably(cases: ChampionCaseStore, case: CaseRecord) -> str:
    """Record ``case`` and write it before returning: a turn names its case only once it survives a SIGKILL. The write
    is ~0.1-0.2 ms (one SQLite commit); turns recorded meanwhile are written by the same flush (group commit)."""
    cid = cases.record(case)
    cases.flush()
    return cid
