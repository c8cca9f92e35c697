"""Metrics per version of a context window type: what each version did to the traffic it served (turns, windows,
tokens, cost, cache reuse, utilisation, condensations), in all and by day, so a change shows after it ships."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from statistics import fmean
from typing import Any

from .analytics import cost_totals


def _day(at: datetime) -> str:
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).date().isoformat()


def _figures(rows: Sequence[Any]) -> dict[str, Any]:
    """The figures of some windows (snapshots) of one version: ``rows`` from ``SessionStore.type_figures``."""
    cost = cost_totals(r.model_call for r in rows)
    prompt = cost["prompt_tokens"]
    return {
        "turns": len({(r.session_id, r.turn) for r in rows}),
        "windows": len(rows),
        "model_calls": cost["model_calls"],
        "tokens_in": prompt,
        "tokens_out": cost["completion_tokens"],
        "cache_read_tokens": cost["cache_read_tokens"],
        "cache_reuse": round(cost["cache_read_tokens"] / prompt, 4) if prompt else None,
        "cost_usd": cost["total_usd"],
        "unpriced_calls": cost["unpriced_calls"],
        "avg_utilisation": round(fmean(float(r.utilisation or 0) for r in rows), 4),
        "condensations": sum(len(r.condensations or ()) for r in rows),
        "first_at": rows[0].created_at.isoformat(),
        "last_at": rows[-1].created_at.isoformat(),
    }


def version_metrics(rows: Iterable[Any]) -> dict[str, Any]:
    """Per version (newest first) and per day and version (oldest first), from a type's windows oldest first."""
    by_version: dict[int, list[Any]] = defaultdict(list)
    by_day: dict[tuple[str, int], list[Any]] = defaultdict(list)
    for r in rows:
        by_version[r.type_version].append(r)
        by_day[(_day(r.created_at), r.type_version)].append(r)
    return {
        "versions": [{"version": v, **_figures(by_version[v])} for v in sorted(by_version, reverse=True)],
        "days": [{"day": day, "version": v, **_figures(by_day[(day, v)])} for day, v in sorted(by_day)],
    }
