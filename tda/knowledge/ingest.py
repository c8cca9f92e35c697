"""Ingest files into a collection: read, chunk, embed, store. One bad file never stops the others."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from components.context_window.token_estimator import TokenEstimator

from .chunking import DEFAULT_TARGET_TOKENS, Chunk, chunk_document
from .readers import SUPPORTED_SUFFIXES, ReadError, read_document
from .store import KnowledgeStore, check_collection_name


@dataclass(frozen=True, slots=True)
class FileResult:
    path: str
    document_id: str
    status: str  # added | replaced | unchanged | error
    chunks: int = 0
    duplicates: int = 0
    error: str = ""
    planned: int = 0
    """Chunks the file was cut into (progress counts these whether stored, unchanged or failed)."""


@dataclass
class IngestReport:
    collection: str
    files: list[FileResult] = field(default_factory=list)

    @property
    def errors(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "error"]

    @property
    def chunks(self) -> int:
        return sum(f.chunks for f in self.files if f.status in {"added", "replaced"})


def discover(paths: Iterable[Path], root: Path | None = None) -> list[tuple[Path, Path]]:
    """Files to ingest, each with the root its id is relative to: ``root`` when given, else the folder
    named on the command line (a file named directly is relative to its own folder)."""
    found: dict[Path, Path] = {}
    for path in paths:
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.is_file() and child.suffix.lower() in SUPPORTED_SUFFIXES and not child.name.startswith("."):
                    found.setdefault(child, root or path)
        else:
            found.setdefault(path, root or path.parent)
    return list(found.items())


ID_SCHEMES = ("path", "content")


def document_id_for(path: Path, root: Path, scheme: str = "path") -> str:
    """A stable id that never depends on the working directory: the path relative to ``root``
    (``path``), or a hash of the file's bytes (``content``: the same text has one id wherever it is)."""
    if scheme == "content":
        return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()[:24]
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ReadError(f"{path}: not under the ingest root {root}; give a --root that contains it") from None


@dataclass(frozen=True, slots=True)
class _Prepared:
    path: Path
    document_id: str
    title: str
    chunks: list[Chunk]
    doc_hash: str


def ingest_paths(
    store: KnowledgeStore,
    paths: Sequence[Path],
    collection: str,
    *,
    target_tokens: int = DEFAULT_TARGET_TOKENS,
    tokens: TokenEstimator | None = None,
    on_file: Callable[[FileResult], None] | None = None,
    on_planned: Callable[[int], None] | None = None,
    on_embedded: Callable[[int], None] | None = None,
    base: Path | None = None,
    id_scheme: str = "path",
) -> IngestReport:
    """Ingest every file under ``paths`` into ``collection``; per-file errors are collected, not raised.

    Every file is read and chunked first, so ``on_planned`` learns the total number of chunks before
    the slow part (embedding) starts; ``on_embedded`` then counts chunks as they are embedded, and
    ``on_file`` reports each file as it is stored (or skipped: its chunks count as done)."""
    check_collection_name(collection)
    if id_scheme not in ID_SCHEMES:
        raise ValueError(f"unknown id scheme {id_scheme!r}; use one of {', '.join(ID_SCHEMES)}")
    counter = (tokens or TokenEstimator("cl100k_base")).count
    report = IngestReport(collection)
    prepared: list[_Prepared | FileResult] = []
    for path, root in discover(paths, base):
        prepared.append(_prepare(path, root, id_scheme, target_tokens, counter))
    if on_planned:
        on_planned(sum(len(p.chunks) for p in prepared if isinstance(p, _Prepared)))
    for item in prepared:
        result = item if isinstance(item, FileResult) else _store(store, item, collection, on_embedded)
        report.files.append(result)
        if on_file:
            on_file(result)
    return report


def _prepare(
    path: Path, root: Path, scheme: str, target_tokens: int, counter: Callable[[str], int]
) -> _Prepared | FileResult:
    try:
        if not path.exists():
            raise ReadError(f"{path}: no such file")
        doc_id = document_id_for(path, root, scheme)
        doc = read_document(path)
        chunks = chunk_document(doc, counter, target_tokens=target_tokens)
        # The hash covers the chunking parameters, so re-ingesting with another target re-chunks.
        doc_hash = hashlib.sha256(path.read_bytes() + f"|{target_tokens}".encode()).hexdigest()
    except ReadError as exc:
        return FileResult(str(path), path.name, "error", error=str(exc))
    except Exception as exc:  # a reader or chunker bug for this file: report it, keep going
        return FileResult(str(path), path.name, "error", error=f"{path}: {type(exc).__name__}: {exc}")
    return _Prepared(path, doc_id, doc.title, chunks, doc_hash)


def _store(
    store: KnowledgeStore, item: _Prepared, collection: str, on_embedded: Callable[[int], None] | None
) -> FileResult:
    try:
        put = store.put_document(
            collection,
            item.document_id,
            title=item.title,
            chunks=item.chunks,
            doc_hash=item.doc_hash,
            source=str(item.path),
            on_embedded=on_embedded,
        )
    except Exception as exc:  # the store or embedder failed for this file: report it, keep going
        error = f"{item.path}: {type(exc).__name__}: {exc}"
        return FileResult(str(item.path), item.document_id, "error", error=error, planned=len(item.chunks))
    return FileResult(
        str(item.path), item.document_id, put.status, put.chunks, put.duplicates, planned=len(item.chunks)
    )
