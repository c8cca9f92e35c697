"""`tda serve` answers from its first second (tda/launch.py): /healthz while tda loads, /readyz saying it is starting,
any other request waiting for the application rather than failing; then everything is the application's.
Driven as hypercorn drives an ASGI app (lifespan, then requests), and once for real as a process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from quart import Quart

from tda.app import create_app
from tda.launch import Launcher
from tda.llm import LLM
from tests.ops.live import ROOT, free_port, tda_env


async def call(app: Any, path: str) -> tuple[int, dict[str, Any]]:
    """One GET through the ASGI interface: (status, JSON body)."""
    sent: list[dict[str, Any]] = []
    requests = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive() -> dict[str, Any]:
        if requests:
            return requests.pop()
        await asyncio.Event().wait()  # the client stays connected until the response is sent
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"test")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    await app(scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], json.loads(body)


async def start(launcher: Launcher) -> asyncio.Future[None]:
    """The server's side of the lifespan start-up: it binds once the launcher says it started."""
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    lifespan = asyncio.ensure_future(launcher({"type": "lifespan"}, inbox.get, outbox.put))
    await inbox.put({"type": "lifespan.startup"})
    assert (await outbox.get())["type"] == "lifespan.startup.complete"
    return lifespan


def application() -> Quart:
    app = Quart(__name__)
    app.config["started"] = False

    @app.before_serving
    async def started() -> None:
        app.config["started"] = True

    @app.get("/work")
    async def work() -> dict[str, Any]:
        return {"by": "application", "started": app.config["started"]}

    @app.get("/readyz")
    async def readyz() -> dict[str, str]:
        return {"status": "ready"}

    return app


async def test_probes_are_answered_while_loading_and_other_requests_wait_for_the_application():
    gate = asyncio.Event()

    async def load(launcher: Launcher) -> Any:
        launcher.stage = "creating the application"
        await gate.wait()
        return application()

    launcher = Launcher(load)
    lifespan = await start(launcher)
    assert await call(launcher, "/healthz") == (200, {"status": "ok"})
    assert await call(launcher, "/readyz") == (503, {"status": "starting", "stage": "creating the application"})
    waiting = asyncio.ensure_future(call(launcher, "/work"))
    await asyncio.sleep(0.05)
    assert not waiting.done()  # held, not refused
    gate.set()
    assert await waiting == (200, {"by": "application", "started": True})  # after the application's start-up
    assert await call(launcher, "/readyz") == (200, {"status": "ready"})  # the application's own probe now
    lifespan.cancel()


async def test_a_failed_load_ends_the_server_and_waiting_requests_get_503():
    stopped = asyncio.Event()

    async def load(launcher: Launcher) -> Any:
        await asyncio.sleep(0.01)
        raise RuntimeError("migrations failed")

    launcher = Launcher(load, on_failure=stopped.set)
    lifespan = await start(launcher)
    status, body = await call(launcher, "/work")
    assert status == 503 and "could not start" in body["error"]["message"]
    await asyncio.wait_for(stopped.wait(), 5)
    assert isinstance(launcher.failure, RuntimeError)
    lifespan.cancel()


def get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=300) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_tda_serve_answers_healthz_first_then_serves_requests_sent_while_it_loaded(tmp_path: Path) -> None:
    port = free_port()
    env = tda_env(tmp_path, port)
    with (tmp_path / "serve.log").open("wb") as log:
        server = subprocess.Popen([sys.executable, "-m", "tda.cli", "serve"], cwd=ROOT, env=env, stdout=log, stderr=log)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert server.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                if get(f"{base}/healthz")[0] == 200:
                    break
            except OSError:
                time.sleep(0.05)
        status, body = get(f"{base}/readyz")
        assert status == 200 or body["status"] == "starting"  # loading still, or already done
        status, body = get(f"{base}/v1/sessions")  # sent at once: answered by the application
        assert status == 401 and "token" in json.dumps(body).lower()
        assert get(f"{base}/readyz")[0] == 200
    finally:
        server.terminate()
        server.wait(60)


