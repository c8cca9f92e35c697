"""`tda serve --workers N`: N processes on one port, sharing PostgreSQL, Redis and Chroma; refused without them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.replicas.conftest import SSEClient, new_session, streaming
from tests.replicas.servers import ROOT, Backing, Replica, admin_token


def test_several_workers_without_shared_servers_are_refused(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TDA_")} | {"TDA_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "tda.cli", "serve", "--workers", "2"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    for variable in ("TDA_DATABASE_URL=postgresql", "TDA_BUS_URL=redis://", "TDA_CHROMA_URL=http://"):
        assert variable in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "tda.db").exists()  # refused before touching anything


def _children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _connections_by_pid(port: int, pids: list[int]) -> dict[int, int]:
    """Established connections to ``port`` held by each process (from /proc/net/tcp and the fd tables)."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == port and fields[3] == "01":
            inodes.add(fields[9])
    counts = {}
    for pid in pids:
        fds = Path(f"/proc/{pid}/fd")
        links = [os.readlink(fd) for fd in fds.iterdir() if fd.is_symlink()]
        counts[pid] = sum(1 for link in links if link.startswith("socket:[") and link[8:-1] in inodes)
    return counts


async def test_workers_share_one_port_and_deliver_every_event_to_every_stream(backing: Backing) -> None:
    token = await admin_token(backing.postgres.url())
    data = backing.root / "workers"
    data.mkdir()
    server = Replica("workers", backing.env(data), data / "serve.log", extra_args=("--workers", "2")).start()
    try:
        await asyncio.to_thread(server.wait_ready, 240)  # generous: a loaded 2-core CI machine starts 3 processes
        deadline = time.monotonic() + 240
        while server.log.read_text().count("tda serving on") < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        assert server.log.read_text().count("tda serving on") == 2, server.log.read_text()[-3000:]
        assert server.proc is not None
        workers = _children(server.proc.pid)
        assert len(workers) == 2
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=30) as client:
            session_id = await new_session(client, "workers")
            clients = [SSEClient(server, token, session_id) for _ in range(16)]
            async with contextlib.AsyncExitStack() as stack:
                for c in clients:
                    await stack.enter_async_context(streaming(c))
                spread = _connections_by_pid(server.port, workers)
                assert all(n >= 1 for n in spread.values()), spread  # the kernel gave each worker streams
                ids = []
                for i in range(3):
                    r = await client.post(f"/v1/sessions/{session_id}/turns", json={"query": f"question {i}"})
                    assert r.status_code == 201, r.text
                    ids.append(r.json()["snapshot_id"])
                for c in clients:
                    assert await c.wait_for(3, timeout=60) == ids
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=60) == 0
        assert not any(Path(f"/proc/{pid}").exists() for pid in workers)
    finally:
        with contextlib.suppress(Exception):
            server.stop()
