"""Server commands for `tda`: serve, db upgrade, tokens, demo. ``register(subparsers)`` adds them."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .collector import LOADED
from .config import Settings
from .memory import tune_malloc
from .redact import redact_url, redact_urls
from .roles import ROLES

if TYPE_CHECKING:  # imported where used: `tda serve` binds its socket before the database layer loads
    from .store import Store


def upgrade(url: str) -> None:
    from .db import upgrade

    upgrade(url)


def _run(coro_fn: Callable[[Store], Awaitable[int]], settings: Settings) -> int:
    """Migrate, then run ``coro_fn`` with a store (closed afterwards)."""
    upgrade(settings.sqlalchemy_url)

    async def main() -> int:
        from .store import Store

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
    print(f"database at {redact_url(settings.sqlalchemy_url)} is up to date")
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
        print(f"tda db backup: {redact_urls(str(exc))}", file=sys.stderr)
        return 2
    print(f"backed up {report.source} to {report.target}: {report.pages} pages, {report.bytes:,} bytes, integrity ok")
    return 0


def cmd_tokens(args: argparse.Namespace, settings: Settings) -> int:
    async def create(store: Store) -> int:
        if args.role == "operator" and args.project is not None:
            print("tda tokens: an operator token is in no project (it manages all); drop --project", file=sys.stderr)
            return 2
        token, row = await store.tokens.create(args.name or f"{args.role}-token", args.role, project=args.project)
        where = f" in project {row.project_id!r}" if row.project_id else ""
        print(f"created {row.role} token #{row.id} ({row.name}){where}; it is shown only once:\n{token}")
        return 0

    async def listing(store: Store) -> int:
        for row in await store.tokens.all(args.project):
            state = "revoked" if row.revoked_at else "active"
            print(f"#{row.id:<5}{row.role:<9}{state:<9}{row.project_id or '(all)':<20}{row.name}")
        return 0

    async def revoke(store: Store) -> int:
        await store.tokens.revoke(args.id, "cli")
        print(f"token #{args.id} revoked")
        return 0

    try:
        return _run({"create": create, "list": listing, "revoke": revoke}[args.action], settings)
    except Exception as exc:  # NotFound and friends: a message, not a traceback
        print(f"tda tokens: {redact_urls(str(exc))}", file=sys.stderr)
        return 2


def cmd_projects(args: argparse.Namespace, settings: Settings) -> int:
    async def create(store: Store) -> int:
        row = await store.projects.create(args.name, "cli")
        print(f"created project {row.name!r}; give it tokens with `tda tokens create --project {row.name} --role ...`")
        return 0

    async def listing(store: Store) -> int:
        for row in await store.projects.all():
            print(row.name)
        return 0

    try:
        return _run({"create": create, "list": listing}[args.action], settings)
    except Exception as exc:  # Conflict, Invalid: a message, not a traceback
        print(f"tda projects: {redact_urls(str(exc))}", file=sys.stderr)
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

    from hypercorn.utils import LifespanFailureError

    from .logs import configure
    from .security import InsecureSettings

    settings = replace(settings, host=args.host or settings.host, port=args.port or settings.port)
    configure(settings.log_format, settings.log_level)
    try:
        if args.workers > 1:
            return serve_workers(settings, args.workers)
        tune_malloc()
        run_event_loop(serve(settings, reuse_port=args.reuse_port))
    except MigrationFailed as exc:
        print(f"tda serve: could not start: {redact_urls(str(exc))}", file=sys.stderr)
        return 1
    except InsecureSettings as exc:
        print(f"tda serve: {exc}", file=sys.stderr)
        return 2
    except LifespanFailureError as exc:  # start-up failed (database, Redis, ...): the reason, not hypercorn's stack
        reason = exc.args[-1] if exc.args else exc
        print(f"tda serve: could not start: {redact_urls(str(reason))}", file=sys.stderr)
        return 1
    return 0


def unshared_state(settings: Settings) -> list[str]:
    """What N processes would each keep to themselves: the settings that must point at shared servers."""
    missing = []
    if not settings.sqlalchemy_url.startswith("postgresql"):
        missing.append("TDA_DATABASE_URL=postgresql+asyncpg://user:password@host/db (SQLite serves one process)")
    if not settings.bus_url:
        missing.append("TDA_BUS_URL=redis://host:6379/0 (the in-process bus reaches only its own process's streams)")
    if not settings.chroma_url:
        missing.append("TDA_CHROMA_URL=http://host:8000 (the embedded Chroma store is not safe for several processes)")
    return missing


def serve_workers(settings: Settings, workers: int) -> int:
    """N `tda serve` processes on one port (SO_REUSEPORT: the kernel spreads connections over them).

    Migrates once, then supervises: SIGINT/SIGTERM go to every worker; if one worker dies, the others are
    stopped and the exit status says so, for the supervisor (systemd, compose) to restart the whole."""
    missing = unshared_state(settings)
    if missing:
        print(
            f"tda serve --workers {workers}: the workers must share their state; set\n  " + "\n  ".join(missing),
            file=sys.stderr,
        )
        return 2
    upgrade(settings.sqlalchemy_url)
    metrics_dir = settings.prometheus_multiproc_dir
    if metrics_dir is not None:  # /metrics sums the workers (tda/metrics.py)
        from .metrics import reset_multiprocess_dir

        reset_multiprocess_dir(metrics_dir)
    command = [sys.executable, "-m", "tda.cli", "serve", "--host", settings.host, "--port", str(settings.port)]
    procs = {p.pid: p for p in (subprocess.Popen([*command, "--reuse-port"]) for _ in range(workers))}
    stopping = False

    def stop_all(sig: int, _frame: Any = None) -> None:
        nonlocal stopping
        stopping = True
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(sig)

    signal.signal(signal.SIGINT, stop_all)
    signal.signal(signal.SIGTERM, stop_all)
    status = 0
    while procs:
        pid, wait_status = os.wait()
        code = os.waitstatus_to_exitcode(wait_status)
        proc = procs.pop(pid, None)
        if proc is None:
            continue
        proc.returncode = code
        if metrics_dir is not None:
            from .metrics import forget_process

            forget_process(metrics_dir, pid)
        if not stopping:
            print(f"tda serve: worker {pid} exited ({code}); stopping the others", file=sys.stderr)
            status = 1
            stop_all(signal.SIGTERM)
    return status


class MigrationFailed(RuntimeError):
    """The database could not be brought up to date before serving."""


async def migrate_in_child(url: str) -> None:
    """Apply the migrations in a child process: alembic, once imported, would stay in the server for good
    (~11 MB resident of the 400 MB target). The URL goes through stdin (argv would show a password to ps)."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import sys; from tda.db import upgrade; upgrade(sys.stdin.read())",
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, err = await child.communicate(url.encode())
    if child.returncode:
        lines = err.decode(errors="replace").strip().splitlines()
        raise MigrationFailed(lines[-1] if lines else f"migrations exited with {child.returncode}")


