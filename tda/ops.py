"""Operations endpoints (outside /v1, no token: probes and scrapers call them): /healthz, /readyz, /metrics."""

from __future__ import annotations

import asyncio
import errno
import shutil
import time
from collections.abc import Awaitable, Callable
from typing import Any

from quart import Blueprint, Response
from quart_schema import hide
from sqlalchemy import text

from components.context_window.token_estimator import resolve_model_limit

from .metrics import exposition
from .redact import redact_url, redact_urls
from .service import TDAService, service

bp = Blueprint("ops", __name__)
CHECK_TIMEOUT_S = 5.0


@bp.get("/healthz")
@hide
async def healthz() -> dict[str, str]:
    """Alive: the process answers. Says nothing about its dependencies (that is /readyz)."""
    return {"status": "ok"}


async def _database(svc: TDAService) -> dict[str, Any]:
    async with svc.store.db.read() as session:
        await session.execute(text("SELECT 1"))
    return {"backend": svc.store.db.engine.dialect.name}


MIN_FREE_BYTES = 1 << 20
"""Under 1 MiB free where tda keeps its files, the disk is taken as full (SQLite cannot grow its log in less)."""


async def _storage(svc: TDAService) -> dict[str, Any]:
    """Room to write: no write failed for want of space since the last that succeeded (any backend), and the data
    directory (the SQLite database, embedded Chroma) has space left."""
    failed = svc.store.db.disk_full_for()
    if failed is not None:
        raise OSError(errno.ENOSPC, f"the disk is full: a write failed for want of space {failed:.0f} s ago")
    folder = next(p for p in (svc.settings.data_dir, *svc.settings.data_dir.parents) if p.exists())
    free = shutil.disk_usage(folder).free
    if free < MIN_FREE_BYTES:
        raise OSError(errno.ENOSPC, f"the disk is full: {free:,} bytes free in {folder}")
    return {"free_bytes": free}


async def _knowledge(svc: TDAService) -> dict[str, Any]:
    await svc.knowledge.check()
    return {"chroma": redact_url(svc.settings.chroma_url) if svc.settings.chroma_url else "embedded"}


async def _bus(svc: TDAService) -> dict[str, Any]:
    """Redis, with several replicas: while it is gone turns still work, but live snapshots stay on their replica."""
    connected = getattr(svc.bus, "connected", None)
    if connected is None:
        return {"backend": "in-process"}
    if not connected.is_set():
        raise ConnectionError("Redis (TDA_BUS_URL) is unreachable; live snapshots reach only this replica's streams")
    return {"backend": "redis"}


async def _model_limits(svc: TDAService) -> dict[str, Any]:
    limit, source = await asyncio.to_thread(resolve_model_limit, svc.settings.model)
    return {"model": svc.settings.model, "limit": limit, "source": source}


CHECKS: dict[str, Callable[[TDAService], Awaitable[dict[str, Any]]]] = {
    "database": _database,
    "storage": _storage,
    "knowledge": _knowledge,
    "bus": _bus,
    "model_limits": _model_limits,
}


async def _run(check: Callable[[TDAService], Awaitable[dict[str, Any]]], svc: TDAService) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        detail = await asyncio.wait_for(check(svc), CHECK_TIMEOUT_S)
        result = {"ok": True, **detail}
    except TimeoutError:
        result = {"ok": False, "error": f"no answer within {CHECK_TIMEOUT_S:g} s"}
    except Exception as exc:  # any failure means "not ready", with the reason for the operator
        result = {"ok": False, "error": redact_urls(f"{type(exc).__name__}: {exc}")}  # no login here
    return {**result, "ms": round((time.perf_counter() - started) * 1000, 1)}


@bp.get("/readyz")
@hide
async def readyz() -> tuple[dict[str, Any], int]:
    """Ready for traffic: the database answers, the disk has room, the knowledge store (Chroma) opens, Redis (when
    configured) is connected, model limits resolve."""
    svc = service()
    results = await asyncio.gather(*(_run(check, svc) for check in CHECKS.values()))
    checks = dict(zip(CHECKS, results, strict=True))
    ready = all(c["ok"] for c in checks.values())
    return {"status": "ready" if ready else "not_ready", "checks": checks}, 200 if ready else 503


@bp.get("/metrics")
@hide
async def metrics() -> Response:
    body, content_type = exposition(service().settings.prometheus_multiproc_dir)
    return Response(body, content_type=content_type)
