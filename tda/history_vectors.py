"""The vectors of recalled history's parts, kept in the knowledge store's Chroma (embedded, or the server replicas
share): another replica, or this one after a restart, reads them instead of embedding a session's history again.

One collection per embedder (``tda-history-parts-<embedder>``: embedders differ in dimensions and meaning), of kind
``history`` (knowledge listings leave it out). A record is one part of one session's history: its id is a hash of
the session id and the part's ``part_key`` (a hash of its text), so a part is stored once per session and an edited
or retried history finds the parts it did not change; its metadata names the session, the embedder and the part.
Every read filters by the session id: a session never gets another's vectors, even for the same text.

Writes happen when the service indexes (``write_now``: the background writer, after the response) or are handed to
the background writer (a replica that indexed a session inside a turn): never in the turn's path. A store that fails
costs only the embedding it would have saved: reads and writes are logged once per outage and the turn goes on.
Deleting a session or purging its memory deletes its vectors (in every embedder's collection), after the writes
queued for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection as ChromaCollection

    from .background import BackgroundWriter
    from .knowledge.providers import LiveKnowledge
    from .knowledge.store import KnowledgeStore

log = logging.getLogger(__name__)

HISTORY_KIND = "history"
COLLECTION_PREFIX = "tda-history-parts-"
CHEAP_EMBEDDERS = frozenset({"hashing"})
"""Embedders that cost less than the store: hashing embeds a part in ~0.04 ms of CPU, while one write to the store
costs 1.5-4 ms and reading a vector back ~0.03-0.04 ms (docs/knowledge.md, "History recall")."""
BY_IDS = 64
"""Up to this many parts are read by id; more are read as the session's whole set, filtered here: Chroma looks ids
up slowly in bulk (2,000 ids: ~0.9 s), while a session's 2,000 vectors come back by metadata in 0.06-0.13 s."""
PAGE = 2_000
"""Records per read of a session's whole set (1,000-12,000 measured alike over HTTP; 2,000 used the least CPU)."""
READ_S = 1.0
"""A read waits this long (plus 1 ms a part) before the parts are embedded instead (and the store is left alone for
30 s, ``STORE_RETRY_S``): a stalled server holds one turn, not every one."""

_WRITE_NOW: ContextVar[bool] = ContextVar("tda_history_vectors_write_now", default=False)


@contextlib.contextmanager
def write_now() -> Iterator[None]:
    """Within this block (the background writer's indexing job) vectors are written before ``put`` returns: the
    session's lock, released after the job, then covers them, and the next turn on any replica reads them."""
    token = _WRITE_NOW.set(True)
    try:
        yield
    finally:
        _WRITE_NOW.reset(token)


def collection_name(embedder: str) -> str:
    return COLLECTION_PREFIX + re.sub(r"[^a-zA-Z0-9._-]", "-", embedder)


def record_id(session_id: str, key: str) -> str:
    return f"{hashlib.blake2b(session_id.encode(), digest_size=12).hexdigest()}-{key}"