def run_event_loop(main: Any) -> None:
    """uvloop when installed: it halves the per-connection cost of fanning a snapshot out to SSE streams."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


def _reuse_port_socket(host: str, port: int) -> int:
    """A listening address other processes may bind too (SO_REUSEPORT); returns its file descriptor."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    return sock.detach()  # hypercorn takes it over from here (fd://)


READ_BYTES = 1 << 20
"""How much of what a connection has received hypercorn takes at a time (its own ``MAX_RECV``: 64 KB). Each take is
an h11 event, an ASGI message and a Quart append: a long session's resent conversation (~650 KB at 100 agent turns)
came in ~10 of them, the one cost of a call that grows with the session rather than its window. asyncio's reader
holds at most ~128 KB beyond one socket read, so a take is bounded by that, not by this."""


def read_in_large_steps() -> None:
    """Have hypercorn take what a connection has received ``READ_BYTES`` at a time (docs/history/benchmarks-log.md,
    "Session 52 (growth10)")."""
    from hypercorn.asyncio import tcp_server

    tcp_server.MAX_RECV = max(tcp_server.MAX_RECV, READ_BYTES)


async def serve(settings: Settings, ready: Callable[[], Any] | None = None, reuse_port: bool = False) -> None:
    """hypercorn on settings.host:port until SIGINT/SIGTERM; open SSE streams are ended first, so
    shutdown does not wait for them. ``reuse_port``: one of several workers on the same port. The socket is bound
    at once and /healthz answered while the application loads behind it (tda/launch.py); ``ready`` is called when
    the application is up. A failed start (bad settings, migrations, start-up) ends the server and is raised."""
    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config

    from .launch import Launcher
    from .security import check_secret, session_secret

    check_secret(settings, session_secret(settings))  # a weak secret is refused before anything binds
    read_in_large_steps()
    config = Config()
    bind = f"fd://{_reuse_port_socket(settings.host, settings.port)}" if reuse_port else None
    config.bind = [bind or f"{settings.host}:{settings.port}"]
    config.graceful_timeout = 5
    config.accesslog = None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    async def load(launcher: Launcher) -> Any:
        app_module = await asyncio.to_thread(importlib.import_module, "tda.app")  # the loop answers meanwhile
        launcher.stage = "creating the application"
        app = app_module.create_app(settings, migrate=False)  # refuses bad settings before the database is touched
        launcher.stage = "migrating the database"
        await migrate_in_child(settings.sqlalchemy_url)

        @app.before_serving
        async def announce() -> None:
            # Start-up objects (litellm, tiktoken tables, ORM metadata) live forever: freezing them keeps full
            # GC passes short, which would otherwise pause every open stream for tens of milliseconds; so do
            # the modules later requests load (frozen once the background work is done: tda/collector.py).
            LOADED.freeze()
            print(f"tda ready on http://{settings.host}:{settings.port}/ (API docs at /docs)", flush=True)
            if ready is not None:
                ready()

        return app

    launcher = Launcher(load, on_failure=stop.set)

    async def shutdown_trigger() -> None:
        await stop.wait()
        if launcher.app is not None:
            launcher.app.extensions["tda"].bus.close()  # type: ignore[attr-defined]

    print(f"tda serving on http://{settings.host}:{settings.port}/ (loading; /readyz says when ready)", flush=True)
    await hypercorn_serve(launcher, config, shutdown_trigger=shutdown_trigger)  # type: ignore[arg-type]
    if launcher.failure is not None:
        raise launcher.failure