_PRELOAD = """
import asyncio, json, sys
from tda.llm import preload
asyncio.run(preload(calls_providers=sys.argv[1] == "1"))
print(json.dumps("openai.resources.chat" in sys.modules))
"""


def test_start_up_imports_the_openai_sdks_resources_only_when_providers_are_called() -> None:
    """The OpenAI SDK's client imports ~450 resource modules the first time it is used, inside litellm's call on the
    event loop (2.1 s measured): a service that calls providers imports them at start-up, before /readyz says
    ready; one answering with the mock model never needs them (~10 MB). In fresh processes (imports are global)."""
    loaded = []
    for calls_providers in ("1", "0"):
        done = subprocess.run(
            [sys.executable, "-c", _PRELOAD, calls_providers],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
        loaded.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert loaded == [True, False]


_FIRST_CALL = """
import asyncio, json, sys
from tda.config import offline_library_defaults
offline_library_defaults()
from tda.llm import LLM, preload
llm = LLM(mock=True)  # its text answers go through the SDK to an upstream in process, as a provider's would
asyncio.run(preload(calls_providers=True, litellm_needed=False))
llm.ready_client()  # what start-up runs after ``preload`` (``TDAService._warm_up_llm``)
clients, loaded = dict(llm._sdk_clients), set(sys.modules)
done = asyncio.run(llm.complete("gpt-4o", [{"role": "user", "content": "hi"}], []))
print(json.dumps([bool(done.text), sorted(set(sys.modules) - loaded), llm._sdk_clients == clients, len(clients)]))
"""


def test_the_first_model_call_imports_nothing_and_makes_no_client() -> None:
    """The first call through the SDK made its client (httpx's connection stack: httpcore, anyio's asyncio backend,
    a TLS context) and built the SDK's response validators on the event loop, ~50 ms of its CPU: start-up does both
    in a worker thread, so the first call loads no module and makes no client. In a fresh process (imports are
    global)."""
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_CALL], cwd=ROOT, capture_output=True, text=True, check=True, timeout=300
    )
    answered, imported, same_clients, clients = json.loads(done.stdout.strip().splitlines()[-1])
    assert answered and imported == [] and same_clients and clients == 1


_FIRST_UNIQUE = """
import json, sys
from tda.config import offline_library_defaults
offline_library_defaults()
from tda.service import _load_tokenizers
_load_tokenizers("gpt-4o")  # start-up's worker thread
import numpy as np
loaded = set(sys.modules)
np.unique(np.array([3, 1, 3]))  # recall's ranking (BM25's holders), at the first recall
print(json.dumps(sorted(set(sys.modules) - loaded)))
"""


def test_recall_s_first_ranking_imports_nothing() -> None:
    """``np.unique`` imports numpy.ma on its first call (~15 ms, on the event loop, inside the first recall of the
    process): start-up imports it. In a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_UNIQUE], cwd=ROOT, capture_output=True, text=True, check=True, timeout=300
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


async def test_a_failed_model_client_warm_up_is_logged_and_the_service_still_answers(
    settings: Any, monkeypatch: Any, caplog: Any
) -> None:
    """Start-up's warm-up of the model client (``LLM.ready_client``) is a head start only: when it fails, start-up
    logs why and goes on, and the first chat completion makes its client itself."""

    def fails(self: LLM) -> None:
        raise RuntimeError("no TLS context")

    monkeypatch.setattr(LLM, "ready_client", fails)
    app = create_app(settings, migrate=False, warm_up_llm=True, warm_up_knowledge=False)
    async with app.test_app() as running:
        svc = running.app.extensions["tda"]
        token, _ = await svc.store.tokens.create("test-admin", "admin")
        chat = {"model": "tda", "messages": [{"role": "user", "content": "hi"}]}
        reply = await running.test_client().post(
            "/v1/chat/completions", json=chat, headers={"Authorization": f"Bearer {token}"}
        )
        assert reply.status_code == 200, await reply.get_data(as_text=True)
        assert (await reply.get_json())["choices"][0]["message"]["content"]
    assert "model client warm-up failed: no TLS context" in caplog.text
