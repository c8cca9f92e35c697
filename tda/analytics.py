"""Context analytics for a session: per-turn budget and module figures, and their aggregates."""

from __future__ import annotations

from collections import Counter, defaultdict
from statistics import fmean
from typing import Any


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
        },
    }
