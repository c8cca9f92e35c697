"""The app served by hypercorn on 127.0.0.1, for tests that drive it with the real `openai` SDK."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import openai
from hypercorn.asyncio import serve
from hypercorn.config import Config

from tda.app import create_app
from tda.config import Settings
from tda.server_cli import read_in_large_steps
from tda.service import TDAService
from tests.service.support import free_port


@dataclasses.dataclass
class App:
    base_url: str
    token: str
    svc: TDAService
    clients: list[openai.AsyncOpenAI] = dataclasses.field(default_factory=list)

    def sdk(self, key: str | None = None, **headers: str) -> openai.AsyncOpenAI:
        """The official SDK pointed at tda, with the admin token or ``key`` (closed when the app stops)."""
        client = openai.AsyncOpenAI(
            base_url=self.base_url, api_key=key or self.token, max_retries=0, timeout=60, default_headers=headers
        )
        self.clients.append(client)
        return client

    async def http(self, method: str, path: str, key: str | None = None, **kwargs: Any) -> httpx.Response:
        async with httpx.AsyncClient(base_url=self.base_url.removesuffix("/v1"), timeout=30) as client:
            headers = {"Authorization": f"Bearer {key or self.token}", **kwargs.pop("headers", {})}
            return await client.request(method, path, headers=headers, **kwargs)

    async def profile(self, profile_id: str, **fields: Any) -> None:
        r = await self.http("POST", "/v1/profiles", json={"id": profile_id, "type": "tool_enabled", **fields})
        assert r.status_code == 201, r.text


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[tuple[TDAService, str, str]]:
    """``app`` served by hypercorn on a free loopback port until the block ends: its service, base URL and an
    admin token. hypercorn reads bodies as `tda serve` has it read them (``read_in_large_steps``)."""
    read_in_large_steps()
    config = Config()
    port = free_port()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    stop = asyncio.Event()
    server = asyncio.create_task(serve(app, config, shutdown_trigger=stop.wait))
    svc: TDAService = app.extensions["tda"]
    for _ in range(200):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            break
        except OSError:
            await asyncio.sleep(0.05)
    token, _ = await svc.store.tokens.create("agent", "admin")
    await svc.knowledge.warm_up()  # as serve does: the first turn's retrieval must not time out opening Chroma
    try:
        yield svc, f"http://127.0.0.1:{port}/v1", token
    finally:
        stop.set()
        await asyncio.wait_for(server, 10)


@asynccontextmanager
async def served(settings: Settings) -> AsyncIterator[App]:
    app = create_app(settings, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with serving(app) as (svc, base_url, token):
        target = App(base_url, token, svc)
        try:
            yield target
        finally:
            for client in target.clients:
                await client.close()