class ChromaPartVectors:
    """The component's ``PartVectors`` over the knowledge store (``LiveKnowledge``) of the running service."""

    def __init__(self, knowledge: LiveKnowledge, embedder: str, writer: BackgroundWriter) -> None:
        self.knowledge = knowledge
        self.embedder = embedder
        self.writer = writer
        self.name = collection_name(embedder)
        self._collection: tuple[KnowledgeStore, ChromaCollection] | None = None
        self._failing = False

    # --- PartVectors ---------------------------------------------------------------------

    async def get(self, session_id: str, keys: Collection[str]) -> dict[str, Sequence[float]]:
        wanted = set(keys)
        work = lambda store, _: self._read(store, session_id, wanted)  # noqa: E731
        try:
            return await asyncio.wait_for(self.knowledge.in_store(work), READ_S + len(wanted) / 1_000)
        except Exception:
            self._collection = None  # resolved again next time (the server may have restarted empty)
            raise

    async def put(self, session_id: str, vectors: Mapping[str, np.ndarray]) -> None:
        rows = dict(vectors)
        if _WRITE_NOW.get():
            await self._write(session_id, rows)
        else:
            self.writer.submit(session_id, lambda: self._write(session_id, rows), f"history vectors of {session_id}")

    # --- deletion ------------------------------------------------------------------------

    async def delete(self, session_id: str) -> int:
        """Delete every vector of ``session_id``, after the writes queued for it; returns how many went. Raises when
        the store cannot be reached (the caller refuses the deletion rather than leave vectors behind)."""
        outcome: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        async def job() -> None:
            try:
                outcome.set_result(await self.knowledge.in_store(lambda store, _: _delete(store, session_id)))
            except Exception as exc:
                outcome.set_exception(exc)

        self.writer.submit(session_id, job, f"deletion of the history vectors of {session_id}")
        return await outcome

    # --- blocking work (worker threads) --------------------------------------------------

    def _col(self, store: KnowledgeStore) -> ChromaCollection:
        cached = self._collection
        if cached is None or cached[0] is not store:
            cached = self._collection = (store, store.collection(self.name, create=True, kind=HISTORY_KIND))
        return cached[1]

    def _read(self, store: KnowledgeStore, session_id: str, wanted: set[str]) -> dict[str, Sequence[float]]:
        col = self._col(store)
        where: Any = {"$and": [{"session_id": session_id}, {"embedder": self.embedder}]}
        include: Any = ["embeddings", "metadatas"]
        found: dict[str, Sequence[float]] = {}
        pages: Iterable[Any]
        if len(wanted) <= BY_IDS:
            pages = [col.get(ids=[record_id(session_id, k) for k in wanted], where=where, include=include)]
        else:
            pages = _pages(col, where, include)
        for page in pages:
            for meta, vector in zip(page["metadatas"] or [], _vectors(page), strict=True):
                key = str((meta or {}).get("part"))
                if key in wanted:
                    found[key] = vector
        return found

    async def _write(self, session_id: str, rows: dict[str, np.ndarray]) -> None:
        try:
            await self.knowledge.in_store(lambda store, _: self._upsert(store, session_id, rows))
        except Exception as exc:  # costs another replica an embedding, never a turn
            self._collection = None
            if not self._failing:
                log.warning("history vectors not stored (%s); they are embedded again where needed", exc)
            self._failing = True
            return
        self._failing = False

    def _upsert(self, store: KnowledgeStore, session_id: str, rows: dict[str, np.ndarray]) -> None:
        col = self._col(store)
        keys = list(rows)
        batch = max(1, min(1_000, store.client.get_max_batch_size()))
        for start in range(0, len(keys), batch):
            part = keys[start : start + batch]
            col.upsert(
                ids=[record_id(session_id, k) for k in part],
                embeddings=np.asarray([rows[k] for k in part], dtype=np.float32),
                metadatas=[{"session_id": session_id, "embedder": self.embedder, "part": k} for k in part],
            )


def _pages(col: ChromaCollection, where: Any, include: Any) -> Iterator[Any]:
    offset = 0
    while True:
        page = col.get(where=where, include=include, limit=PAGE, offset=offset)
        yield page
        if len(page["ids"]) < PAGE:
            return
        offset += PAGE


def _vectors(page: Any) -> Sequence[Sequence[float]]:
    vectors = page.get("embeddings")
    return [] if vectors is None else vectors


def _delete(store: KnowledgeStore, session_id: str) -> int:
    """The session's vectors out of every embedder's history collection."""
    from .knowledge.store import KIND_KEY

    deleted = 0
    for listed in store.client.list_collections():
        if (listed.metadata or {}).get(KIND_KEY) != HISTORY_KIND:
            continue
        col = store.client.get_collection(listed.name)
        found = len(col.get(where={"session_id": session_id}, include=[])["ids"])
        if found:
            col.delete(where={"session_id": session_id})
            deleted += found
    return deleted


def part_vectors_for(
    knowledge: LiveKnowledge, embedder_name: str, recall_embedder: Any, writer: BackgroundWriter
) -> ChromaPartVectors | None:
    """The store for recall's vectors, when recall embeds with the knowledge store's own embedder (an injected one
    may differ) and embedding costs more than the store (``CHEAP_EMBEDDERS``)."""
    if recall_embedder is not knowledge or embedder_name in CHEAP_EMBEDDERS:
        return None
    return ChromaPartVectors(knowledge, embedder_name, writer)
