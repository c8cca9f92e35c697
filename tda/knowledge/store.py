"""The Chroma-backed store: collections of chunks with provenance, one document replaced atomically.

Embedded ``chromadb.PersistentClient`` under ``data_dir/chroma`` by default; a Chroma server through
``chromadb.HttpClient`` when a URL is configured. Telemetry is off either way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, TypeVar, cast
from urllib.parse import urlparse

import chromadb
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.api.types import Metadata, Where
from chromadb.config import Settings as ChromaSettings

from ..redact import redact_url
from ..scope import DEFAULT_PROJECT
from .chunking import Chunk, Sentence, document_sentences, where_label
from .embeddings import DEFAULT_EMBEDDER, make_embedder

_T = TypeVar("_T")
CASES_COLLECTION = "tda-champion-cases"
KIND_KEY = "tda_kind"
_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]$")
_EMBED_BATCH = 64
SENTENCES_SUFFIX = "--tda-sentences"
"""A knowledge collection's sentence index is the Chroma collection of its name and this suffix (kind "sentences")."""


class KnowledgeError(ValueError):
    """A request the store cannot honour; the message says what to change."""


@dataclass(frozen=True, slots=True)
class CollectionInfo:
    name: str
    documents: int
    chunks: int
    embedder: str


@dataclass(frozen=True, slots=True)
class PutResult:
    status: str  # "added" | "replaced" | "unchanged"
    chunks: int
    duplicates: int = 0


def open_client(data_dir: Path, chroma_url: str | None = None) -> ClientAPI:
    settings = ChromaSettings(anonymized_telemetry=False)
    if chroma_url:
        url = urlparse(chroma_url)
        if not url.hostname:
            raise KnowledgeError(f"chroma URL {redact_url(chroma_url)!r} has no host; use http://HOST:PORT")
        https = url.scheme == "https"
        return chromadb.HttpClient(
            host=url.hostname, port=url.port or (443 if https else 8000), ssl=https, settings=settings
        )
    path = Path(data_dir) / "chroma"
    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=settings)


PROJECT_PREFIX = "prj."
"""Chroma names of the collections of projects other than the default (``prj.<project>.<name>``)."""


def in_project(project: str | None, name: str) -> str:
    """The Chroma name of a project's collection: the name itself in the default project (as before projects)."""
    if project in (None, DEFAULT_PROJECT):
        return name
    return f"{PROJECT_PREFIX}{project}.{name}"


def of_project(project: str | None, stored: str) -> str | None:
    """The name ``project`` knows a stored collection by; None for another project's."""
    if stored.startswith(PROJECT_PREFIX):
        owner, _, name = stored.removeprefix(PROJECT_PREFIX).partition(".")
        return name if owner == project else None
    return stored if project in (None, DEFAULT_PROJECT) else None


def check_collection_name(name: str) -> str:
    if not _NAME.match(name):
        raise KnowledgeError(
            f"invalid collection name {name!r}: use 3-512 letters, digits, '.', '_' or '-', "
            "starting and ending with a letter or digit"
        )
    if name == CASES_COLLECTION:
        raise KnowledgeError(f"{CASES_COLLECTION!r} is reserved for champion cases; choose another name")
    if name.endswith(SENTENCES_SUFFIX) or len(name) + len(SENTENCES_SUFFIX) > 512:
        raise KnowledgeError(
            f"invalid collection name {name!r}: names ending in {SENTENCES_SUFFIX!r} are reserved for sentence "
            f"indexes, and a name may have at most {512 - len(SENTENCES_SUFFIX)} characters"
        )
    return name


def sentences_of(name: str) -> str:
    """The Chroma name of collection ``name``'s sentence index."""
    return f"{name}{SENTENCES_SUFFIX}"