def _at_least_one(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of processes; use 1 or more")
    return int(value)


def register(commands: argparse._SubParsersAction) -> None:
    serve_p = commands.add_parser("serve", help="run the HTTP service (migrates the database first)")
    serve_p.add_argument("--host", help="default: TDA_HOST or 127.0.0.1")
    serve_p.add_argument("--port", type=int, help="default: TDA_PORT or 8000")
    serve_p.add_argument(
        "--workers",
        type=_at_least_one,
        default=1,
        help="N processes on one port (SO_REUSEPORT); N > 1 needs TDA_DATABASE_URL (PostgreSQL), TDA_BUS_URL "
        "(Redis) and TDA_CHROMA_URL",
    )
    serve_p.add_argument("--reuse-port", action="store_true", help=argparse.SUPPRESS)  # a worker of --workers N
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
    create.add_argument("--project", help="the project it acts in (default: 'default'); an operator token is in none")
    listing = actions.add_parser("list", help="list tokens (never their secrets)")
    listing.add_argument("--project", help="only this project's tokens")
    revoke = actions.add_parser("revoke", help="revoke a token by id")
    revoke.add_argument("id", type=int)
    tokens.set_defaults(func=cmd_tokens)

    projects = commands.add_parser("projects", help="projects: each team's own tokens, profiles, sessions, knowledge")
    project_actions = projects.add_subparsers(dest="action", required=True)
    project_actions.add_parser("create", help="create a project").add_argument("name")
    project_actions.add_parser("list", help="list the projects")
    projects.set_defaults(func=cmd_projects)

    demo = commands.add_parser("demo", help="seed demo data and print a fresh demo admin token")
    demo.set_defaults(func=cmd_demo)
