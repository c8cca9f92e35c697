"""``tda knowledge``: ingest, search, list and delete knowledge collections, and show the context a
turn would get (``context``).

Heavy imports (chromadb, the embedding model) happen inside the commands, so ``tda --help`` stays fast.
Every command exits cleanly when its output pipe closes early (``tda knowledge list | head``).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tda.config import Settings

    from .store import KnowledgeStore


def register(subparsers: argparse._SubParsersAction) -> None:
    knowledge = subparsers.add_parser("knowledge", help="knowledge collections (Chroma): ingest, search, list, delete")
    actions = knowledge.add_subparsers(dest="knowledge_command", required=True)

    ingest = actions.add_parser("ingest", help="ingest .txt, .md, .pdf and .html files (folders are searched)")
    ingest.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    ingest.add_argument("--collection", required=True, help="collection to ingest into (created if missing)")
    ingest.add_argument("--target-tokens", type=int, default=300, help="chunk size target in tokens (default 300)")
    ingest.add_argument(
        "--root",
        type=Path,
        help="document ids are paths relative to this folder (default: each folder given; a file given "
        "directly is relative to its own folder). Never the working directory.",
    )
    ingest.add_argument(
        "--id-from",
        choices=["path", "content"],
        default="path",
        help="document id: the path relative to the root (default), or a hash of the file's content",
    )
    _embedder_option(ingest)
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.set_defaults(func=cmd_ingest)

    search = actions.add_parser("search", help="retrieve passages for a query")
    search.add_argument("query")
    search.add_argument(
        "--collection", action="append", default=[], help="collection to search (repeatable; default: all)"
    )
    search.add_argument("-k", type=int, default=5, help="passages to return (default 5)")
    search.add_argument(
        "--min-score",
        type=float,
        default=0.0,
        help="drop passages whose cosine similarity to the query is below this (default 0: none)",
    )
    search.add_argument(
        "--relative-floor",
        type=float,
        default=0.5,
        help="also drop passages that BOTH dense and BM25 rate below this share of their best hit "
        "(default 0.5; 0 keeps all); each signal's top hit always survives",
    )
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

    context = actions.add_parser(
        "context",
        help="exactly what knowledge_context would contribute to a turn at a budget (the same code path)",
        description="Runs the knowledge_context module as a turn does, on the service's store. With --queries, "
        'every line of FILE is {"id": ..., "query": "..."} and every output line is '
        '{"id", "text", "tokens", "sources"}, all in one process.',
    )
    context.add_argument(
        "--collection", action="append", required=True, help="collection the profile reads (repeatable)"
    )
    context.add_argument("--budget", type=int, required=True, help="the module's budget in tokens")
    which = context.add_mutually_exclusive_group(required=True)
    which.add_argument("--query", help="one query")
    which.add_argument("--queries", type=Path, metavar="FILE.jsonl", help='one {"id", "query"} object a line')
    context.add_argument("--json", action="store_true", help="print JSON (always JSON lines with --queries)")
    context.add_argument("--model", help="model whose tokenizer counts the budget (default: TDA_MODEL)")
    context.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="module option as a window type would set it, e.g. k=8 or max_expansion=0 (repeatable)",
    )
    _embedder_option(context)
    context.set_defaults(func=cmd_context)

    for parser in (ingest, search, listing, delete, context):
        parser.set_defaults(func=_pipe_safe(parser.get_default("func")))


def _pipe_safe(command: Callable[..., int]) -> Callable[..., int]:
    """A closed stdout (``| head``) ends the command quietly instead of with a BrokenPipeError traceback."""

    @functools.wraps(command)
    def run(*args: Any) -> int:
        try:
            code = command(*args)
            sys.stdout.flush()
            return code
        except BrokenPipeError:
            # Python flushes stdout again at exit: point it at devnull so that flush cannot fail too.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 0

    return run


def _embedder_option(parser: argparse.ArgumentParser) -> None:
    from tda.config import EMBEDDER_NAMES

    parser.add_argument(
        "--embedder",
        choices=EMBEDDER_NAMES,
        help="embedder for new collections (default: TDA_EMBEDDER, else minilm-int8; existing collections keep theirs)",
    )


def _open(args: argparse.Namespace, settings: Settings) -> KnowledgeStore:
    from .store import KnowledgeStore

    return KnowledgeStore.open(settings.data_dir, settings.chroma_url, embedder=args.embedder or settings.embedder)


def _fail(command: str, exc: Exception) -> int:
    print(f"tda knowledge {command}: {exc}", file=sys.stderr)
    return 2


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    import time

    from tqdm import tqdm

    from .ingest import ingest_paths
    from .store import KnowledgeError

    try:
        store = _open(args, settings)
        started = time.perf_counter()
        if not args.quiet:
            print("loading the embedding model ...", end="", file=sys.stderr, flush=True)
        store.embedder_for(args.collection)(["warm up"])  # loading is not ingesting: timed apart
        if not args.quiet:
            print(f" {time.perf_counter() - started:.1f} s", file=sys.stderr)
        with tqdm(total=0, unit="chunk", disable=args.quiet, file=sys.stderr, desc=args.collection) as bar:
            done_before = 0  # chunks of the files already stored or skipped

            def planned(total: int) -> None:
                bar.reset(total=total)

            def file_done(result: Any) -> None:
                nonlocal done_before
                done_before += result.planned
                bar.n = done_before
                bar.set_postfix_str(f"{Path(result.path).name}: {result.status}")

            report = ingest_paths(
                store,
                args.paths,
                args.collection,
                target_tokens=args.target_tokens,
                on_planned=planned,
                on_embedded=bar.update,
                on_file=file_done,
                base=args.root,
                id_scheme=args.id_from,
            )
    except (KnowledgeError, ValueError) as exc:
        return _fail("ingest", exc)
    for result in report.files:
        if result.status == "error":
            print(f"error      {result.error}", file=sys.stderr)
        else:
            dup = f", {result.duplicates} repeated chunks skipped" if result.duplicates else ""
            print(f"{result.status:<10} {result.document_id} ({result.chunks} chunks{dup})")
    done = len(report.files) - len(report.errors)
    print(f"{done} of {len(report.files)} files ingested into {args.collection!r}: {report.chunks} new chunks")
    return 1 if report.errors else 0


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    from .chunking import where_label
    from .retrieval import ChromaKnowledgeRetriever, RetrievalSettings, passage_json
    from .store import KnowledgeError

    try:
        floor = RetrievalSettings(relative_floor=args.relative_floor)
        retriever = ChromaKnowledgeRetriever(_open(args, settings), floor)
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
        rows = [passage_json(p) for p in passages]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not passages:
        print("no passages found")
    elif len(passages) < args.k:  # say why there are fewer than asked for
        print(
            f"{len(passages)} of -k {args.k} passages: the others fell below the floors "
            f"(--relative-floor {args.relative_floor:g}, --min-score {args.min_score:g}) or the collection is small",
            file=sys.stderr,
        )
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


def cmd_context(args: argparse.Namespace, settings: Settings) -> int:
    try:
        config = _module_config(args.config)
        requests = [(None, args.query)] if args.query is not None else _read_queries(args.queries)
        if args.budget < 0:
            raise ValueError("--budget must be 0 or more tokens")
    except ValueError as exc:
        return _fail("context", exc)
    from .contexts import KnowledgeContextRunner
    from .store import KnowledgeError

    runner = KnowledgeContextRunner(
        settings.data_dir,
        settings.chroma_url,
        embedder=args.embedder or settings.embedder,
        collections=tuple(args.collection),
        model=args.model or settings.model,
        config=config,
    )
    try:
        runner.check_collections()

        async def run_all() -> None:
            for id_, query in requests:
                result = await runner.context(query, args.budget)
                if args.json or args.queries is not None:
                    print(json.dumps({"id": id_, **result}, ensure_ascii=False), flush=args.queries is not None)
                else:
                    print(result["text"] or "(nothing: no passage found or fits)")
                    where = ", ".join(f"[{s['n']}] {s['document_id']}" for s in result["sources"])
                    print(f"-- {result['tokens']} of {args.budget} tokens; sources: {where or 'none'}", file=sys.stderr)

        asyncio.run(run_all())
    except (KnowledgeError, ValueError) as exc:
        return _fail("context", exc)
    finally:
        runner.close()
    return 0


def _module_config(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` options, values read as JSON when they parse (8, 0.5, true), else as text."""
    config: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--config {pair!r}: write KEY=VALUE, e.g. k=8")
        try:
            config[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            config[key.strip()] = value
    return config


def _read_queries(path: Path) -> list[tuple[Any, str]]:
    """Every line checked before any query runs, so a bad line costs nothing half-done."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from exc
    requests = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f'{path}:{number}: not JSON ({exc.msg}); write one {{"id", "query"}} object a line'
            ) from exc
        if not isinstance(row, dict) or not isinstance(row.get("query"), str) or "id" not in row:
            raise ValueError(f'{path}:{number}: each line needs "id" and a "query" string')
        requests.append((row["id"], row["query"]))
    return requests
