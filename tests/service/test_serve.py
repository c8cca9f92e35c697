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


async def test_a_long_conversation_s_body_reaches_the_application_in_a_few_large_steps() -> None:
    """hypercorn hands a request body to the application as it takes it from the connection, 64 KB at a time by its
    own measure: a 100-turn session's resent conversation (~650 KB) was ~10 ASGI messages, each an h11 event and a
    Quart append, the one cost of a call that grows with the session rather than its window. With tda's
    ``read_in_large_steps`` (what `tda serve` sets) it arrives in a few, whole and in order."""
    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config

    from tda.server_cli import read_in_large_steps

    read_in_large_steps()
    received: list[bytes] = []

    async def app(scope: dict, receive, send) -> None:  # type: ignore[no-untyped-def]
        if scope["type"] != "http":
            return
        more = True
        while more:
            message = await receive()
            received.append(message.get("body", b""))
            more = message.get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    port = _free_port()
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    stop = asyncio.Event()
    server = asyncio.create_task(hypercorn_serve(app, config, shutdown_trigger=stop.wait))  # type: ignore[arg-type]
    writer = None
    try:
        reader, writer = await _connect(port)
        body = bytes(range(256)) * 3_600  # 921,600 bytes, as a long agent session's conversation
        head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        writer.write(head + body)
        await writer.drain()
        answer = await asyncio.wait_for(reader.readuntil(b"ok"), 10)
        assert answer.startswith(b"HTTP/1.1 200")
        assert b"".join(received) == body
        # 64 KB takes need at least 15 messages for this body, whatever the timing; large takes need ~4 (how many
        # depends on how the bytes arrive, so the bound is the one a 64 KB take cannot meet)
        assert len([chunk for chunk in received if chunk]) < 15, [len(chunk) for chunk in received]
    finally:
        if writer is not None:
            writer.close()
        stop.set()
        await asyncio.wait_for(server, 10)
