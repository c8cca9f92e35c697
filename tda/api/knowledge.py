"""/v1/knowledge: the service's knowledge collections over HTTP, through the same functions as `tda knowledge`.

Reads (list, search, context) need the viewer role, writes (ingest, delete) the admin role. Every call runs on
the store the turns use (``svc.knowledge``), in a worker thread: Chroma and the embedder never block the loop.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from quart import Blueprint
from quart_schema import tag_blueprint, validate_request

from .. import scope
from ..auth import require
from ..errors import Invalid, NotFound
from ..knowledge.ingest import IngestReport, Upload, ingest_uploads
from ..knowledge.retrieval import ChromaKnowledgeRetriever, passage_json
from ..knowledge.store import PROJECT_PREFIX, KnowledgeError, KnowledgeStore, in_project, of_project
from ..service import service
from .schemas import KnowledgeContextIn, KnowledgeDocumentIn, KnowledgeIngestIn, KnowledgeSearchIn

bp = Blueprint("knowledge", __name__, url_prefix="/v1/knowledge")
tag_blueprint(bp, ["knowledge"])


def _stored(name: str) -> str:
    """The Chroma name of the caller's project's collection ``name``: a project sees and reaches only its own."""
    if name.startswith(PROJECT_PREFIX):
        msg = f"collection names starting with {PROJECT_PREFIX!r} are reserved; choose another name"
        raise Invalid(msg, errors=[{"loc": "collection", "msg": msg, "type": "value_error"}])
    return in_project(scope.owner(), name)


def _existing(store: KnowledgeStore, names: list[str]) -> None:
    """404 for a collection that does not exist (a search or a turn would quietly find nothing). ``names``: as
    stored (``_stored``)."""
    known = set(store.collection_names())
    missing = [name for name in names if name not in known]
    if missing:
        raise NotFound(
            f"no knowledge collection named {of_project(scope.owner(), missing[0])!r}; GET /v1/knowledge/collections "
            "lists them, POST .../collections/NAME/documents creates one"
        )


def _passage(passage: Any) -> dict[str, Any]:
    found = passage_json(passage)
    if isinstance(found.get("collection"), str):
        found["collection"] = of_project(scope.owner(), found["collection"])
    return found


async def _run(work: Any, *, write: bool = False) -> Any:
    """``work(store, retriever)`` in a worker thread; the store's refusals become 422s that say what to change."""
    try:
        return await service().knowledge.in_store(work, write=write)
    except KnowledgeError as exc:
        raise Invalid(str(exc)) from None


@bp.get("/collections")
@require("viewer")
async def list_collections() -> dict[str, Any]:
    """Every knowledge collection with its document and chunk counts and its embedder."""
    project = scope.owner()
    infos = await _run(lambda store, _: store.list_collections(lambda stored: of_project(project, stored) is not None))
    return {
        "collections": [
            {"name": of_project(project, i.name), "documents": i.documents, "chunks": i.chunks, "embedder": i.embedder}
            for i in infos
        ]
    }


@bp.get("/collections/<name>/documents")
@require("viewer")
async def list_documents(name: str) -> dict[str, Any]:
    stored = _stored(name)

    def documents(store: KnowledgeStore, _: Any) -> list[str]:
        _existing(store, [stored])
        return store.document_ids(stored)

    return {"collection": name, "documents": await _run(documents)}


@bp.post("/collections/<name>/documents")
@require("admin")
@validate_request(KnowledgeIngestIn)
async def ingest_documents(name: str, data: KnowledgeIngestIn) -> tuple[dict[str, Any], int]:
    """Ingest the documents sent (created if missing) as `tda knowledge ingest` ingests files: one that cannot
    be read is a 422 naming it, and then none is stored. Unchanged documents are skipped; changed ones replaced."""
    uploads, stored = _uploads(data.documents), _stored(name)

    def ingest(store: KnowledgeStore, _: Any) -> IngestReport:
        return ingest_uploads(store, uploads, stored, target_tokens=data.target_tokens)

    report = await _run(ingest, write=True)
    if report.refused:
        _refuse_unreadable(report, data.documents)
    body = {
        "collection": name,
        "chunks": report.chunks,
        "documents": [
            {
                "name": f.path,
                "document_id": f.document_id,
                "status": f.status,
                "chunks": f.chunks,
                "duplicates": f.duplicates,
                **({"error": f.error} if f.error else {}),
            }
            for f in report.files
        ],
    }
    return body, 500 if report.errors else 201  # a storing failure (the store or embedder) is not the client's


