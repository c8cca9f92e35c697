"""Where an embedded store keeps its champion cases: a SQLite file of their own, read whole into memory.

An embedded Chroma never frees what its vector index held: a record written over in place is a deleted
element plus a new one (chroma-core/chroma#2594), so a server recording a case per turn grew by ~1.8 KB per
turn forever, ~9 KB per case before that (measured: +25 MB over 4,000 turns). The case store searches its own
in-memory mirror anyway, so the cases need no index: this table only keeps them. It answers the part of
Chroma's collection API the case store uses (``get``, ``upsert``, ``update``, ``count``), with Chroma's
semantics: an upsert replaces a record, an update merges metadata.

Cases recorded by an earlier version live in Chroma's ``CASES_COLLECTION``: the first open moves them here
(and drops that collection), embedder included, so vectors stay comparable.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from chromadb.utils.embedding_functions import config_to_embedding_function

from .embeddings import make_embedder
from .store import CASES_COLLECTION, KnowledgeStore, included

FILE_NAME = "champion_cases.sqlite3"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS cases (
    record_id TEXT PRIMARY KEY,
    document TEXT NOT NULL,
    metadata TEXT NOT NULL,
    embedding BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_UPSERT = "INSERT OR REPLACE INTO cases VALUES (?, ?, ?, ?)"


class CaseTable:
    """The cases, one row per record: id, query, metadata as JSON, vector as float32 bytes."""

    def __init__(self, db: sqlite3.Connection, embedding_function: Any) -> None:
        self.embedding_function = embedding_function
        self._db = db
        self._lock = threading.Lock()
        """One connection shared by the worker threads the case store runs in."""

    @classmethod
    def open(cls, store: KnowledgeStore) -> CaseTable:
        """The table beside the store's files, created on first use with the cases of its Chroma collection, if any."""
        db = sqlite3.connect(store.folder() / FILE_NAME, check_same_thread=False)
        try:
            db.executescript("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;" + _SCHEMA)
            found = db.execute("SELECT value FROM settings WHERE key = 'embedder'").fetchone()
            described = json.loads(found[0]) if found else _move_from_chroma(db, store)
            return cls(db, config_to_embedding_function(described))
        except BaseException:
            db.close()
            raise

    def get(self, ids: Sequence[str] | None = None, include: Sequence[str] = ()) -> dict[str, Any]:
        """Chroma's ``get``, every column included (the table holds at most the case store's few thousand)."""
        query, args = "SELECT record_id, document, metadata, embedding FROM cases", list(ids or [])
        if ids is not None:
            query += f" WHERE record_id IN ({', '.join('?' * len(args))})"
        with self._lock:
            rows = self._db.execute(query, args).fetchall()
        return {
            "ids": [r[0] for r in rows],
            "documents": [r[1] for r in rows],
            "metadatas": [json.loads(r[2]) for r in rows],
            "embeddings": np.array([np.frombuffer(r[3], dtype=np.float32) for r in rows]),
        }

    def upsert(self, ids: Sequence[str], documents: Sequence[str], metadatas: Sequence[Any], embeddings: Any) -> None:
        rows = [_row(*row) for row in zip(ids, documents, metadatas, embeddings, strict=True)]
        with self._lock, self._db:
            self._db.executemany(_UPSERT, rows)

    def update(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """Merge ``metadatas`` into the records' metadata, as Chroma's ``update`` does."""
        with self._lock, self._db:
            self._db.executemany(
                "UPDATE cases SET metadata = json_patch(metadata, ?) WHERE record_id = ?",
                [(json.dumps(changes), rid) for rid, changes in zip(ids, metadatas, strict=True)],
            )

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM cases").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _move_from_chroma(db: sqlite3.Connection, store: KnowledgeStore) -> dict[str, Any]:
    """Fill a new table: with the cases an earlier version kept in Chroma (then dropped there), in one transaction
    with the embedder they were recorded with; else empty, with the store's embedder. Returns that embedder, as
    Chroma describes one."""
    try:
        collection = store.client.get_collection(CASES_COLLECTION)
    except Exception:  # chromadb raises NotFoundError: nothing was recorded before
        collection = None
    rows: Any = []
    if collection is None:
        function = make_embedder(store.embedder_name)
    else:
        function = included(collection.configuration.get("embedding_function"))
        found = collection.get(include=["documents", "metadatas", "embeddings"])
        documents, metadatas = included(found["documents"]), included(found["metadatas"])
        rows = zip(found["ids"], documents, metadatas, included(found["embeddings"]), strict=True)
    described = {"name": function.name(), "config": function.get_config()}
    with db:
        db.executemany(_UPSERT, [_row(*row) for row in rows])
        db.execute("INSERT INTO settings VALUES ('embedder', ?)", (json.dumps(described),))
    if collection is not None:  # moved: its index is what grew without bound
        store.client.delete_collection(CASES_COLLECTION)
    return described


def _row(record_id: str, document: str, metadata: dict[str, Any] | None, vector: Any) -> tuple[str, str, str, bytes]:
    return record_id, document, json.dumps(dict(metadata or {})), np.asarray(vector, dtype=np.float32).tobytes()
