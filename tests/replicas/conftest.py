"""Two `tda serve` replicas on one PostgreSQL, one Redis and one Chroma server, all real and throwaway.

Missing Debian packages fail with one line naming the install command: CI installs them, so a skip would hide
a broken setup.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.replicas.servers import Backing, MissingServer, Replica, mint_admin_token


@pytest.fixture(scope="session")
def backing() -> Iterator[Backing]:
    try:
        servers = Backing.start()
    except MissingServer as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield servers
    finally:
        servers.stop()


@dataclass
class Cluster:
    backing: Backing
    a: Replica
    b: Replica
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def client(self, replica: Replica) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=replica.url, headers=self.headers, timeout=120)  # turns queue per session

    def ensure_running(self) -> None:
        """A test that killed a replica leaves it dead; the next one that needs it starts it again."""
        for replica in (self.a, self.b):
            if not replica.running:
                replica.start().wait_ready()


@pytest.fixture(scope="session")
def cluster(backing: Backing) -> Iterator[Cluster]:
    token = mint_admin_token(backing.postgres.url())
    a, b = backing.replicas("a", "b")
    try:
        yield Cluster(backing, a, b, token)
    finally:
        a.stop()
        b.stop()


@pytest.fixture
def live(cluster: Cluster) -> Cluster:
    cluster.ensure_running()
    return cluster


async def new_session(client: httpx.AsyncClient, name: str) -> str:
    """A profile on the default type and an empty session on it; ids unique per test."""
    r = await client.post("/v1/profiles", json={"id": f"p-{name}", "type": "llm_only", "system_prompt": "Be brief."})
    assert r.status_code == 201, r.text
    r = await client.post("/v1/sessions", json={"id": f"s-{name}", "profile_id": f"p-{name}"})
    assert r.status_code == 201, r.text
    return f"s-{name}"


@dataclass
class SSEClient:
    """Reads one session's SSE stream and keeps each snapshot event's id and data, as a browser would.

    ``last_id`` is what a browser sends back as Last-Event-ID when it reconnects."""

    replica: Replica
    token: str
    session_id: str | None
    """``None``: the all-sessions stream."""
    last_event_id: int | None = None
    events: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    error: BaseException | None = None
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    @property
    def last_id(self) -> int | None:
        return self.events[-1][0] if self.events else self.last_event_id

    async def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "text/event-stream"}
        if self.last_event_id is not None:
            headers["Last-Event-ID"] = str(self.last_event_id)
        path = "/v1/events" if self.session_id is None else f"/v1/sessions/{self.session_id}/events"
        url = self.replica.url + path
        try:
            async with (
                httpx.AsyncClient(timeout=httpx.Timeout(30, read=None)) as client,
                client.stream("GET", url, headers=headers) as response,
            ):
                assert response.status_code == 200, await response.aread()
                event_id, data = None, None
                async for line in response.aiter_lines():
                    if line.startswith("retry:"):
                        self.opened.set()
                    elif line.startswith("id: "):
                        event_id = int(line[4:])
                    elif line.startswith("data: "):
                        data = json.loads(line[6:])
                    elif line == "" and event_id is not None and data is not None:
                        async with self.changed:
                            self.events.append((event_id, data))
                            self.changed.notify_all()
                        event_id, data = None, None
        except (httpx.TransportError, httpx.StreamError) as exc:  # the replica died under us
            self.error = exc
        finally:
            self.ended.set()
            async with self.changed:
                self.changed.notify_all()

    async def wait_for(self, count: int, timeout: float = 60) -> list[int]:
        """Until ``count`` events arrived (or fail with what did arrive)."""
        async with self.changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait_for(lambda: len(self.events) >= count), timeout)
        ids = [i for i, _ in self.events]
        assert len(ids) >= count, f"{len(ids)} of {count} events arrived from {self.replica.name}: {ids}"
        return ids


@contextlib.asynccontextmanager
async def streaming(client: SSEClient) -> AsyncIterator[SSEClient]:
    task = asyncio.create_task(client.run())
    try:
        await asyncio.wait_for(client.opened.wait(), 60)
        yield client
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
