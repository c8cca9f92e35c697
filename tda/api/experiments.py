"""/v1/experiments: a candidate type against a baseline over recorded turns (tda/experiments.py): create, list, read,
cancel, follow its progress (SSE) and export its figures (CSV or JSON)."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from collections.abc import AsyncIterator
from typing import Any

from quart import Blueprint, Response
from quart_schema import tag_blueprint, validate_querystring, validate_request

from ..auth import actor, require
from ..events import encode_sse
from ..experiments import PROFILES_TYPE, Side, saved_side, start, unsaved_side
from ..service import TDAService, service
from ..store.experiments import RUNNING, experiment_dict
from .openapi import event_stream
from .schemas import ExperimentIn, ExperimentsQuery, ExportQuery

bp = Blueprint("experiments", __name__, url_prefix="/v1/experiments")
tag_blueprint(bp, ["experiments"])

POLL_S = 1.0
"""How often a stream of an experiment another replica runs reads its progress."""


@bp.post("")
@require("admin")
@validate_request(ExperimentIn)
async def create_experiment(data: ExperimentIn) -> tuple[dict[str, Any], int]:
    """Replay the slice's recorded turns under the candidate and the baseline, in the background: 201 at once with
    the experiment's id; follow it at ``/events``, read it when ``status`` is no longer ``running``."""
    svc = service()
    c = data.candidate
    if c.type is not None:
        candidate = unsaved_side(svc, c.type)
    else:
        candidate = await saved_side(svc, c.type_id or "", c.version, "candidate")
    baseline: Side = PROFILES_TYPE
    if data.baseline is not None:
        baseline = await saved_side(svc, data.baseline.type_id, data.baseline.version, "baseline")
    spec = await start(svc, data.name, (baseline, candidate), data.slice.filters(), actor())
    return experiment_dict(await svc.store.experiments.get(spec["id"])), 201


@bp.get("")
@require("viewer")
@validate_querystring(ExperimentsQuery)
async def list_experiments(query_args: ExperimentsQuery) -> dict[str, Any]:
    """The project's experiments, newest first, without their turns (``next_offset``: the next page's)."""
    q = query_args
    rows = await service().store.experiments.all(q.limit + 1, q.offset)
    next_offset = q.offset + q.limit if len(rows) > q.limit else None
    return {"experiments": [experiment_dict(r, turns=False) for r in rows[: q.limit]], "next_offset": next_offset}


@bp.get("/<experiment_id>")
@require("viewer")
async def get_experiment(experiment_id: str) -> dict[str, Any]:
    """The experiment: what it compares, its progress, and (once ended) its totals and figures per turn."""
    return experiment_dict(await service().store.experiments.get(experiment_id))


@bp.post("/<experiment_id>/cancel")
@require("admin")
async def cancel_experiment(experiment_id: str) -> dict[str, Any]:
    """Stop a running experiment; what it replayed so far is kept (409 once it has ended)."""
    svc = service()
    await svc.store.experiments.cancel(experiment_id, actor())
    svc.experiments.cancel(experiment_id)  # here at once; another replica notices at its next progress write
    return experiment_dict(await svc.store.experiments.get(experiment_id), turns=False)


@bp.get("/<experiment_id>/events")
@require("viewer")
@event_stream
async def experiment_events(experiment_id: str) -> Response:
    """``event: progress`` ({done, total, turn}) as turns are replayed, then one ``event: end`` ({status, done,
    totals, error}), after which the stream closes."""
    svc = service()
    await svc.store.experiments.get(experiment_id)  # 404 before the stream starts
    response = Response(
        _events(svc, experiment_id),
        mimetype="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
    response.timeout = None  # a stream lives as long as the experiment runs
    return response


async def _events(svc: TDAService, experiment_id: str) -> AsyncIterator[bytes]:
    yield b"retry: 2000\n\n"
    async with svc.experiments.subscribe(experiment_id) as queue:
        if queue is not None:  # run here: each event as it happens
            while True:
                event = await queue.get()
                yield encode_sse(event, event["event"])
                if event["event"] == "end":
                    return
    while True:  # ended, or run by another replica: its stored progress
        row = await svc.store.experiments.get(experiment_id)
        if row.status != RUNNING:
            end = {"event": "end", "status": row.status, "done": row.done, "totals": row.totals, "error": row.error}
            yield encode_sse(end, "end")
            return
        yield encode_sse({"event": "progress", "done": row.done, "total": row.total, "turn": None}, "progress")
        await asyncio.sleep(POLL_S)


CSV_COLUMNS = (
    "session_id",
    "turn",
    "snapshot_id",
    "recorded_at",
    "query",
    *(
        f"{side}_{k}"
        for side in ("baseline", "candidate")
        for k in ("fits", "tokens", "utilisation", "stable_prefix", "cost_usd", "cached_cost_usd", "evidence_kept")
    ),
    *(f"delta_{k}" for k in ("tokens", "cost_usd", "cached_cost_usd", "stable_prefix", "utilisation")),
    "rating",
    "rating_kept",
    "modules_dropped_by_candidate",
)


def _csv_row(t: dict[str, Any]) -> list[Any]:
    row: dict[str, Any] = {k: t[k] for k in ("session_id", "turn", "snapshot_id", "recorded_at", "query")}
    for side in ("baseline", "candidate"):
        figures = t[side]
        for k in ("fits", "tokens", "utilisation", "stable_prefix", "cost_usd", "cached_cost_usd", "evidence_kept"):
            row[f"{side}_{k}"] = figures.get(k)
    for k, v in (t["delta"] or {}).items():
        row[f"delta_{k}"] = v
    row["rating"], row["rating_kept"] = t["labels"].get("rating"), t["rating_kept"]
    base, cand = t["baseline"].get("modules", {}), t["candidate"].get("modules", {})
    row["modules_dropped_by_candidate"] = " ".join(
        m for m, f in cand.items() if (f["status"] != "ok" or f["left_out"]) and m in base and base[m]["status"] == "ok"
    )
    return [row.get(c) for c in CSV_COLUMNS]


@bp.get("/<experiment_id>/export")
@require("viewer")
@validate_querystring(ExportQuery)
async def export_experiment(experiment_id: str, query_args: ExportQuery) -> Response:
    """The experiment as a file: JSON (everything, as GET gives it) or CSV (a row per turn, both sides' figures)."""
    data = experiment_dict(await service().store.experiments.get(experiment_id))
    name = f"experiment-{experiment_id}.{query_args.format}"
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    if query_args.format == "json":
        return Response(json.dumps(data, indent=1), mimetype="application/json", headers=headers)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    writer.writerows(_csv_row(t) for t in data["turns"])
    return Response(out.getvalue(), mimetype="text/csv", headers=headers)
