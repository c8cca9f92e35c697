"""Ingest files into a collection: read, chunk, embed, store. One bad file never stops the others."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from components.context_window.token_estimator import TokenEstimator

from .chunking import DEFAULT_TARGET_TOKENS, chunk_document
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


def discover(paths: Iterable[Path]) -> list[Path]:
    """Files to ingest: explicit files as given, directories searched recursively for supported types."""
    found: dict[Path, None] = {}
    for path in paths:
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.is_file() and child.suffix.lower() in SUPPORTED_SUFFIXES and not child.name.startswith("."):
                    found[child] = None
        else:
            found[path] = None
    return list(found)


def document_id_for(path: Path, base: Path | None = None) -> str:
    """A stable id: the path relative to ``base`` (default: the working directory) when inside it, else
    the absolute path."""
    resolved = path.resolve()
    try:
        return resolved.relative_to((base or Path.cwd()).resolve()).as_posix()
    except ValueError:
        return resolved.as_posix()


def ingest_paths(
    store: KnowledgeStore,
    paths: Sequence[Path],
    collection: str,
    *,
    target_tokens: int = DEFAULT_TARGET_TOKENS,
    tokens: TokenEstimator | None = None,
    on_file: Callable[[FileResult], None] | None = None,
    on_embedded: Callable[[int], None] | None = None,
    base: Path | None = None,
) -> IngestReport:
    """Ingest every file under ``paths`` into ``collection``; per-file errors are collected, not raised."""
    check_collection_name(collection)
    counter = (tokens or TokenEstimator("cl100k_base")).count
    report = IngestReport(collection)
    for path in discover(paths):
        result = _ingest_file(store, path, collection, target_tokens, counter, on_embedded, base)
        report.files.append(result)
        if on_file:
            on_file(result)
    return report


def _ingest_file(
    store: KnowledgeStore,
    path: Path,
    collection: str,
    target_tokens: int,
    counter: Callable[[str], int],
    on_embedded: Callable[[int], None] | None,
    base: Path | None,
) -> FileResult:
    doc_id = document_id_for(path, base)
    try:
        if not path.exists():
            raise ReadError(f"{path}: no such file")
        doc = read_document(path)
        chunks = chunk_document(doc, counter, target_tokens=target_tokens)
        # The hash covers the chunking parameters, so re-ingesting with another target re-chunks.
        doc_hash = hashlib.sha256(path.read_bytes() + f"|{target_tokens}".encode()).hexdigest()
        put = store.put_document(
            collection,
            doc_id,
            title=doc.title,
            chunks=chunks,
            doc_hash=doc_hash,
            source=str(path),
            on_embedded=on_embedded,
        )
    except ReadError as exc:
        return FileResult(str(path), doc_id, "error", error=str(exc))
    except Exception as exc:  # the store or embedder failed for this file: report it, keep going
        return FileResult(str(path), doc_id, "error", error=f"{path}: {type(exc).__name__}: {exc}")
    return FileResult(str(path), doc_id, put.status, put.chunks, put.duplicates)
