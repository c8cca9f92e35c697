"""Server commands for `tda`: serve, db upgrade, tokens, demo. ``register(subparsers)`` adds them."""

from __future__ import annotations

import argparse
import asyncio
import gc
import signal
import sqlite3
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from .config import Settings
from .db import upgrade
from .store import Store
from .store.tokens import ROLES


def _run(coro_fn: Callable[[Store], Awaitable[int]], settings: Settings) -> int:
    """Migrate, then run ``coro_fn`` with a store (closed afterwards)."""
    upgrade(settings.sqlalchemy_url)

    async def main() -> int:
        store = Store.connect(settings.sqlalchemy_url)
        try:
            return await coro_fn(store)
        finally:
            await store.close()

    return asyncio.run(main())


def cmd_db(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "backup":
        return cmd_db_backup(args, settings)
    upgrade(settings.sqlalchemy_url)
    print(f"database at {settings.sqlalchemy_url} is up to date")
    return 0


def cmd_db_backup(args: argparse.Namespace, settings: Settings) -> int:
    from pathlib import Path

    from .backup import BackupError, backup_sqlite

    if not args.path:
        print("tda db backup: name the file to write, e.g. `tda db backup var/tda-backup.db`", file=sys.stderr)
        return 2
    try:
        report = backup_sqlite(settings.sqlalchemy_url, Path(args.path))
    except (BackupError, OSError, sqlite3.Error) as exc:
        print(f"tda db backup: {exc}", file=sys.stderr)
        return 2
    print(f"backed up {report.source} to {report.target}: {report.pages} pages, {report.bytes:,} bytes, integrity ok")
    return 0


def cmd_tokens(args: argparse.Namespace, settings: Settings) -> int:
    async def create(store: Store) -> int:
        token, row = await store.tokens.create(args.name or f"{args.role}-token", args.role)
        print(f"created {row.role} token #{row.id} ({row.name}); it is shown only once:\n{token}")
        return 0

    async def listing(store: Store) -> int:
        for row in await store.tokens.list():
            print(f"#{row.id:<5}{row.role:<8}{'revoked' if row.revoked_at else 'active':<9}{row.name}")
        return 0

    async def revoke(store: Store) -> int:
        await store.tokens.revoke(args.id, "cli")
        print(f"token #{args.id} revoked")
        return 0

    try:
        return _run({"create": create, "list": listing, "revoke": revoke}[args.action], settings)
    except Exception as exc:  # NotFound and friends: a message, not a traceback
        print(f"tda tokens: {exc}", file=sys.stderr)
        return 2


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    from .demo import seed_demo, seed_demo_knowledge

    started = time.perf_counter()
    report = seed_demo_knowledge(settings)
    print(
        f"demo knowledge: {len(report.files) - len(report.errors)} documents in collection {report.collection!r} "
        f"({report.chunks} chunks embedded with {settings.embedder!r} in {time.perf_counter() - started:.1f} s)"
    )
    for failed in report.errors:  # the rest of the demo works; knowledge_context just has less to show
        print(f"demo knowledge: {failed.error} (TDA_EMBEDDER=hashing needs no model)", file=sys.stderr)

    async def seed(store: Store) -> int:
        result = await seed_demo(store)
        await store.tokens.revoke_named("demo-admin", "demo")  # one live demo token at a time
        token, _ = await store.tokens.create("demo-admin", "admin", "demo")
        print(
            f"demo data ready (session {result['session']!r}; {result['profiles_created']} profiles and "
            f"{result['types_created']} types created)"
        )
        print(f"demo admin token: {token}")  # last: scripts take the token from the final line
        return 0

    return _run(seed, settings)


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from dataclasses import replace

    from .logs import configure
    from .security import InsecureSettings

    settings = replace(settings, host=args.host or settings.host, port=args.port or settings.port)
    configure(settings.log_format, settings.log_level)
    try:
        run_event_loop(serve(settings))
    except InsecureSettings as exc:
        print(f"tda serve: {exc}", file=sys.stderr)
        return 2
    return 0


def run_event_loop(main: Any) -> None:
    """uvloop when installed: it halves the per-connection cost of fanning a snapshot out to SSE streams."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


async def serve(settings: Settings, ready: Callable[[], Any] | None = None) -> None:
    """hypercorn on settings.host:port until SIGINT/SIGTERM; open SSE streams are ended first, so
    shutdown does not wait for them."""
    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config

    from .app import create_app

    app = create_app(settings)
    config = Config()
    config.bind = [f"{settings.host}:{settings.port}"]
    config.graceful_timeout = 5
    config.accesslog = None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    async def shutdown_trigger() -> None:
        await stop.wait()
        app.extensions["tda"].bus.close()

    @app.before_serving
    async def announce() -> None:
        # Start-up objects (litellm, tiktoken tables, ORM metadata) live forever: freezing them keeps full
        # GC passes short, which would otherwise pause every open stream for tens of milliseconds.
        gc.collect()
        gc.freeze()
        print(f"tda serving on http://{settings.host}:{settings.port}/ (API docs at /docs)", flush=True)
        if ready is not None:
            ready()

    await hypercorn_serve(app, config, shutdown_trigger=shutdown_trigger)


def register(commands: argparse._SubParsersAction) -> None:
    serve_p = commands.add_parser("serve", help="run the HTTP service (migrates the database first)")
    serve_p.add_argument("--host", help="default: TDA_HOST or 127.0.0.1")
    serve_p.add_argument("--port", type=int, help="default: TDA_PORT or 8000")
    serve_p.set_defaults(func=cmd_serve)

    db = commands.add_parser("db", help="database schema")
    db.add_argument("action", choices=["upgrade", "backup"], help="upgrade: migrate; backup PATH: copy (SQLite)")
    db.add_argument("path", nargs="?", help="backup: the file to write (it must not exist)")
    db.set_defaults(func=cmd_db)

    tokens = commands.add_parser("tokens", help="API tokens (stored hashed; shown once)")
    actions = tokens.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="create a token")
    create.add_argument("--role", choices=ROLES, required=True)
    create.add_argument("--name", help="a label, e.g. who holds it")
    actions.add_parser("list", help="list tokens (never their secrets)")
    revoke = actions.add_parser("revoke", help="revoke a token by id")
    revoke.add_argument("id", type=int)
    tokens.set_defaults(func=cmd_tokens)

    demo = commands.add_parser("demo", help="seed demo data and print a fresh demo admin token")
    demo.set_defaults(func=cmd_demo)
