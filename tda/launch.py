"""`tda serve` answers from its first second: the socket is bound and /healthz answered before the application loads.

Loading tda takes seconds (imports, ``create_app``, migrations, then the start-up that loads litellm, the
tokenizers and the embedder: tens of seconds with MiniLM on two busy cores). ``Launcher`` is the ASGI app hypercorn
serves from the moment it binds. Until the application is up, /healthz answers 200 (the process is alive),
/readyz 503 with the stage reached (``{"status": "starting", "stage": ...}``), and any other request waits for the
application (a turn is answered late, never refused). From then on every request is the application's, its own
/healthz and /readyz included. The application's own lifespan (start-up, shut-down) is driven from here.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

ASGIApp = Callable[[dict[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]
STARTING = "starting"


class Launcher:
    """The ASGI app that stands in while ``load`` builds the real one. ``load`` reports its progress in ``stage``;
    its exception (or the application's failed start-up) is kept in ``failure`` and ends the server (``on_failure``)."""

    def __init__(
        self, load: Callable[[Launcher], Awaitable[ASGIApp]], on_failure: Callable[[], Any] = lambda: None
    ) -> None:
        self.stage = "importing tda"
        self.app: ASGIApp | None = None
        self.failure: BaseException | None = None
        self._load = load
        self._on_failure = on_failure
        self._loaded = asyncio.Event()
        self._loading: asyncio.Task[None] | None = None
        self._lifespan: _Lifespan | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            return await self._serve_lifespan(receive, send)
        if self.app is None:
            path = scope.get("path", "")
            if scope["type"] == "http" and path == "/healthz":
                return await _json(send, 200, {"status": "ok"})
            if scope["type"] == "http" and path == "/readyz":
                return await _json(send, 503, {"status": STARTING, "stage": self.stage})
            await self._loaded.wait()  # a request that needs the application waits for it
        if self.app is None:
            if scope["type"] == "http":
                await _json(send, 503, {"error": {"message": "tda could not start; its log says why"}})
            return
        await self.app(scope, receive, send)

    async def wait(self) -> ASGIApp | None:
        """The application once it is up (None: it failed to start)."""
        await self._loaded.wait()
        return self.app

    async def _serve_lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._loading = asyncio.create_task(self._start())
                await send({"type": "lifespan.startup.complete"})  # bind now; the application loads behind
            elif message["type"] == "lifespan.shutdown":
                await self._stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _start(self) -> None:
        try:
            app = await self._load(self)
            self.stage = "start-up (litellm, tokenizers, embedder, database)"
            lifespan = _Lifespan(app)
            await lifespan.startup()
            self._lifespan, self.app = lifespan, app
        except BaseException as exc:  # kept for serve() to report, as when start-up ran before binding
            self.failure = exc
            self._on_failure()
            if not isinstance(exc, Exception):
                raise
        finally:
            self._loaded.set()

    async def _stop(self) -> None:
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()  # shut down while loading: nothing started to stop
            await asyncio.gather(self._loading, return_exceptions=True)
        if self._lifespan is not None:
            await self._lifespan.shutdown()


class _Lifespan:
    """Drives an ASGI app's lifespan protocol (start-up, then shut-down), as a server would."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._task: asyncio.Future[None] | None = None

    async def startup(self) -> None:
        from hypercorn.utils import LifespanFailureError

        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}
        self._task = asyncio.ensure_future(self._app(scope, self._inbox.get, self._outbox.put))
        await self._inbox.put({"type": "lifespan.startup"})
        reply = await self._reply()
        if reply["type"] != "lifespan.startup.complete":
            raise LifespanFailureError("startup", reply.get("message", ""))

    async def shutdown(self) -> None:
        await self._inbox.put({"type": "lifespan.shutdown"})
        reply = await self._reply()
        if reply["type"] != "lifespan.shutdown.complete":
            log.warning("the application's shut-down failed: %s", reply.get("message", ""))

    async def _reply(self) -> dict[str, Any]:
        assert self._task is not None
        getting = asyncio.ensure_future(self._outbox.get())
        either: set[asyncio.Future[Any]] = {getting, self._task}
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if getting.done():
            return getting.result()
        getting.cancel()
        error = self._task.exception() if not self._task.cancelled() else None
        return {"type": "lifespan.failed", "message": str(error or "the application's lifespan ended")}


async def _json(send: Any, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    headers.append((b"x-content-type-options", b"nosniff"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
