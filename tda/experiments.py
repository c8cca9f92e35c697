"""Experiments: a candidate type (a saved version or an editor's unsaved text) against a baseline (a saved version, or
what each turn's profile runs now) over a slice of recorded traffic. Each turn's recorded inputs are assembled again
under both (``replay.recorded_context``: the replay's own inputs, not a second replay), in the background, with
progress to subscribers and a cancel; the figures per turn and in total are saved with the experiment.

Per side and turn: tokens sent, the input's cost with and without the stable prefix read from the provider's cache,
the stable prefix, utilisation, what each module sent (units kept, content left out), whether the window fits at
all; for labelled turns, whether the expected evidence is in the window and, for rated ones, whether the candidate
still sends every message the baseline sends."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import TYPE_CHECKING, Any

from components.context_window.budget import BudgetExceeded

from .attribution import attribution
from .background import RunningJob
from .cost import dollars, prices
from .errors import Invalid, NotFound
from .replay import recorded_context
from .store.experiments import RUNNING
from .turns import resolve_type

if TYPE_CHECKING:
    from components.context_window.base import AssemblyContext
    from components.context_window.handler import AssembledContext
    from components.context_window.window_type import ContextWindowType

    from .models import SnapshotRow
    from .service import TDAService

log = logging.getLogger(__name__)

QUERY_CHARS = 200
"""How much of each turn's query an experiment keeps (enough to recognise the turn)."""
PROGRESS_WRITES = 20
"""How often, over a run, its progress is written (and a cancel asked on another replica noticed)."""


@dataclass(frozen=True)
class Side:
    """A type a turn is replayed under: ``window_type``, or (None) the type the turn's profile runs now."""

    name: str
    window_type: ContextWindowType | None
    spec: dict[str, Any]


async def saved_side(svc: TDAService, type_id: str, version: int | None, loc: str) -> Side:
    """A saved type's version (its current one if ``version`` is None); 422 naming ``loc`` for an unknown one."""
    try:
        stored = await svc.store.types.get(type_id)
    except NotFound:
        msg = f"no context window type {type_id!r}"
        raise Invalid(msg, errors=[{"loc": f"{loc}.type_id", "msg": msg, "type": "missing"}]) from None
    if version is None or version == stored.version:
        return Side(f"{type_id} v{stored.version}", stored.type, {"type_id": type_id, "version": stored.version})
    try:
        old = await svc.store.types.version(type_id, version)
    except NotFound:
        msg = f"{type_id!r} has no version {version} (its newest is {stored.version})"
        raise Invalid(msg, errors=[{"loc": f"{loc}.version", "msg": msg, "type": "missing"}]) from None
    return Side(f"{type_id} v{version}", old, {"type_id": type_id, "version": version})


def unsaved_side(svc: TDAService, body: dict[str, Any]) -> Side:
    """The editor's unsaved text: a type body, checked like a save (422 naming ``candidate.type...``)."""
    window_type = svc.validate_type(body, loc=("candidate", "type"))
    return Side(f"{window_type.id} (unsaved)", window_type, {"type_id": window_type.id, "type": body})


PROFILES_TYPE = Side("what each profile runs now", None, {"profiles": True})


