"""Real servers for the replica tests and the benchmark: PostgreSQL and Redis from Debian's packages, a Chroma
server, and `tda serve` replicas on them; each in a temporary directory on a free 127.0.0.1 port.

The same shape as deploy/compose.yaml: one database, one Redis, one Chroma, N replicas sharing them.
"""

from __future__ import annotations

import asyncio
import glob
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.ops.live import loaded

ROOT = Path(__file__).resolve().parents[2]
PG_BIN = Path(
    os.environ.get("TDA_PG_BIN")
    or max(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: int(Path(p).parent.name),
        default="/usr/lib/postgresql/15/bin",
    )
)
"""Debian's layout: the newest installed major version (TDA_PG_BIN overrides)."""
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
CHROMA = Path(sys.executable).parent / "chroma"
NO_DISK = ("--save", "", "--appendonly", "no", "--protected-mode", "no")
INSTALL = "apt-get install -y postgresql redis-server"


class MissingServer(RuntimeError):
    pass


def require_binaries() -> None:
    """One clear line naming the install command when Debian's servers are missing (never a silent skip)."""
    missing = [str(p) for p in (PG_BIN / "initdb", PG_BIN / "postgres", Path(REDIS_SERVER)) if not p.exists()]
    if missing:
        raise MissingServer(f"{', '.join(missing)} not found: run `{INSTALL}` (`make test` does it)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str, log: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited early:\n{log.read_text()[-3000:]}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {seconds} s")


def stop_process(proc: subprocess.Popen[bytes] | None, sig: int = signal.SIGTERM, timeout: float = 15) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@dataclass
class Postgres:
    """A throwaway cluster: initdb with trust auth for user ``tda``; fsync off (tests need no durability)."""

    root: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def _as_postgres(self) -> dict[str, str]:
        # initdb and postgres refuse to run as root; the Debian package brings the postgres user.
        return {"user": "postgres", "group": "postgres"} if os.geteuid() == 0 else {}

    def start(self) -> Postgres:
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        data = self.root / "data"
        done = subprocess.run(
            [PG_BIN / "initdb", "-D", data, "-U", "tda", "--auth=trust", "--no-locale", "-E", "UTF8", "--no-sync"],
            capture_output=True,
            text=True,
            **self._as_postgres(),
        )
        if done.returncode:
            raise RuntimeError(f"initdb failed in {self.root}:\n{done.stdout}\n{done.stderr}")
        self.run()
        self.create_database("tda")
        return self

    def run(self) -> Postgres:
        """Start the server on its data folder (again, after ``stop``: a database outage that ends)."""
        data, log = self.root / "data", self.root / "postgres.log"
        settings = {
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": str(self.root),
            "max_connections": "300",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
        }
        options = [arg for name, value in settings.items() for arg in ("-c", f"{name}={value}")]
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [PG_BIN / "postgres", "-D", data, "-p", str(self.port), *options],
                stdout=out,
                stderr=subprocess.STDOUT,
                **self._as_postgres(),
            )
        wait_for_port(self.port, self.proc, "postgres", log)
        self._wait_accepting()
        return self

    def _wait_accepting(self) -> None:
        for _ in range(200):
            done = subprocess.run(
                [PG_BIN / "pg_isready", "-h", "127.0.0.1", "-p", str(self.port), "-U", "tda"], capture_output=True
            )
            if done.returncode == 0:
                return
            time.sleep(0.05)
        raise RuntimeError("postgres did not accept connections")

    def create_database(self, name: str) -> str:
        subprocess.run(
            [PG_BIN / "createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "tda", name],
            check=True,
            capture_output=True,
        )
        return self.url(name)

    def url(self, database: str = "tda") -> str:
        return f"postgresql+asyncpg://tda@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        stop_process(self.proc, signal.SIGINT)  # "fast" shutdown: ends sessions, no waiting for clients


@dataclass
class Redis:
    root: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Redis:
        log = self.root / "redis.log"
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.root), *NO_DISK],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wait_for_port(self.port, self.proc, "redis-server", log)
        return self

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        stop_process(self.proc)