class KnowledgeStore:
    """Collections of document chunks. Writes go through here so retrieval caches can be invalidated."""

    def __init__(self, client: ClientAPI, embedder: str = DEFAULT_EMBEDDER, *, sentences: bool = True) -> None:
        self.client = client
        self.embedder_name = embedder
        self.sentences = sentences
        """Whether a collection without a sentence index gets one as documents are written (one it has is kept up to
        date either way): False where budgets never fall small enough to use it, as in the demo, whose ingestion
        it makes ~1.6x as long."""
        self._versions: dict[str, int] = {}

    @classmethod
    def open(
        cls, data_dir: Path, chroma_url: str | None = None, *, embedder: str = DEFAULT_EMBEDDER, sentences: bool = True
    ) -> KnowledgeStore:
        return cls(open_client(data_dir, chroma_url), embedder, sentences=sentences)

    def folder(self) -> Path:
        """The folder an embedded store keeps its files in (Chroma's are in ``chroma`` there)."""
        settings = self.client.get_settings()
        if not settings.is_persistent or not settings.persist_directory:
            raise KnowledgeError("a Chroma server keeps no files here; this needs an embedded store")
        return Path(settings.persist_directory).parent

    def close(self) -> None:
        """Release the client (HTTP connections, or the embedded database's handles)."""
        # chromadb 1.5.9 stops its HTTP client components without closing the httpx sessions inside them.
        for owner in (self.client, getattr(self.client, "_admin_client", None)):
            session = getattr(getattr(owner, "_server", None), "_session", None)
            if session is not None:
                session.close()
        self.client.close()  # type: ignore[attr-defined]

    # --- collections ---------------------------------------------------------------------

    def collection(self, name: str, *, create: bool = False, kind: str = "knowledge") -> Collection:
        """The named collection; with ``create`` it is made (with this store's embedder) if missing."""
        if create and kind == "knowledge":
            check_collection_name(name)
        try:
            return self.client.get_collection(name)  # an existing collection keeps its own embedder
        except Exception as exc:  # chromadb raises NotFoundError (or ValueError in older servers)
            if not create:
                raise KnowledgeError(
                    f"no knowledge collection named {name!r}; ingest into it first or check `tda knowledge list`"
                ) from exc
        return self.client.get_or_create_collection(
            name,
            # chromadb types the parameter as taking texts or images (EmbeddingFunction is invariant): ours embeds texts
            embedding_function=make_embedder(self.embedder_name),  # type: ignore[arg-type]
            metadata={KIND_KEY: kind},
        )

    def embedder_for(self, name: str) -> Any:
        """The embedding function ``name`` uses: its own if it exists, else the one it would be created with."""
        try:
            return self.client.get_collection(name).configuration.get("embedding_function")
        except Exception:  # not there yet
            return make_embedder(self.embedder_name)

    def collection_names(self) -> list[str]:
        return sorted(
            c.name
            for c in self.client.list_collections()
            if (c.metadata or {}).get(KIND_KEY, "knowledge") == "knowledge"
        )

    def list_collections(self, which: Callable[[str], bool] = lambda _: True) -> list[CollectionInfo]:
        infos = []
        for name in filter(which, self.collection_names()):
            col = self.collection(name)
            metas = col.get(include=["metadatas"])["metadatas"] or []
            documents = {m.get("document_id") for m in metas}
            embedder = type(col.configuration.get("embedding_function")).__name__
            infos.append(CollectionInfo(name, len(documents), len(metas), embedder))
        return infos

    def delete_collection(self, name: str) -> None:
        self.collection(name)  # a clear error when it does not exist
        self.client.delete_collection(name)
        if self.sentence_collection(name) is not None:
            self.client.delete_collection(sentences_of(name))
        self._bump(name)

    def sentence_collection(self, name: str, *, create: bool = False) -> Collection | None:
        """Collection ``name``'s sentence index (every sentence of its documents, embedded alone, with its document
        and chunk); None when it has none (a store ingested before sentence indexes: retrieval goes without it)."""
        try:
            return self.client.get_collection(sentences_of(name))
        except Exception:  # chromadb raises NotFoundError (or ValueError in older servers)
            if not create:
                return None
        return self.client.get_or_create_collection(
            sentences_of(name),
            embedding_function=self.embedder_for(name),
            metadata={KIND_KEY: "sentences"},
        )

    def version(self, name: str) -> int:
        """Changes whenever this store writes to ``name`` (retrieval caches key on it)."""
        return self._versions.get(name, 0)

    def _bump(self, name: str) -> None:
        self._versions[name] = self._versions.get(name, 0) + 1

    # --- documents -----------------------------------------------------------------------

    def document_ids(self, collection: str) -> list[str]:
        metas = self.collection(collection).get(include=["metadatas"])["metadatas"] or []
        return sorted({str(m["document_id"]) for m in metas})

    def delete_document(self, collection: str, document_id: str) -> int:
        col = self.collection(collection)
        ids = col.get(where={"document_id": document_id}, include=[])["ids"]
        sentences = self.sentence_collection(collection)
        if sentences is not None:
            sentences.delete(where={"document_id": document_id})
        if ids:
            col.delete(ids=ids)
            self._bump(collection)
        return len(ids)

    def put_document(
        self,
        collection: str,
        document_id: str,
        *,
        title: str,
        chunks: Sequence[Chunk],
        doc_hash: str,
        source: str = "",
        on_embedded: Callable[[int], None] | None = None,
    ) -> PutResult:
        """Store ``chunks`` as the whole of ``document_id``: new chunks are written first, then the old
        ones removed, so a failure leaves the previous version intact (never half a document).

        Every document owns its chunks: a text that another document also holds is stored for each of
        them (retrieval shows it once), so deleting or replacing one never takes text from the other.
        """
        col = self.collection(collection, create=True)
        old = col.get(where={"document_id": document_id}, include=["metadatas"])
        if old["ids"] and all((m or {}).get("doc_hash") == doc_hash for m in old["metadatas"] or []):
            if self.sentences:
                self._index_sentences(collection, document_id, title, _unique_chunks(chunks), doc_hash)
            return PutResult("unchanged", len(old["ids"]))
        fresh = _unique_chunks(chunks)
        ids = [f"{document_id}::{doc_hash[:12]}::{c.chunk_index}" for c in fresh]
        metadatas = [_metadata(c, document_id, title, doc_hash, source) for c in fresh]
        embeddings = self._embed(col, [embedding_text(title, c) for c in fresh], on_embedded)
        sentences = self.sentence_collection(collection, create=self.sentences)
        rows = None if sentences is None else self._sentence_rows(sentences, document_id, title, fresh, doc_hash)
        old_sentences = (
            [] if sentences is None else sentences.get(where={"document_id": document_id}, include=[])["ids"]
        )
        written: list[tuple[Collection, list[str]]] = []
        try:
            self._add(col, ids, [c.text for c in fresh], metadatas, embeddings, written)
            if sentences is not None and rows is not None:
                self._add(sentences, *rows, written)
        except Exception:
            self._undo(written)
            raise
        stale = [i for i in old["ids"] if i not in set(ids)]
        if stale:
            col.delete(ids=stale)
        stale_sentences = [i for i in old_sentences if rows is not None and i not in set(rows.ids)]
        if sentences is not None and stale_sentences:
            sentences.delete(ids=stale_sentences)
        self._bump(collection)
        return PutResult("replaced" if old["ids"] else "added", len(fresh), len(chunks) - len(fresh))

    def _index_sentences(
        self, collection: str, document_id: str, title: str, chunks: Sequence[Chunk], doc_hash: str
    ) -> None:
        """An unchanged document's sentences, when its collection was ingested before sentence indexes: ingesting
        it again builds them (nothing else of the document is written)."""
        sentences = self.sentence_collection(collection, create=True)
        assert sentences is not None
        if sentences.get(where={"document_id": document_id}, include=[], limit=1)["ids"]:
            return
        rows = self._sentence_rows(sentences, document_id, title, chunks, doc_hash)
        written: list[tuple[Collection, list[str]]] = []
        try:
            self._add(sentences, *rows, written)
        except Exception:
            self._undo(written)
            raise
        self._bump(collection)

    def _sentence_rows(
        self, col: Collection, document_id: str, title: str, chunks: Sequence[Chunk], doc_hash: str
    ) -> _SentenceRows:
        """A document's sentences as sentence-index rows: each sentence embedded alone, with its document, its place
        among the document's sentences and the chunk holding it (whose title and section label its window)."""
        sections = {c.chunk_index: c.section for c in chunks}
        found: list[Sentence] = document_sentences(chunks)
        texts = [s.text for s in found]
        return _SentenceRows(
            [f"{document_id}::{doc_hash[:12]}::s{s.position}" for s in found],
            texts,
            [
                {
                    "document_id": document_id,
                    "title": title,
                    "section": sections[s.chunk_index],
                    "chunk_index": s.chunk_index,
                    "position": s.position,
                    "doc_hash": doc_hash,
                }
                for s in found
            ],
            self._embed(col, texts, None),
        )

    @staticmethod
    def _undo(written: list[tuple[Collection, list[str]]]) -> None:
        """Remove what a failed write had added (a collection it added nothing to is left alone: Chroma refuses an
        empty list of ids, which would hide the write's own error)."""
        for target, done in written:
            if done:
                target.delete(ids=done)

    def _add(
        self,
        col: Collection,
        ids: list[str],
        documents: list[str],
        metadatas: list[Metadata],
        embeddings: list[Any],
        written: list[tuple[Collection, list[str]]],
    ) -> None:
        """Add rows in the client's batches; ``written`` records what was added (to undo on a failure)."""
        done: list[str] = []
        written.append((col, done))
        size = self.client.get_max_batch_size()
        for start in range(0, len(ids), size):
            batch = slice(start, start + size)
            col.add(
                ids=ids[batch], documents=documents[batch], metadatas=metadatas[batch], embeddings=embeddings[batch]
            )
            done.extend(ids[batch])

    def _embed(self, col: Collection, texts: list[str], on_embedded: Callable[[int], None] | None) -> list[Any]:
        embed = col.configuration.get("embedding_function") or make_embedder(self.embedder_name)
        vectors: list[Any] = []
        for start in range(0, len(texts), _EMBED_BATCH):
            batch = texts[start : start + _EMBED_BATCH]
            vectors.extend(embed(batch))
            if on_embedded:
                on_embedded(len(batch))
        return vectors

    def get_chunks(
        self,
        collection: str,
        *,
        where: Mapping[str, Any] | None = None,
        ids: Sequence[str] | None = None,
        vectors: bool = False,
    ) -> list[dict[str, Any]]:
        """Chunks as dicts (id, text, metadata; with ``vectors``, also its embedding as "vector"), for neighbour
        lookup and the retriever's in-memory index."""
        include: list[Any] = ["documents", "metadatas", *(["embeddings"] if vectors else [])]
        got = self.collection(collection).get(
            where=cast(Where | None, where), ids=list(ids) if ids else None, include=include
        )  # the filter is built by our callers as plain dicts (chromadb's Where spells its operators as Literals)
        rows = [
            {"id": i, "text": t, "metadata": m or {}}
            for i, t, m in zip(got["ids"], got["documents"] or [], got["metadatas"] or [], strict=True)
        ]
        if vectors:
            for row, vector in zip(rows, got["embeddings"] if got["embeddings"] is not None else [], strict=True):
                row["vector"] = vector
        return rows


