"""Ingest files into a collection: read, chunk, embed, store. One bad file never stops the others."""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
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
    refused: bool = False
    """All or nothing, and some file could not be read: nothing was stored; ``files`` holds those errors."""

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
    source: str = ""


def _with_source(item: _Prepared, source: str) -> _Prepared:
    return _Prepared(item.path, item.document_id, item.title, item.chunks, item.doc_hash, source)


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
    document_ids: Mapping[Path, str] | None = None,
    sources: Mapping[Path, str] | None = None,
    all_or_nothing: bool = False,
) -> IngestReport:
    """Ingest every file under ``paths`` into ``collection``; per-file errors are collected, not raised.

    Every file is read and chunked first, so ``on_planned`` learns the total number of chunks before
    the slow part (embedding) starts; ``on_embedded`` then counts chunks as they are embedded, and
    ``on_file`` reports each file as it is stored (or skipped: its chunks count as done).
    ``document_ids`` names some files' documents explicitly, ``sources`` their provenance (default: the path).
    With ``all_or_nothing``, a file that cannot be read stops the ingest before anything is stored: the report
    then holds only the errors."""
    check_collection_name(collection)
    if id_scheme not in ID_SCHEMES:
        raise ValueError(f"unknown id scheme {id_scheme!r}; use one of {', '.join(ID_SCHEMES)}")
    counter = (tokens or TokenEstimator("cl100k_base")).count
    report = IngestReport(collection)
    prepared: list[_Prepared | FileResult] = []
    named, sourced = document_ids or {}, sources or {}
    for path, root in discover(paths, base):
        item = _prepare(path, root, id_scheme, target_tokens, counter, named.get(path))
        prepared.append(
            item if path not in sourced or isinstance(item, FileResult) else _with_source(item, sourced[path])
        )
    if all_or_nothing and any(isinstance(p, FileResult) for p in prepared):
        report.files = [p for p in prepared if isinstance(p, FileResult)]
        report.refused = True
        return report
    if on_planned:
        on_planned(sum(len(p.chunks) for p in prepared if isinstance(p, _Prepared)))
    for item in prepared:
        result = item if isinstance(item, FileResult) else _store(store, item, collection, on_embedded)
        report.files.append(result)
        if on_file:
            on_file(result)
    return report


def _prepare(
    path: Path, root: Path, scheme: str, target_tokens: int, counter: Callable[[str], int], doc_id: str | None = None
) -> _Prepared | FileResult:
    try:
        if not path.exists():
            raise ReadError(f"{path}: no such file")
        doc_id = doc_id or document_id_for(path, root, scheme)
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
            source=item.source or str(item.path),
            on_embedded=on_embedded,
        )
    except Exception as exc:  # the store or embedder failed for this file: report it, keep going
        error = f"{item.path}: {type(exc).__name__}: {exc}"
        return FileResult(str(item.path), item.document_id, "error", error=error, planned=len(item.chunks))
    return FileResult(
        str(item.path), item.document_id, put.status, put.chunks, put.duplicates, planned=len(item.chunks)
    )


# --- documents sent over HTTP: the same path as files on disk ------------------------------

READER_SUFFIX = {
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/x-markdown": ".md",
    "text/html": ".html",
    "application/pdf": ".pdf",
}
"""MIME type -> the suffix whose reader reads it."""


@dataclass(frozen=True, slots=True)
class Upload:
    """A document sent as bytes: ``name`` is its relative file name (``guides/setup.md``), the document id unless
    ``document_id`` is given; ``mime_type`` picks the reader when the name's suffix does not."""

    name: str
    data: bytes
    document_id: str | None = None
    mime_type: str | None = None

    def file_name(self) -> str:
        """The name written to disk: the upload's, with the MIME type's suffix added when its own reads otherwise."""
        wanted = READER_SUFFIX.get(self.mime_type or "")
        suffix = Path(self.name).suffix.lower()
        if wanted is None or READER_SUFFIX.get(_MIME_OF.get(suffix, "")) == wanted:
            return self.name
        return self.name + wanted


_MIME_OF = {".txt": "text/plain", ".md": "text/markdown", ".markdown": "text/markdown", ".htm": "text/html"}
_MIME_OF |= {".html": "text/html", ".pdf": "application/pdf"}


def ingest_uploads(
    store: KnowledgeStore,
    uploads: Sequence[Upload],
    collection: str,
    *,
    target_tokens: int = DEFAULT_TARGET_TOKENS,
) -> IngestReport:
    """Ingest documents held in memory (the HTTP API) through ``ingest_paths``, as the CLI ingests files: each is
    written under a temporary root at its name, so the ids, chunks and hashes are those of the same files on disk.
    All or nothing: one unreadable upload stores none of them. Paths in the report are the upload names."""
    with tempfile.TemporaryDirectory(prefix="tda-ingest-") as tmp:
        root = Path(tmp)
        paths, ids = [], {}
        for upload in uploads:
            path = root / upload.file_name()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(upload.data)
            paths.append(path)
            ids[path] = upload.document_id or upload.name
        report = ingest_paths(
            store,
            paths,
            collection,
            target_tokens=target_tokens,
            base=root,
            document_ids=ids,
            sources={path: upload.name for path, upload in zip(paths, uploads, strict=True)},
            all_or_nothing=True,
        )
    names = {str(path): upload.name for path, upload in zip(paths, uploads, strict=True)}
    prefix = f"{root}/"
    report.files = [
        FileResult(
            names.get(f.path, f.path),
            ids.get(Path(f.path), f.document_id) if f.status == "error" else f.document_id,
            f.status,
            f.chunks,
            f.duplicates,
            f.error.replace(prefix, ""),
            f.planned,
        )
        for f in report.files
    ]
    return report
