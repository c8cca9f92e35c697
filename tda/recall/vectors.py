"""The vectors of recalled history's parts, kept in the knowledge store's Chroma (embedded, or the server replicas
share): another replica, or this one after a restart, reads them instead of embedding a session's history again.

One collection per embedder (``tda-history-parts-<embedder>``: embedders differ in dimensions and meaning), of kind
``history`` (knowledge listings leave it out). A record is one part of one session's history: its id is a hash of
the session id and the part's ``part_key`` (a hash of its text), so a part is stored once per session and an edited
or retried history finds the parts it did not change; its metadata names the session, the embedder and the part.
Every read checks the session id of what it returns: a session never gets another's vectors, even for the same text.

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
from typing import TYPE_CHECKING, Any, cast

import numpy as np

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection as ChromaCollection

    from ..background import BackgroundWriter
    from ..knowledge.providers import LiveKnowledge
    from ..knowledge.store import KnowledgeStore

log = logging.getLogger(__name__)

HISTORY_KIND = "history"
COLLECTION_PREFIX = "tda-history-parts-"
CHEAP_EMBEDDERS = frozenset({"hashing"})
"""Embedders that cost less than the store: hashing embeds a part in ~0.04 ms of CPU, while one write to the store
costs 1.5-4 ms and reading a vector back ~0.03-0.04 ms (docs/knowledge.md, "History recall")."""
BY_IDS = 64
"""Up to this many parts are read by id; more are read as the session's whole set, filtered here: Chroma looks ids
up slowly in bulk (2,000 ids: ~0.9 s), while a session's 2,000 vectors come back by metadata in 0.06-0.13 s."""
PAGE = 10_000
"""Records per read of a session's whole set. Each page filters the collection again, so small pages cost more (12,000
vectors: 2.7 s in pages of 2,000, 1.8 s in pages of 5,000, on the loaded machine); one read of more than ~30,000
records fails in Chroma 1.5 ("too many SQL variables")."""
READ_S = 1.0
"""A read waits this long (plus 1 ms a part) before the parts are embedded instead (and the store is left alone for
30 s, ``STORE_RETRY_S``): a stalled server holds one turn, not every one."""

HNSW = {"ef_construction": 8, "max_neighbors": 4}
"""Nobody searches this index, and building it is most of a write: 0.13 ms a vector instead of 0.41, a 5-part write
7 ms of CPU instead of 10 (embedded Chroma)."""