@dataclass
class Chroma:
    root: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def launch(self) -> Chroma:
        with (self.root / "chroma.log").open("ab") as out:
            self.proc = subprocess.Popen(
                [CHROMA, "run", "--path", self.root / "chroma", "--host", "127.0.0.1", "--port", str(self.port)],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        return self

    def wait_ready(self) -> Chroma:
        assert self.proc is not None
        wait_for_port(self.port, self.proc, "chroma run", self.root / "chroma.log", seconds=90)
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        stop_process(self.proc)


@dataclass
class Replica:
    """One `tda serve` process (``extra_args``: e.g. ``--workers 2``)."""

    name: str
    env: dict[str, str]
    log: Path
    port: int = field(default_factory=free_port)
    extra_args: tuple[str, ...] = ()
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Replica:
        env = {**self.env, "TDA_HOST": "127.0.0.1", "TDA_PORT": str(self.port)}
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tda.cli", "serve", *self.extra_args],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        return self

    def wait_ready(self, seconds: float = 180) -> Replica:
        assert self.proc is not None
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"replica {self.name} exited early:\n{self.log.read_text()[-3000:]}")
            if loaded(self.url):
                return self
            time.sleep(0.1)
        raise RuntimeError(f"replica {self.name} did not answer on {self.url} within {seconds} s")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as when a machine or container dies."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()

    def stop(self) -> None:
        stop_process(self.proc)


REPLICA_SECRET = secrets.token_urlsafe(32)
"""One cookie secret for every replica of the run, so a cookie signed by one is good on all."""


def replica_env(data_dir: Path, database_url: str, bus_url: str, chroma_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TDA_DATABASE_URL": database_url,
        "TDA_BUS_URL": bus_url,
        "TDA_CHROMA_URL": chroma_url,
        "TDA_DATA_DIR": str(data_dir),
        "TDA_MODULES_DIR": str(data_dir / "modules"),
        "TDA_EMBEDDER": "hashing",
        "TDA_MOCK_MODEL": "1",
        "TDA_SECRET_KEY": REPLICA_SECRET,
    }


async def admin_token(database_url: str) -> str:
    """Migrate, then mint an admin token straight in the shared database (every replica accepts it)."""
    from tda.db import upgrade_async
    from tda.store import Store

    await upgrade_async(database_url)
    store = Store.connect(database_url)
    try:
        token, _ = await store.tokens.create("replica-tests", "admin")
        return token
    finally:
        await store.close()


@dataclass
class Backing:
    """PostgreSQL + Redis + Chroma, started side by side."""

    root: Path
    postgres: Postgres
    redis: Redis
    chroma: Chroma

    @classmethod
    def start(cls) -> Backing:
        require_binaries()
        root = Path(tempfile.mkdtemp(prefix="tda-replicas-"))
        root.chmod(0o755)  # the postgres user must reach its folder inside
        (root / "pg").mkdir()
        (root / "redis").mkdir()
        (root / "chroma").mkdir()
        backing = cls(root, Postgres(root / "pg"), Redis(root / "redis"), Chroma(root / "chroma"))
        try:
            backing.chroma.launch()  # the slowest to start: it starts while the others do
            backing.redis.start()
            backing.postgres.start()
            backing.chroma.wait_ready()
        except BaseException:
            backing.stop()
            raise
        return backing

    def env(self, data_dir: Path) -> dict[str, str]:
        return replica_env(data_dir, self.postgres.url(), self.redis.url, self.chroma.url)

    def replicas(self, *names: str) -> list[Replica]:
        """Started side by side (each takes seconds to import and warm up), returned once all answer."""
        started = []
        for name in names:
            data = self.root / f"replica-{name}"
            data.mkdir(exist_ok=True)
            started.append(Replica(name, self.env(data), data / "serve.log").start())
        return [r.wait_ready() for r in started]

    def stop(self) -> None:
        for server in (self.chroma, self.redis, self.postgres):
            server.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def mint_admin_token(database_url: str) -> str:
    return asyncio.run(admin_token(database_url))
