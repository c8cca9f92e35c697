"""The vectors of recalled history's parts, kept in the application's database (``history_vectors``, through
``tda/store/vectors.py``): another replica, or this one after a restart, reads them instead of embedding a session's
history again.

A row is one part of one session's history for one embedder (embedders differ in dimensions and meaning), named by
the part's ``part_key`` (a hash of its text): a part is stored once per session, and an edited or retried history
finds the parts it did not change. Every read names the session: a session never gets another's vectors, even for
the same text. Vectors are float32 bytes, read back exactly as embedded (cold ranks as warm).

Writes happen when the service indexes (``write_now``: the background writer, after the response) or are handed to
the background writer (a replica that indexed a session inside a turn): never in the turn's path. A database that
fails costs only the embedding it would have saved: reads and writes are logged once per outage and the turn goes
on. Deleting a session deletes its vectors (a cascade); purging its memory deletes them here, after the writes
queued for it.

Earlier versions kept these vectors in Chroma collections named ``tda-history-parts-<embedder>``: they are no longer
read nor written (the first turn that misses a vector embeds it and stores it here), and can be deleted by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..background import BackgroundWriter
    from ..store.vectors import HistoryVectorStore

log = logging.getLogger(__name__)

CHEAP_EMBEDDERS = frozenset({"hashing"})
"""Embedders that cost less than the store: hashing embeds a part in ~0.04 ms of CPU, less than a part's share of a
write (docs/knowledge.md, "History recall")."""
READ_S = 1.0
"""A read waits this long (plus 1 ms a part) before the parts are embedded instead (and the store is left alone for
30 s, ``STORE_RETRY_S``): a stalled database holds one turn, not every one."""

FLUSH_PARTS = 64
FLUSH_S = 1.0
"""A recorded turn's vectors are written with others within this long, or once 64 parts wait: one transaction for
many turns' few rows. A replica that syncs the turn meanwhile embeds its few parts itself, as it would without the
store."""

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


class StoredPartVectors:
    """The component's ``PartVectors`` over the application's database, for one embedder."""

    def __init__(self, store: HistoryVectorStore, embedder: str, writer: BackgroundWriter) -> None:
        self.store = store
        self.embedder = embedder
        self.writer = writer
        self._failing = False
        self._pending: dict[str, dict[str, np.ndarray]] = {}
        """Vectors of recorded turns waiting to be written together (session -> key -> vector)."""
        self._flush_timer: asyncio.Task[None] | None = None
        self._writing = asyncio.Lock()
        """Held while vectors are written or deleted: a deletion never runs beside a write that would undo it."""

    # --- PartVectors ---------------------------------------------------------------------

    async def get(self, session_id: str, keys: Collection[str]) -> dict[str, Sequence[float]]:
        read = self.store.get(session_id, self.embedder, keys)
        found: dict[str, Any] = await asyncio.wait_for(read, READ_S + len(keys) / 1_000)
        return found

    async def put(self, session_id: str, vectors: Mapping[str, np.ndarray]) -> None:
        """In the indexing job (``write_now``): an import's vectors are written at once; a recorded turn's few wait
        up to ``FLUSH_S`` for others to be written with. Elsewhere (a replica that indexed inside a turn): handed
        to the background writer."""
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
        """Write the vectors waiting to be written (shutdown calls it before the database closes)."""
        if self._flush_timer is not None and self._flush_timer is not asyncio.current_task():
            self._flush_timer.cancel()
        self._flush_timer = None
        pending, self._pending = self._pending, {}
        if pending:
            await self._write(pending)

    async def _flush_soon(self) -> None:
        await asyncio.sleep(FLUSH_S)
        await self.flush()

    async def _write(self, rows: dict[str, dict[str, np.ndarray]]) -> None:
        """Write ``rows`` (session -> key -> vector) in one transaction."""
        try:
            async with self._writing:
                await self.store.add(self.embedder, rows)
        except Exception as exc:  # costs another replica an embedding, never a turn
            if not self._failing:
                log.warning("history vectors not stored (%s); they are embedded again where needed", exc)
            self._failing = True
            return
        self._failing = False

    # --- deletion ------------------------------------------------------------------------

    async def delete(self, session_id: str) -> int:
        """Delete every vector of ``session_id``, after the writes queued for it; returns how many went. Raises when
        the database cannot be reached (the caller refuses the purge rather than leave vectors behind)."""
        outcome: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        async def job() -> None:
            self._pending.pop(session_id, None)
            try:
                async with self._writing:
                    outcome.set_result(await self.store.delete(session_id))
            except Exception as exc:
                outcome.set_exception(exc)

        self.writer.submit(session_id, job, f"deletion of the history vectors of {session_id}")
        return await outcome


def part_vectors_for(
    store: HistoryVectorStore, knowledge: Any, embedder_name: str, recall_embedder: Any, writer: BackgroundWriter
) -> StoredPartVectors | None:
    """The store for recall's vectors, when recall embeds with the knowledge store's own embedder (named
    ``embedder_name``; an injected one may differ) and embedding costs more than the store (``CHEAP_EMBEDDERS``)."""
    if recall_embedder is not knowledge or embedder_name in CHEAP_EMBEDDERS:
        return None
    return StoredPartVectors(store, embedder_name, writer)