FLUSH_PARTS = 64
FLUSH_S = 1.0
"""A recorded turn's vectors are written with others within this long, or once 64 parts wait: an embedded write
costs ~4.5 ms of CPU plus ~1 ms a part when small, ~0.13-0.4 ms a part in bulk. A replica that syncs the turn meanwhile
embeds its few parts itself, as it would without the store."""

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
        self._pending: dict[str, dict[str, np.ndarray]] = {}
        """Vectors of recorded turns waiting to be written together (session -> key -> vector)."""
        self._flush_timer: asyncio.Task[None] | None = None
        self._writing = asyncio.Lock()
        """Held while vectors are written or deleted: a deletion never runs beside a write that would undo it."""

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
        """In the indexing job (``write_now``): an import's vectors are written at once; a recorded turn's few wait
        up to ``FLUSH_S`` for others to be written with (a write's fixed cost is most of it). Elsewhere (a replica
        that indexed inside a turn): handed to the background writer."""
        rows = dict(vectors)
        if not _WRITE_NOW.get():
            self.writer.submit(session_id, lambda: self._write({session_id: rows}), f"history vectors of {session_id}")
            return
        self._pending.setdefault(session_id, {}).update(rows)
        if sum(map(len, self._pending.values())) >= FLUSH_PARTS:
            await self.flush()
        elif self._flush_timer is None:
            self._flush_timer = asyncio.create_task(self._flush_soon())

    async def flush(self) -> None:
        """Write the vectors waiting to be written (shutdown calls it before the store closes)."""
        if self._flush_timer is not None and self._flush_timer is not asyncio.current_task():
            self._flush_timer.cancel()
        self._flush_timer = None
        pending, self._pending = self._pending, {}
        if pending:
            await self._write(pending)

    async def _flush_soon(self) -> None:
        await asyncio.sleep(FLUSH_S)
        await self.flush()

    # --- deletion ------------------------------------------------------------------------

    async def delete(self, session_id: str) -> int:
        """Delete every vector of ``session_id``, after the writes queued for it; returns how many went. Raises when
        the store cannot be reached (the caller refuses the deletion rather than leave vectors behind)."""
        outcome: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        async def job() -> None:
            self._pending.pop(session_id, None)
            try:
                async with self._writing:
                    outcome.set_result(await self.knowledge.in_store(lambda store, _: _delete(store, session_id)))
            except Exception as exc:
                outcome.set_exception(exc)

        self.writer.submit(session_id, job, f"deletion of the history vectors of {session_id}")
        return await outcome

    # --- blocking work (worker threads) --------------------------------------------------

    def _col(self, store: KnowledgeStore) -> ChromaCollection:
        cached = self._collection
        if cached is None or cached[0] is not store:
            cached = self._collection = (store, _open_collection(store, self.name, self.embedder))
        return cached[1]

    def _read(self, store: KnowledgeStore, session_id: str, wanted: set[str]) -> dict[str, Sequence[float]]:
        """The session's vectors among ``wanted``: every record returned is checked to be the session's and the
        embedder's (ids carry a hash of the session id too; a ``where`` on a read by id would cost 6 ms, not 0.8)."""
        col = self._col(store)
        include: Any = ["embeddings", "metadatas"]
        pages: Iterable[Any]
        if len(wanted) <= BY_IDS:
            pages = [col.get(ids=[record_id(session_id, k) for k in wanted], include=include)]
        else:
            where: Any = {"$and": [{"session_id": session_id}, {"embedder": self.embedder}]}
            pages = _pages(col, where, include)
        found: dict[str, Sequence[float]] = {}
        for page in pages:
            for meta, vector in zip(page["metadatas"] or [], _vectors(page), strict=True):
                meta = meta or {}
                key = str(meta.get("part"))
                if key in wanted and meta.get("session_id") == session_id and meta.get("embedder") == self.embedder:
                    found[key] = vector
        return found

    async def _write(self, rows: dict[str, dict[str, np.ndarray]]) -> None:
        """Write ``rows`` (session -> key -> vector) in one go."""
        try:
            async with self._writing:
                await self.knowledge.in_store(lambda store, _: self._upsert(store, rows))
        except Exception as exc:  # costs another replica an embedding, never a turn
            self._collection = None
            if not self._failing:
                log.warning("history vectors not stored (%s); they are embedded again where needed", exc)
            self._failing = True
            return
        self._failing = False

    def _upsert(self, store: KnowledgeStore, rows: dict[str, dict[str, np.ndarray]]) -> None:
        col = self._col(store)
        records = [(session_id, key, vector) for session_id, held in rows.items() for key, vector in held.items()]
        batch = max(1, min(1_000, store.client.get_max_batch_size()))
        for start in range(0, len(records), batch):
            part = records[start : start + batch]
            col.upsert(
                ids=[record_id(session_id, key) for session_id, key, _ in part],
                embeddings=np.asarray([vector for _, _, vector in part], dtype=np.float32),
                metadatas=[{"session_id": s, "embedder": self.embedder, "part": key} for s, key, _ in part],
            )


def _open_collection(store: KnowledgeStore, name: str, embedder: str) -> ChromaCollection:
    """The history collection (made on first use). Its records are read by id and metadata, never searched by vector,
    so the vector index Chroma keeps anyway is built as cheaply as it allows (``HNSW``)."""
    from ..knowledge.embeddings import make_embedder
    from ..knowledge.store import KIND_KEY

    return store.client.get_or_create_collection(
        name,
        configuration=cast(Any, {"hnsw": HNSW}),
        metadata={KIND_KEY: HISTORY_KIND},
        embedding_function=make_embedder(embedder),  # type: ignore[arg-type]  # (as KnowledgeStore.collection)
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
    from ..knowledge.store import KIND_KEY

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
