"""``tda knowledge``: ingest, search, list and delete knowledge collections.

Heavy imports (chromadb, the embedding model) happen inside the commands, so ``tda --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tda.config import Settings

    from .store import KnowledgeStore


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    knowledge = subparsers.add_parser("knowledge", help="knowledge collections (Chroma): ingest, search, list, delete")
    actions = knowledge.add_subparsers(dest="knowledge_command", required=True)

    ingest = actions.add_parser("ingest", help="ingest .txt, .md, .pdf and .html files (folders are searched)")
    ingest.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    ingest.add_argument("--collection", required=True, help="collection to ingest into (created if missing)")
    ingest.add_argument("--target-tokens", type=int, default=300, help="chunk size target in tokens (default 300)")
    _embedder_option(ingest)
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.set_defaults(func=cmd_ingest)

    search = actions.add_parser("search", help="retrieve passages for a query")
    search.add_argument("query")
    search.add_argument(
        "--collection", action="append", default=[], help="collection to search (repeatable; default: all)"
    )
    search.add_argument("-k", type=int, default=5, help="passages to return (default 5)")
    search.add_argument("--min-score", type=float, default=0.0)
    search.add_argument("--document", action="append", default=[], help="only this document id (repeatable)")
    search.add_argument("--section", action="append", default=[], help="only this section and below (repeatable)")
    search.add_argument("--json", action="store_true")
    _embedder_option(search)
    search.set_defaults(func=cmd_search)

    listing = actions.add_parser(
        "list", help="collections with document and chunk counts; or one collection's documents"
    )
    listing.add_argument("--collection", help="list this collection's documents")
    _embedder_option(listing)
    listing.set_defaults(func=cmd_list)

    delete = actions.add_parser("delete", help="delete a collection, or documents from it")
    delete.add_argument("--collection", required=True)
    delete.add_argument("--document", action="append", default=[], help="delete only this document id (repeatable)")
    _embedder_option(delete)
    delete.set_defaults(func=cmd_delete)


def _embedder_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--embedder",
        choices=["minilm-onnx", "minilm", "hashing"],
        help="embedder for new collections (default: TDA_EMBEDDER, else minilm-onnx; existing collections keep theirs)",
    )


def _open(args: argparse.Namespace, settings: Settings) -> KnowledgeStore:
    from .store import KnowledgeStore

    return KnowledgeStore.open(settings.data_dir, settings.chroma_url, embedder=args.embedder or settings.embedder)


def _fail(command: str, exc: Exception) -> int:
    print(f"tda knowledge {command}: {exc}", file=sys.stderr)
    return 2


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    from tqdm import tqdm

    from .ingest import discover, ingest_paths
    from .store import KnowledgeError

    try:
        store = _open(args, settings)
        files = discover(args.paths)
        with tqdm(total=len(files), unit="file", disable=args.quiet, file=sys.stderr, desc=args.collection) as bar:

            def advance(result: Any) -> None:
                bar.update(1)
                bar.set_postfix_str(f"{Path(result.path).name}: {result.status}")

            report = ingest_paths(store, files, args.collection, target_tokens=args.target_tokens, on_file=advance)
    except (KnowledgeError, ValueError) as exc:
        return _fail("ingest", exc)
    for result in report.files:
        if result.status == "error":
            print(f"error      {result.error}", file=sys.stderr)
        else:
            dup = f", {result.duplicates} duplicate chunks skipped" if result.duplicates else ""
            print(f"{result.status:<10} {result.document_id} ({result.chunks} chunks{dup})")
    done = len(report.files) - len(report.errors)
    print(f"{done} of {len(report.files)} files ingested into {args.collection!r}: {report.chunks} new chunks")
    return 1 if report.errors else 0


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    from .chunking import where_label
    from .retrieval import ChromaKnowledgeRetriever
    from .store import KnowledgeError

    try:
        retriever = ChromaKnowledgeRetriever(_open(args, settings))
        for name in args.collection:
            retriever.store.collection(name)  # a clear error for a misspelt collection
        passages = retriever.search(
            args.query,
            collections=args.collection,
            k=args.k,
            min_score=args.min_score,
            documents=args.document,
            sections=args.section,
        )
    except (KnowledgeError, ValueError) as exc:
        return _fail("search", exc)
    if args.json:
        rows = [
            {
                "score": p.score,
                "collection": p.collection,
                "document_id": p.document_id,
                "title": p.title,
                "section": p.section,
                "page": p.page,
                "chunk_index": p.chunk_index,
                "text": p.text,
            }
            for p in passages
        ]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not passages:
        print("no passages found")
    for n, p in enumerate(passages, start=1):
        where = where_label(p.title or p.document_id, p.section)
        page = f" (p. {p.page})" if p.page is not None else ""
        print(f"[{n}] {p.score:.3f}  {where}{page}  [{p.collection}:{p.document_id}#{p.chunk_index}]")
        print(f"    {' '.join(p.text.split())[:300]}\n")
    return 0


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    from .store import KnowledgeError

    try:
        store = _open(args, settings)
        if args.collection:
            for doc in store.document_ids(args.collection):
                print(doc)
            return 0
        infos = store.list_collections()
    except (KnowledgeError, ValueError) as exc:
        return _fail("list", exc)
    if not infos:
        print("no knowledge collections yet: tda knowledge ingest PATH --collection NAME")
    for info in infos:
        print(f"{info.name:<32}{info.documents:>6} documents{info.chunks:>8} chunks  {info.embedder}")
    return 0


def cmd_delete(args: argparse.Namespace, settings: Settings) -> int:
    from .store import KnowledgeError

    try:
        store = _open(args, settings)
        if not args.document:
            store.delete_collection(args.collection)
            print(f"deleted collection {args.collection!r}")
            return 0
        known = set(store.document_ids(args.collection))
        missing = [d for d in args.document if d not in known]
        if missing:
            raise KnowledgeError(
                f"no document {missing[0]!r} in {args.collection!r}; "
                f"see `tda knowledge list --collection {args.collection}`"
            )
        for doc in args.document:
            print(f"deleted {doc} ({store.delete_document(args.collection, doc)} chunks)")
    except (KnowledgeError, ValueError) as exc:
        return _fail("delete", exc)
    return 0
