"""Context analytics for a session: per-turn budget and module figures, and their aggregates; what the model calls
cost, per session and per profile (``cost_totals``)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from statistics import fmean
from typing import Any

TOKEN_FIELDS = ("prompt_tokens", "cache_read_tokens", "cache_write_tokens", "completion_tokens")
DOLLAR_FIELDS = ("input_usd", "uncached_input_usd", "cached_input_usd", "output_usd", "total_usd", "saved_by_cache_usd")


def _turn(snapshot_id: int, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "snapshot_id": snapshot_id,
        "turn": data.get("turn"),
        "created_at": data.get("created_at"),
        "window_type_id": data.get("window_type_id"),
        "effective_limit": data.get("effective_limit", 0),
        "available_budget": data.get("available_budget", 0),
        "total_used": data.get("total_used", 0),
        "utilisation": data.get("utilisation", 0.0),
        "condensations": len(data.get("condensations", [])),
        "adjustments_fired": list(data.get("adjustments_fired", [])),
        "model_call": _call(data.get("model_call")),
        "modules": {
            m["module_id"]: {k: m.get(k) for k in ("status", "allocated", "used", "utilisation", "condensed")}
            for m in data.get("modules", [])
        },
    }


def _modules(turns: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    per: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in turns:
        for module_id, m in t["modules"].items():
            per[module_id].append(m)
    return {
        module_id: {
            "turns": len(ms),
            "avg_allocated": round(fmean(m["allocated"] or 0 for m in ms), 1),
            "avg_used": round(fmean(m["used"] or 0 for m in ms), 1),
            "max_used": max(m["used"] or 0 for m in ms),
            "avg_utilisation": round(fmean(m["utilisation"] or 0 for m in ms), 4),
            "times_condensed": sum(1 for m in ms if m["condensed"]),
            "times_failed": sum(1 for m in ms if m["status"] in ("failed", "timeout")),
        }
        for module_id, ms in sorted(per.items())
    }


def context_analytics(snapshots: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    """``snapshots``: (id, snapshot dict) oldest first."""
    turns = [_turn(i, d) for i, d in snapshots]
    n = len(turns)
    fired = Counter(rule for t in turns for rule in t["adjustments_fired"])
    condensed = Counter(c["module_id"] for _, d in snapshots for c in d.get("condensations", []))
    return {
        "turns": turns,
        "summary": {
            "turns": n,
            "avg_utilisation": round(fmean(t["utilisation"] for t in turns), 4) if n else 0.0,
            "max_utilisation": max((t["utilisation"] for t in turns), default=0.0),
            "avg_total_used": round(fmean(t["total_used"] for t in turns), 1) if n else 0.0,
            "max_total_used": max((t["total_used"] for t in turns), default=0),
            "condensations": sum(t["condensations"] for t in turns),
            "condensations_by_module": dict(sorted(condensed.items())),
            "adjustment_frequency": {rule: round(count / n, 4) for rule, count in sorted(fired.items())},
            "modules": _modules(turns),
            "cost": cost_totals(d.get("model_call") for _, d in snapshots),
        },
    }


def _call(call: dict[str, Any] | None) -> dict[str, Any] | None:
    """A snapshot's model call in brief: its tokens and dollars (``cost_usd`` None: the model's price is unknown)."""
    if not call:
        return None  # the call failed, or its answer was not recorded yet
    cost = call.get("cost")
    return {
        "model": call.get("model"),
        **{key: call.get(key, 0) for key in TOKEN_FIELDS},
        "cost_usd": cost["total_usd"] if cost else None,
        "auxiliary_usd": (call.get("auxiliary") or {}).get("usd"),
    }


def cost_totals(calls: Iterable[dict[str, Any] | None]) -> dict[str, Any]:
    """Tokens and dollars summed over model calls (snapshots' ``model_call``). Dollars add up the priced calls
    only; calls to a model without a price are counted (``unpriced_calls``, ``unpriced_models``), never as $0,
    and with no priced call every dollar figure is None."""
    recorded = [c for c in calls if c]
    priced = [c["cost"] for c in recorded if c.get("cost")]
    by_module: dict[str, float] = defaultdict(float)
    for cost in priced:
        for module, dollars in cost.get("input_by_module_usd", {}).items():
            by_module[module] += dollars
    return {
        "model_calls": len(recorded),
        "priced_calls": len(priced),
        "unpriced_calls": len(recorded) - len(priced),
        "unpriced_models": sorted({str(c.get("model")) for c in recorded if not c.get("cost")}),
        **{key: sum(c.get(key, 0) for c in recorded) for key in TOKEN_FIELDS},
        **{key: sum(cost.get(key, 0.0) for cost in priced) if priced else None for key in DOLLAR_FIELDS},
        "input_by_module_usd": dict(sorted(by_module.items())) if priced else None,
        **_auxiliary_totals([c["auxiliary"] for c in recorded if c.get("auxiliary")]),
    }


def _auxiliary_totals(auxiliary: list[dict[str, Any]]) -> dict[str, Any]:
    """The modules' own model calls (summaries, query rewrites), besides the answers': their count, tokens and
    the dollars of those with a price (None when there were some and none had one)."""
    priced = [a["usd"] for a in auxiliary if a["usd"] is not None]
    return {
        "auxiliary_calls": sum(a["calls"] for a in auxiliary),
        "auxiliary_tokens_in": sum(a["tokens_in"] for a in auxiliary),
        "auxiliary_tokens_out": sum(a["tokens_out"] for a in auxiliary),
        "auxiliary_usd": sum(priced) if priced or not auxiliary else None,
        "auxiliary_unpriced_models": sorted({m for a in auxiliary for m in a["unpriced_models"]}),
    }
