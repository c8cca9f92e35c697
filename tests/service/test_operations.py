"""/healthz, /readyz, /metrics and request ids: what an operator watches, checked against what the API reports."""

from __future__ import annotations

import asyncio
import errno
import io
import json
import logging
from dataclasses import replace
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import event

from tda.app import create_app
from tda.config import Settings
from tda.logs import configure

QUIET = {"migrate": False, "warm_up_llm": False, "warm_up_knowledge": False}


async def _scrape(client: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics, read with prometheus-client's own parser: {(name, labels): value}."""
    r = await client.get("/metrics")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/plain")
    text = (await r.get_data()).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _delta(before: dict, after: dict, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


async def test_healthz_and_readyz(client: Any) -> None:
    r = await client.get("/healthz")
    assert r.status_code == 200 and (await r.get_json()) == {"status": "ok"}
    for _ in range(30):  # the first probes may find litellm still loading (it was not warmed up here): 503
        r = await client.get("/readyz")
        body = await r.get_json()
        if r.status_code == 200:
            break
        assert body["status"] == "not_ready"
    assert r.status_code == 200, body
    assert body["status"] == "ready"
    assert set(body["checks"]) == {"database", "storage", "knowledge", "bus", "model_limits"}
    assert all(check["ok"] for check in body["checks"].values())
    assert body["checks"]["model_limits"]["limit"] == 128_000  # gpt-4o's input limit, as litellm lists it


async def test_readyz_is_503_when_chroma_is_unreachable_while_healthz_stays_ok(settings: Settings) -> None:
    app = create_app(replace(settings, chroma_url="http://127.0.0.1:9"), **QUIET)  # nothing listens on port 9
    async with app.test_app() as running:
        client = running.test_client()
        assert (await client.get("/healthz")).status_code == 200
        r = await client.get("/readyz")
        body = await r.get_json()
        assert r.status_code == 503 and body["status"] == "not_ready"
        assert body["checks"]["database"]["ok"] and not body["checks"]["knowledge"]["ok"]
        assert body["checks"]["knowledge"]["error"]


async def test_a_turn_shows_in_the_metrics_as_its_snapshot_says(
    client: Any, admin: dict[str, str], session_id: str
) -> None:
    # A low limit makes the history module condense, so every per-module figure moves.
    r = await client.post(f"/v1/sessions/{session_id}/context-limit", json={"context_limit": 300}, headers=admin)
    assert r.status_code == 200
    history = [{"role": "user", "content": f"message {i} " + "words " * 60, "turn": 1} for i in range(12)]
    await client.post(f"/v1/sessions/{session_id}/messages", json={"messages": history}, headers=admin)
    before = await _scrape(client)
    r = await client.post(f"/v1/sessions/{session_id}/turns", json={"query": "and now?"}, headers=admin)
    assert r.status_code == 201, await r.get_json()
    snapshot = (await r.get_json())["snapshot"]
    after = await _scrape(client)

    assert _delta(before, after, "tda_turn_seconds_count") == 1
    assert _delta(before, after, "tda_assembly_seconds_count") == 1
    assert _delta(before, after, "tda_assembly_seconds_sum") == pytest.approx(snapshot["duration_ms"] / 1000)
    modules = {m["module_id"]: m for m in snapshot["modules"]}
    echo, boom = modules["fixture_echo"], modules["fixture_boom"]
    assert _delta(before, after, "tda_module_tokens_allocated_total", module="fixture_echo") == echo["allocated"]
    assert _delta(before, after, "tda_module_tokens_used_total", module="fixture_echo") == echo["used"] > 0
    removed = sum(c["before"] - c["after"] for c in snapshot["condensations"] if c["module_id"] == "fixture_echo")
    assert removed > 0
    assert _delta(before, after, "tda_module_tokens_condensed_total", module="fixture_echo") == removed
    assert boom["status"] == "failed"
    assert _delta(before, after, "tda_module_failures_total", module="fixture_boom", status="failed") == 1
    assert after[("tda_db_connections_open", ())] >= 1
    assert after[("tda_db_connections_in_use", ())] >= 0


async def test_sse_subscribers_and_dropped_frames(
    client: Any, viewer: dict[str, str], svc: Any, session_id: str
) -> None:
    before = await _scrape(client)
    async with client.request(f"/v1/sessions/{session_id}/events", headers=viewer) as conn:
        await conn.send_complete()
        buffer = b""
        while not buffer.startswith(b"retry:"):
            buffer += await asyncio.wait_for(conn.receive(), 5)
        during = await _scrape(client)
        assert _delta(before, during, "tda_sse_subscribers") == 1
        for i in range(svc.bus.queue_size + 10):  # faster than any reader: the queue overflows
            svc.bus.publish_snapshot(10_000 + i, session_id, {"turn": i})
        try:
            while True:
                chunk = await asyncio.wait_for(conn.receive(), 5)
                if not chunk:
                    break
        except Exception:  # the stream ended (the test client signals the end its own way)
            pass
    await asyncio.sleep(0.05)
    after = await _scrape(client)
    assert _delta(before, after, "tda_sse_dropped_frames_total") == 1
    assert _delta(before, after, "tda_sse_subscribers") == 0


async def test_every_response_carries_a_request_id(client: Any, admin: dict[str, str]) -> None:
    r = await client.get("/v1/context-window-types", headers={**admin, "X-Request-ID": "trace-42"})
    assert r.headers["X-Request-ID"] == "trace-42"
    r = await client.get("/v1/nothing-here", headers={"X-Request-ID": "bad id\twith spaces"})
    assert r.status_code == 404 and len(r.headers["X-Request-ID"]) == 32  # replaced by a fresh one


async def test_json_logs_carry_the_request_id(client: Any, admin: dict[str, str], monkeypatch: Any) -> None:
    stream = io.StringIO()
    root = logging.getLogger()
    tda_logger = logging.getLogger("tda")
    saved = (root.handlers[:], root.level, tda_logger.level)
    monkeypatch.setattr("sys.stderr", stream)
    configure("json", "INFO")
    try:
        r = await client.post("/v1/profiles", data="{oops", headers={**admin, "X-Request-ID": "req-7"})
        assert r.status_code == 400
    finally:
        root.handlers, root.level, tda_logger.level = saved
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    access = [line for line in lines if line["logger"] == "tda.access" and line["request_id"] == "req-7"]
    assert len(access) == 1
    assert access[0]["status"] == 400 and access[0]["path"] == "/v1/profiles" and access[0]["level"] == "info"
    assert access[0]["duration_ms"] >= 0


async def test_the_operations_endpoints_are_not_in_the_api_document(client: Any) -> None:
    paths = (await (await client.get("/openapi.json")).get_json())["paths"]
    assert not {"/healthz", "/readyz", "/metrics"} & set(paths)


SECRET_CHROMA_URL = "http://admin:hunter2@127.0.0.1:9/?api_key=t0ken&tenant=t1"  # nothing listens on port 9


async def test_readyz_never_shows_credentials_of_the_chroma_url(settings: Settings, monkeypatch) -> None:
    """/readyz needs no login: it names the Chroma server without its password or token, failing or not."""
    app = create_app(replace(settings, chroma_url=SECRET_CHROMA_URL), **QUIET)
    async with app.test_app() as running:
        client = running.test_client()
        failing = await (await client.get("/readyz")).get_data(as_text=True)

        async def reachable() -> None:
            return None

        monkeypatch.setattr(app.extensions["tda"].knowledge, "check", reachable)
        body = await (await client.get("/readyz")).get_json()
    assert "hunter2" not in failing and "t0ken" not in failing and "knowledge" in failing
    assert body["checks"]["knowledge"]["chroma"] == "http://***@127.0.0.1:9/?api_key=***&tenant=t1"


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_log_lines_hide_credentials_in_urls(monkeypatch: pytest.MonkeyPatch, log_format: str) -> None:
    stream = io.StringIO()
    root, tda_logger = logging.getLogger(), logging.getLogger("tda")
    saved = (root.handlers[:], root.level, tda_logger.level)
    monkeypatch.setattr("sys.stderr", stream)
    configure(log_format, "INFO")
    try:
        log = logging.getLogger("tda.test")
        log.warning("database %s did not answer", "postgresql+asyncpg://tda:hunter2@db:5432/tda")
        try:
            raise ConnectionError("redis://:s3cret@bus:6379/0 refused the connection")
        except ConnectionError:
            log.exception("bus down")
    finally:
        root.handlers, root.level, tda_logger.level = saved
    out = stream.getvalue()
    assert "hunter2" not in out and "s3cret" not in out
    assert "postgresql+asyncpg://***@db:5432/tda" in out and "redis://***@bus:6379/0" in out


def test_cli_errors_hide_credentials(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tda.cli import main

    monkeypatch.setenv("TDA_DATABASE_URL", "mysql://root:hunter2@db/tda")
    assert main(["db", "upgrade"]) == 2
    err = capsys.readouterr().err
    assert "hunter2" not in err and "mysql://***@db/tda" in err


async def test_text_access_log_cannot_be_forged_with_a_newline_in_the_path(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path is logged decoded: %0A would end the access line and let the client write a line of its own."""
    stream = io.StringIO()
    root, tda_logger = logging.getLogger(), logging.getLogger("tda")
    saved = (root.handlers[:], root.level, tda_logger.level)
    monkeypatch.setattr("sys.stderr", stream)
    configure("text", "INFO")
    try:
        forged = "/healthz%0A2026-11-25 20:00:00,000 INFO tda.access [x] POST /v1/tokens 201 1.0 ms%1B[2K"
        await client.get(forged, headers={"X-Request-ID": "req-forge"})
    finally:
        root.handlers, root.level, tda_logger.level = saved
    lines = stream.getvalue().splitlines()
    [access] = [line for line in lines if "req-forge" in line]
    assert "/healthz\\n2026-11-25 20:00:00,000 INFO tda.access [x] POST /v1/tokens 201 1.0 ms\\x1b[2K" in access
    assert not any(line.startswith("2026-11-25 20:00:00,000") for line in lines)


def test_api_error_messages_hide_credentials_in_urls() -> None:
    """A model call's failure quotes what the provider library said, which may be the upstream's URL."""
    from tda.errors import UpstreamFailed

    body = UpstreamFailed(
        "the model call failed (APIConnectionError: http://me:hunter2@llm:8080/v1?key=sk-1)"
    ).to_dict()
    assert body["message"] == "the model call failed (APIConnectionError: http://***@llm:8080/v1?key=***)"


@pytest.fixture
def full_disk(svc: Any) -> Any:
    """SQLite told that its file may not grow (``PRAGMA max_page_count`` at its size): every write that needs a new
    page fails with SQLITE_FULL, "database or disk is full", as on a full disk. ``full_disk(False)`` frees it."""
    engine = svc.store.db.engine.sync_engine

    def cap(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute("PRAGMA max_page_count = 1")  # raised to the current size: no page more

    async def fill(full: bool = True) -> None:
        if full:
            event.listen(engine, "connect", cap)
        else:
            event.remove(engine, "connect", cap)
        await svc.store.db.engine.dispose()  # new connections take the setting

    return fill


async def test_a_full_disk_is_named_as_such_and_readyz_reports_it(
    client: Any, admin: dict[str, str], full_disk: Any
) -> None:
    big = "words " * 30_000  # new pages, whatever space earlier deletes left free
    assert (await client.get("/readyz")).status_code in (200, 503)  # warm: litellm may still be loading
    await full_disk()

    profile = {"id": "full_p", "type": "llm_only", "system_prompt": big}
    r = await client.post("/v1/profiles", json=profile, headers=admin)
    body = await r.get_json()
    assert r.status_code == 507 and body["error"] == "disk_full", body
    assert "the disk is full" in body["message"] and "unreachable" not in body["message"]
    chat = {"model": "tda", "messages": [{"role": "user", "content": big}]}
    r = await client.post("/v1/chat/completions", json=chat, headers={**admin, "X-TDA-Session": "full_s"})
    error = (await r.get_json())["error"]
    assert r.status_code == 507 and "the disk is full" in error["message"]  # OpenAI's shape, which SDKs show
    ready = await (await client.get("/readyz")).get_json()
    assert ready["status"] == "not_ready" and "the disk is full" in ready["checks"]["storage"]["error"]
    assert ready["checks"]["database"]["ok"]  # it answers: reads still work, and the error says what is wrong

    await full_disk(False)
    assert (await client.get("/v1/profiles/full_p", headers=admin)).status_code == 404  # nothing half-written
    r = await client.post("/v1/profiles", json=profile, headers=admin)
    assert r.status_code == 201
    ready = await (await client.get("/readyz")).get_json()
    assert ready["checks"]["storage"]["ok"] and ready["checks"]["storage"]["free_bytes"] > 0


def test_a_full_disk_is_recognised_on_every_backend() -> None:
    """SQLite's SQLITE_FULL, PostgreSQL's disk_full (53100) as SQLAlchemy wraps asyncpg's, a file write's ENOSPC;
    and not a lost connection or a locked database."""
    import sqlite3

    import asyncpg
    from sqlalchemy.exc import OperationalError

    from tda.errors import is_disk_full

    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = 13  # type: ignore[attr-defined]  # as sqlite3 sets it
    wrapped = OperationalError("INSERT ...", {}, full)
    postgres = OperationalError("INSERT ...", {}, asyncpg.exceptions.DiskFullError("could not extend file"))
    assert is_disk_full(wrapped) and is_disk_full(postgres)
    assert is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert is_disk_full(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert not is_disk_full(OperationalError("SELECT 1", {}, sqlite3.OperationalError("database is locked")))
    assert not is_disk_full(OperationalError("SELECT 1", {}, ConnectionRefusedError("connection refused")))