class _SentenceRows(NamedTuple):
    ids: list[str]
    documents: list[str]
    metadatas: list[Metadata]
    embeddings: list[Any]


def _unique_chunks(chunks: Sequence[Chunk]) -> list[Chunk]:
    """The chunks without repeats of a text earlier in the same document (a running footer)."""
    seen: set[str] = set()
    out = []
    for chunk in chunks:
        if chunk.content_hash not in seen:
            out.append(chunk)
        seen.add(chunk.content_hash)
    return out


def embedding_text(title: str, chunk: Chunk) -> str:
    """What is embedded: the chunk prefixed by where it sits (title › section), so a passage that never
    names its subject is still found by it."""
    where = where_label(title, chunk.section)
    return f"{where}\n{chunk.text}" if where else chunk.text


def _metadata(chunk: Chunk, document_id: str, title: str, doc_hash: str, source: str) -> Metadata:
    meta: dict[str, str | int | None] = {
        "document_id": document_id,
        "title": title,
        "section": chunk.section,
        "chunk_index": chunk.chunk_index,
        "token_count": chunk.token_count,
        "content_hash": chunk.content_hash,
        "doc_hash": doc_hash,
        "source": source,
    }
    if chunk.page_start is not None:
        meta["page_start"] = chunk.page_start
        meta["page_end"] = chunk.page_end
    return meta


def included(value: _T | None) -> _T:
    """A field of a Chroma result that the query asked to include (typed optional: another query might not)."""
    if value is None:
        raise RuntimeError("Chroma left out a field the query included")
    return value
