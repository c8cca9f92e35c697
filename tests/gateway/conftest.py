"""One fake upstream and one real `tda serve` (mock model off, pointed at the fake: tests/gateway/servers.py)
for the whole folder. The recordings are cleared before each test, so ``upstream.calls()`` holds exactly what
that test's client calls sent to "the model": tda's calls of its own (a summary made ahead of an earlier test's
session, landing late) are recorded aside.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from tests.gateway.servers import admin_token, free_port, start_tda, stop, wait_until_serving
from tests.gateway.support import Gateway, is_auxiliary
from tests.gateway.upstream import FakeUpstream


@pytest.fixture(scope="session")
def fake_upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(aside=is_auxiliary) as upstream:
        yield upstream


@pytest.fixture(scope="session")
def tda_server(fake_upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    data_dir = tmp_path_factory.mktemp("gateway")
    token = admin_token(data_dir)
    port = free_port()
    process = start_tda(data_dir, port, fake_upstream.base_url)
    try:
        wait_until_serving(process, f"http://127.0.0.1:{port}/readyz", data_dir / "server.log")
        yield Gateway(f"http://127.0.0.1:{port}/v1", token, data_dir / "server.log")
    finally:
        stop(process)


@pytest.fixture
def upstream(fake_upstream: FakeUpstream) -> FakeUpstream:
    """The fake upstream with nothing recorded yet: what this test's calls send lands here."""
    fake_upstream.clear()
    return fake_upstream


@pytest.fixture
async def gateway(tda_server: Gateway, upstream: FakeUpstream) -> AsyncIterator[Gateway]:
    yield tda_server
    for client in tda_server.clients:
        await client.close()
    tda_server.clients.clear()