def _uploads(documents: list[KnowledgeDocumentIn]) -> list[Upload]:
    uploads, errors = [], []
    for n, doc in enumerate(documents):
        if doc.text is not None:
            data = doc.text.encode()
        else:
            try:
                data = base64.b64decode(doc.content_base64 or "", validate=True)
            except (binascii.Error, ValueError):
                errors.append(_error(n, "content_base64", f"{doc.name}: content_base64 is not base64", "base64"))
                continue
        uploads.append(Upload(doc.name, data, doc.id, doc.mime_type))
    errors += _clashes(uploads)
    if errors:
        raise Invalid("; ".join(e["msg"] for e in errors) + "; nothing was stored", errors=errors)
    return uploads


def _clashes(uploads: list[Upload]) -> list[dict[str, Any]]:
    """Two documents of one request with the same id or file name (the second would overwrite the first), or a
    name that is another's folder (``a.md`` and ``a.md/b.md``: both cannot be files)."""
    files = [upload.file_name() for upload in uploads]
    folders = {"/".join(name.split("/")[:n]) for name in files for n in range(1, name.count("/") + 1)}
    errors, ids, seen = [], set(), set()
    for n, (upload, file_name) in enumerate(zip(uploads, files, strict=True)):
        doc_id = upload.document_id or upload.name
        if doc_id in ids or file_name in seen:
            errors.append(_error(n, "name", f"{upload.name}: sent twice (same id or name); send each once", "clash"))
        elif file_name in folders:
            errors.append(_error(n, "name", f"{upload.name}: another document's name uses it as a folder", "clash"))
        ids.add(doc_id)
        seen.add(file_name)
    return errors


def _error(n: int, field: str, msg: str, kind: str) -> dict[str, Any]:
    return {"loc": f"documents.{n}.{field}", "msg": msg, "type": kind}


def _refuse_unreadable(report: IngestReport, documents: list[KnowledgeDocumentIn]) -> None:
    index = {doc.name: n for n, doc in enumerate(documents)}
    errors = [_error(index.get(f.path, 0), "name", f.error, "unreadable") for f in report.errors]
    raise Invalid(
        "; ".join(f.error for f in report.errors) + "; nothing was stored (fix or leave out these documents)",
        errors=errors,
    )


@bp.delete("/collections/<name>")
@require("admin")
async def delete_collection(name: str) -> tuple[str, int]:
    stored = _stored(name)

    def delete(store: KnowledgeStore, _: Any) -> None:
        _existing(store, [stored])
        store.delete_collection(stored)

    await _run(delete, write=True)
    return "", 204


@bp.delete("/collections/<name>/documents/<path:document_id>")
@require("admin")
async def delete_document(name: str, document_id: str) -> tuple[str, int]:
    stored = _stored(name)

    def delete(store: KnowledgeStore, _: Any) -> int:
        _existing(store, [stored])
        return store.delete_document(stored, document_id)

    if not await _run(delete, write=True):
        raise NotFound(f"no document {document_id!r} in {name!r}; GET .../collections/{name}/documents lists them")
    return "", 204


@bp.post("/search")
@require("viewer")
@validate_request(KnowledgeSearchIn)
async def search(data: KnowledgeSearchIn) -> dict[str, Any]:
    """Passages for a query with their scores and provenance, as `tda knowledge search --json` prints them."""

    collections = [_stored(name) for name in data.collections]

    def find(store: KnowledgeStore, retriever: ChromaKnowledgeRetriever) -> list[dict[str, Any]]:
        _existing(store, collections)
        passages = retriever.search(
            data.query,
            collections=collections,
            k=data.k,
            min_score=data.min_score,
            documents=data.documents,
            sections=data.sections,
        )
        return [_passage(p) for p in passages]

    return {"passages": await _run(find)}


@bp.post("/context")
@require("viewer")
@validate_request(KnowledgeContextIn)
async def context(data: KnowledgeContextIn) -> dict[str, Any]:
    """What knowledge_context would add to a turn at this budget ({text, tokens, sources}), as
    `tda knowledge context --json` prints it: the same module, on the service's own store."""
    from ..knowledge.contexts import KnowledgeContextRunner

    svc = service()
    collections = [_stored(name) for name in data.collections]
    await _run(lambda store, _: _existing(store, collections))
    runner = KnowledgeContextRunner(
        svc.settings.data_dir,
        embedder=svc.settings.embedder,
        collections=collections,
        model=data.model or svc.settings.model,
        knowledge=svc.knowledge,
        module=svc.registry.get("knowledge_context"),  # the module turns use, not a fresh import per request
    )
    return await runner.context(data.query, data.budget)
