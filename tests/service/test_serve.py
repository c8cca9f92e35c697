"""`tda serve` for real: hypercorn on 127.0.0.1, an open SSE stream, then SIGTERM: the stream ends, serve returns."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import os
import signal
import socket

from tda.config import Settings
from tda.server_cli import serve
from tda.store import Store


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    for _ in range(100):
        try:
            return await asyncio.open_connection("127.0.0.1", port)
        except ConnectionRefusedError:
            await asyncio.sleep(0.05)
    raise AssertionError("the server never listened")


async def test_sigterm_with_a_stream_open_shuts_down_cleanly(settings: Settings):
    settings = dataclasses.replace(settings, port=_free_port())
    store = Store.connect(settings.sqlalchemy_url)
    token, _ = await store.tokens.create("serve-test", "viewer")
    await store.close()

    ready = asyncio.Event()
    server = asyncio.create_task(serve(settings, ready=ready.set))
    writer = None
    try:
        await asyncio.wait_for(ready.wait(), 60)  # start-up done; the socket binds right after
        reader, writer = await _connect(settings.port)
        writer.write(f"GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
        head = await asyncio.wait_for(reader.readuntil(b"retry: 2000"), 10)
        assert head.startswith(b"HTTP/1.1 200")

        os.kill(os.getpid(), signal.SIGTERM)  # what a process manager sends
        await asyncio.wait_for(server, 3)  # sooner than hypercorn's 5 s graceful timeout: the stream did not hold it
        rest = await asyncio.wait_for(reader.read(), 5)  # the stream was ended, not cut
        assert rest.endswith(b"0\r\n\r\n")  # the last chunk of a complete chunked response
    finally:
        if writer is not None:
            writer.close()
        server.cancel()
        gc.unfreeze()  # serve() freezes start-up objects for the server's life; not for the test process