# --- the figures of one window ---------------------------------------------------------------------------------


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _key(message: dict[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, default=str)


def window_figures(assembled: AssembledContext, model: str, evidence: Sequence[str]) -> dict[str, Any]:
    """What one window costs and holds: the figures an experiment compares."""
    snapshot = assembled.snapshot
    sent = attribution(assembled, model)
    stable = sum(m["tokens"] for m in sent[: assembled.stable_messages])
    priced = prices(model) is not None
    text = "\n".join(_text(m) for m in assembled.messages)
    return {
        "fits": True,
        "type_id": snapshot.window_type_id,
        "model": model,
        "tokens": snapshot.total_used,
        "available": snapshot.available_budget,
        "utilisation": snapshot.utilisation,
        "stable_prefix": stable,
        "cost_usd": dollars(model, snapshot.total_used)[0] if priced else None,
        "cached_cost_usd": dollars(model, snapshot.total_used, read=min(stable, snapshot.total_used))[0]
        if priced
        else None,
        "modules": {
            m.module_id: {
                "status": m.status,
                "used": m.used,
                "units": len(c.units) if (c := assembled.contributions.get(m.module_id)) else 0,
                "left_out": bool(c.left_out) if c else False,
                "condensed": m.condensed,
            }
            for m in snapshot.modules
        },
        "evidence_kept": all(e in text for e in evidence) if evidence else None,
    }


def _failed(reason: str, *, error: bool = False) -> dict[str, Any]:
    """A side without a window: it does not fit (``error`` False), or it could not be replayed at all."""
    return {"fits": False, "reason": reason, "error": error}


def _too_big(figures: dict[str, Any]) -> bool:
    return not figures["fits"] and not figures.get("error")


def _dropped(module: dict[str, Any]) -> bool:
    return module["status"] != "ok" or module["left_out"]


def turn_record(
    row: SnapshotRow,
    labels: dict[str, Any] | None,
    baseline: tuple[dict[str, Any], AssembledContext | None],
    candidate: tuple[dict[str, Any], AssembledContext | None],
) -> dict[str, Any]:
    (base, base_window), (cand, cand_window) = baseline, candidate
    labels = labels or {}
    record: dict[str, Any] = {
        "snapshot_id": row.id,
        "session_id": row.session_id,
        "turn": row.turn,
        "query": str(row.inputs.get("query", ""))[:QUERY_CHARS],
        "recorded_at": row.created_at.isoformat(),
        "labels": labels,
        "baseline": base,
        "candidate": cand,
        "delta": None,
        "rating_kept": None,
    }
    if base["fits"] and cand["fits"]:
        record["delta"] = {
            k: None if base[k] is None or cand[k] is None else round(cand[k] - base[k], 8)
            for k in ("tokens", "cost_usd", "cached_cost_usd", "stable_prefix", "utilisation")
        }
    if labels.get("rating") and base_window is not None:  # a rated window: does the candidate still send it whole?
        kept = {_key(m) for m in cand_window.messages} if cand_window is not None else set()
        record["rating_kept"] = all(_key(m) in kept for m in base_window.messages)
    return record


def totals_of(turns: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The experiment in total: per side, and what changed between them."""

    def side(name: str) -> dict[str, Any]:
        fit = [t[name] for t in turns if t[name]["fits"]]
        priced = [f for f in fit if f["cost_usd"] is not None]
        return {
            "fits": len(fit),
            "tokens": sum(f["tokens"] for f in fit),
            "cost_usd": sum(f["cost_usd"] for f in priced) if priced else None,
            "cached_cost_usd": sum(f["cached_cost_usd"] for f in priced) if priced else None,
            "avg_utilisation": round(fmean(f["utilisation"] for f in fit), 4) if fit else None,
            "avg_stable_prefix": round(fmean(f["stable_prefix"] for f in fit), 1) if fit else None,
            "evidence_kept": sum(1 for f in fit if f["evidence_kept"]),
        }

    both = [t for t in turns if t["delta"] is not None]
    modules: dict[str, dict[str, int]] = {}
    for t in both:
        for name in ("baseline", "candidate"):
            for module_id, m in t[name]["modules"].items():
                entry = modules.setdefault(
                    module_id, {"baseline_used": 0, "candidate_used": 0, "baseline_dropped": 0, "candidate_dropped": 0}
                )
                entry[f"{name}_used"] += m["used"]
                entry[f"{name}_dropped"] += _dropped(m)
    rated = [t for t in turns if t["rating_kept"] is not None]
    return {
        "turns": len(turns),
        "compared": len(both),
        "baseline": side("baseline"),
        "candidate": side("candidate"),
        "no_longer_fit": sum(1 for t in turns if t["baseline"]["fits"] and _too_big(t["candidate"])),
        "now_fit": sum(1 for t in turns if t["candidate"]["fits"] and _too_big(t["baseline"])),
        "errors": sum(1 for t in turns if t["baseline"].get("error") or t["candidate"].get("error")),
        "evidence_turns": sum(1 for t in turns if t["labels"].get("expected_evidence")),
        "rated_turns": len(rated),
        "rating_kept": sum(1 for t in rated if t["rating_kept"]),
        "modules": dict(sorted(modules.items())),
    }


# --- running one -----------------------------------------------------------------------------------------------


class Runner:
    """One experiment's run: each turn under both sides, progress published and written, the result saved."""

    def __init__(
        self,
        svc: TDAService,
        experiment_id: str,
        sides: tuple[Side, Side],
        turns: Sequence[tuple[SnapshotRow, dict[str, Any] | None]],
    ) -> None:
        self.svc, self.id, self.sides, self.turns = svc, experiment_id, sides, turns
        self.profile_types: dict[str, ContextWindowType] = {}
        self.records: list[dict[str, Any]] = []

    async def __call__(self, job: RunningJob) -> None:
        status, error = "done", ""
        try:
            every = max(1, len(self.turns) // PROGRESS_WRITES)
            for n, (row, labels) in enumerate(self.turns, 1):
                self.records.append(await self.replay(row, labels))
                job.publish({"event": "progress", "done": n, "total": len(self.turns), "turn": self._brief()})
                if n % every == 0 and await self.svc.store.experiments.progress(self.id, n) != RUNNING:
                    status = "cancelled"  # asked on another replica
                    break
                await asyncio.sleep(0)  # the requests this process serves go first
        except asyncio.CancelledError:
            status = "cancelled"
        except Exception as exc:  # saved with the experiment, and said to whoever watches
            log.warning("experiment %s failed: %s", self.id, exc)
            status, error = "failed", str(exc)
        totals = totals_of(self.records)
        await asyncio.shield(self.svc.store.experiments.finish(self.id, status, totals, self.records, error))
        job.publish({"event": "end", "status": status, "done": len(self.records), "totals": totals, "error": error})

    def _brief(self) -> dict[str, Any]:
        last = self.records[-1]
        return {"session_id": last["session_id"], "turn": last["turn"], "delta": last["delta"]}

    async def replay(self, row: SnapshotRow, labels: dict[str, Any] | None) -> dict[str, Any]:
        evidence = [str(e) for e in (labels or {}).get("expected_evidence") or ()]
        try:
            ctx = await recorded_context(self.svc, row)
        except Exception as exc:  # e.g. its session's profile is gone: the turn cannot be replayed
            reason = f"not replayable: {exc}"
            return turn_record(row, labels, (_failed(reason, error=True), None), (_failed(reason, error=True), None))
        base, cand = self.sides
        return turn_record(
            row,
            labels,
            await self.assemble(ctx, row, base, evidence),
            await self.assemble(ctx, row, cand, evidence),
        )

    async def assemble(
        self, ctx: AssemblyContext, row: SnapshotRow, side: Side, evidence: Sequence[str]
    ) -> tuple[dict[str, Any], AssembledContext | None]:
        window_type = side.window_type or await self.profile_type(row.session_id)
        try:
            assembled = await self.svc.scratch_handler.assemble(ctx, window_type)
        except BudgetExceeded as exc:  # a turn that would no longer fit
            return _failed(str(exc)), None
        except Exception as exc:  # one turn that cannot be assembled does not end the experiment
            return _failed(f"not assembled: {exc}", error=True), None
        return window_figures(assembled, ctx.model, evidence), assembled

    async def profile_type(self, session_id: str) -> ContextWindowType:
        found = self.profile_types.get(session_id)
        if found is None:
            session = await self.svc.store.sessions.get(session_id)
            stored = await resolve_type(self.svc, await self.svc.store.profiles.get(session.profile_id))
            found = self.profile_types[session_id] = stored.type
        return found


async def start(
    svc: TDAService, name: str, sides: tuple[Side, Side], slice_: dict[str, Any], actor: str
) -> dict[str, Any]:
    """Select the slice's turns, save the experiment and start it in the background; 422 for an empty slice."""
    turns = await svc.store.sessions.experiment_slice(**slice_)
    if not turns:
        msg = "no recorded turn (replayable by the server) is in this slice; widen it: dates, sessions, profile, type"
        raise Invalid(msg, errors=[{"loc": "slice", "msg": msg, "type": "value_error"}])
    baseline, candidate = sides
    spec = {
        "name": name,
        "baseline": {"name": baseline.name, **baseline.spec},
        "candidate": {"name": candidate.name, **candidate.spec},
        "slice": {k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in slice_.items()},
    }
    row = await svc.store.experiments.create(spec, len(turns), actor)
    svc.experiments.launch(row.id, Runner(svc, row.id, sides, turns))
    return spec | {"id": row.id, "total": row.total}
