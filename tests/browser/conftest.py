"""Browser tests: a real `tda serve` (hypercorn) on 127.0.0.1 with demo data, driven by Debian's Chromium.

Chromium missing fails these tests loudly; TDA_SKIP_BROWSER=1 skips them with a reason (machines without it).
"""

from __future__ import annotations

import os
import secrets
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.ops.live import Live, cli, free_port, token_in

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
]
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SKIP = os.environ.get("TDA_SKIP_BROWSER") == "1"


BROWSER_LOOP = pytest.mark.asyncio(loop_scope="session")
"""Browser tests share the session's event loop, where the one Chromium lives."""

WAIT_MS = 20_000
"""How long an action or an `expect` waits for the page. A page waiting on the server (a trace re-assembles two
windows) takes well under a second on a quiet machine and several on a loaded 2-core CI; a passing check returns as
soon as it holds, so only a failing one pays the whole wait. No test shortens it to assert speed: speed is benched."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not SKIP:
        return
    skip = pytest.mark.skip(reason="TDA_SKIP_BROWSER=1: browser tests skipped (they need Debian's chromium)")
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(skip)


@dataclass
class Server(Live):
    """`tda serve` in a subprocess, with an admin and a viewer token; ``restart()`` keeps port and data."""

    viewer_token: str = ""

    @property
    def admin_token(self) -> str:
        return self.token

    def restart(self) -> None:
        self.stop()
        self.start()

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any, Any]:
        """Call the API as an admin, the way another client would (not through the browser)."""
        return self.call(method, path, body, headers)

    def balanced_copy(self, **changes: Any) -> dict[str, Any]:
        """The shipped "balanced" type as a body to create another from (not the default), with ``changes``."""
        status, _, balanced = self.request("GET", "/v1/context-window-types/balanced")
        assert status == 200, balanced
        body = {k: v for k, v in balanced.items() if k not in {"version", "updated_at", "etag"}}
        return {**body, "is_default": False, **changes}


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the browser tests (tests edit different types, so they do not interfere)."""
    data = tmp_path_factory.mktemp("tda-ui")
    port = free_port()
    env = {
        **os.environ,
        "TDA_DATA_DIR": str(data),
        "TDA_MODULES_DIR": str(data / "modules"),
        "TDA_MODULE_ROOTS": tempfile.gettempdir(),  # tests write module folders under pytest's tmp_path
        "TDA_SECRET_KEY": secrets.token_urlsafe(32),
        "TDA_MOCK_MODEL": "1",
        "TDA_EMBEDDER": "hashing",  # the real model would cost seconds of start-up per run
        "TDA_HOST": "127.0.0.1",
        "TDA_PORT": str(port),
    }
    admin = token_in(cli([sys.executable, "-m", "tda.cli", "demo"], env))
    viewer = token_in(
        cli([sys.executable, "-m", "tda.cli", "tokens", "create", "--role", "viewer", "--name", "browser-viewer"], env)
    )
    server = Server(env, data / "serve.log", token=admin, viewer_token=viewer)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[Any]:
    """One Chromium for all browser tests; each test gets a fresh context (its own cookies and storage)."""
    from playwright.async_api import async_playwright, expect

    expect.set_options(timeout=WAIT_MS)
    async with async_playwright() as pw:
        # Debian's Chromium when installed, else the one `playwright install chromium` fetched (scripts/test-deps.sh).
        executable = str(CHROMIUM) if CHROMIUM.exists() else None
        if executable is None and not Path(pw.chromium.executable_path).exists():
            pytest.fail(
                f"Chromium is not installed at {CHROMIUM}: run `apt-get install -y chromium` or `playwright install "
                "chromium` (or set TDA_SKIP_BROWSER=1 to skip the browser tests on this machine)"
            )
        browser = await pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


async def signed_in_page(browser: Any, server: Server, token: str) -> Any:
    """A fresh browser context signed in through the sign-in API (the session cookie lands in the context)."""
    context = await browser.new_context(base_url=server.url, viewport={"width": 1360, "height": 900})
    response = await context.request.post("/v1/auth/session", data={"token": token})
    assert response.ok, await response.text()
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # Script errors count; the browser's own "Failed to load resource" lines for answers like 412/422 do not.
    page.on(
        "console",
        lambda msg: (
            msg.type == "error" and not msg.text.startswith("Failed to load resource") and errors.append(msg.text)
        ),
    )
    page.js_errors = errors  # type: ignore[attr-defined]
    return page


@pytest_asyncio.fixture(loop_scope="session")
async def page(browser: Any, server: Server) -> AsyncIterator[Any]:
    page = await signed_in_page(browser, server, server.admin_token)
    yield page
    await page.context.close()
