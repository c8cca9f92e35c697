"""Prometheus metrics: turn and assembly latency, per-module token use, SSE streams, database pool use.

Per process by default: each `tda serve` process counts what it served. When several worker processes share
one port, set ``PROMETHEUS_MULTIPROC_DIR`` (an empty folder, the same for every worker, before they start):
counters and histograms are then summed over the workers and gauges over the live ones, whichever worker
answers the scrape (prometheus-client's multiprocess mode).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from components.context_window.snapshot import ContextWindowSnapshot

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

TURN_SECONDS = Histogram(
    "tda_turn_seconds", "A turn end to end: load, assemble, store, model call", buckets=LATENCY_BUCKETS
)
ASSEMBLY_SECONDS = Histogram(
    "tda_assembly_seconds", "Context assembly (the five passes) of a turn", buckets=LATENCY_BUCKETS
)
TOKENS_ALLOCATED = Counter("tda_module_tokens_allocated", "Tokens allocated to a module", ["module"])
TOKENS_USED = Counter("tda_module_tokens_used", "Tokens a module's contribution used in the sent context", ["module"])
TOKENS_CONDENSED = Counter("tda_module_tokens_condensed", "Tokens removed from a module by condensing", ["module"])
AUXILIARY_CALLS = Counter(
    "tda_auxiliary_model_calls",
    "Model calls modules made while assembling (rewrites, summaries, filters)",
    ["module", "purpose", "status"],
)
AUXILIARY_TOKENS = Counter(
    "tda_auxiliary_model_tokens", "Tokens of the model calls modules made while assembling", ["module", "direction"]
)
PROMPT_CACHE_TOKENS = Counter(
    "tda_prompt_cache_tokens",
    "Prompt tokens of turns' model calls by what the provider's prompt cache did with them (read, written, neither)",
    ["model", "cache"],
)
MODEL_COST_USD = Counter("tda_model_cost_usd", "Dollars of turns' model calls (litellm's cost map)", ["model", "part"])
MODULE_FAILURES = Counter("tda_module_failures", "Contributions that raised or timed out", ["module", "status"])
SSE_SUBSCRIBERS = Gauge("tda_sse_subscribers", "Open SSE streams", multiprocess_mode="livesum")
SSE_DROPPED = Counter(
    "tda_sse_dropped_frames", "Frames not delivered because a stream's queue was full (the stream ends; it resumes)"
)
DB_CONNECTIONS_IN_USE = Gauge(
    "tda_db_connections_in_use", "Database connections checked out of the pool", multiprocess_mode="livesum"
)
DB_CONNECTIONS_OPEN = Gauge(
    "tda_db_connections_open", "Database connections the pool holds", multiprocess_mode="livesum"
)


def observe_assembly(snapshot: ContextWindowSnapshot) -> None:
    ASSEMBLY_SECONDS.observe(snapshot.duration_ms / 1000)
    for usage in snapshot.modules:
        if usage.status == "skipped":
            continue
        TOKENS_ALLOCATED.labels(usage.module_id).inc(usage.allocated)
        TOKENS_USED.labels(usage.module_id).inc(usage.used)
        if usage.status in ("failed", "timeout"):
            MODULE_FAILURES.labels(usage.module_id, usage.status).inc()
    for step in snapshot.condensations:
        TOKENS_CONDENSED.labels(step.module_id).inc(max(0, step.before - step.after))
    for call in snapshot.auxiliary_calls:
        AUXILIARY_CALLS.labels(call.module_id, call.purpose, call.status).inc()
        AUXILIARY_TOKENS.labels(call.module_id, "in").inc(call.tokens_in)
        AUXILIARY_TOKENS.labels(call.module_id, "out").inc(call.tokens_out)


def observe_model_call(call: dict[str, Any]) -> None:
    """A turn's model call (``tda.cost.model_call``): its prompt tokens by cache outcome and its dollars."""
    model, read, written = call["model"], call["cache_read_tokens"], call["cache_write_tokens"]
    PROMPT_CACHE_TOKENS.labels(model, "read").inc(read)
    PROMPT_CACHE_TOKENS.labels(model, "written").inc(written)
    PROMPT_CACHE_TOKENS.labels(model, "uncached").inc(max(0, call["prompt_tokens"] - read - written))
    if call["cost"] is not None:
        MODEL_COST_USD.labels(model, "input").inc(call["cost"]["input_usd"])
        MODEL_COST_USD.labels(model, "output").inc(call["cost"]["output_usd"])


def watch_pool(engine: AsyncEngine) -> None:
    """Count connections as the pool hands them out and takes them back (works across worker processes)."""
    pool = engine.sync_engine.pool
    event.listen(pool, "connect", lambda *_: DB_CONNECTIONS_OPEN.inc())
    event.listen(pool, "close", lambda *_: DB_CONNECTIONS_OPEN.dec())
    event.listen(pool, "detach", lambda *_: DB_CONNECTIONS_OPEN.dec())
    event.listen(pool, "checkout", lambda *_: DB_CONNECTIONS_IN_USE.inc())
    event.listen(pool, "checkin", lambda *_: DB_CONNECTIONS_IN_USE.dec())


def reset_multiprocess_dir(multiproc_dir: Path) -> None:
    """Before the workers start: figures of an earlier run would otherwise be added to this one's."""
    multiproc_dir.mkdir(parents=True, exist_ok=True)
    for stale in multiproc_dir.glob("*.db"):
        stale.unlink()


def forget_process(multiproc_dir: Path, pid: int) -> None:
    """A worker exited: its live gauges (open streams, pool use) stop counting; its counters stay summed."""
    multiprocess.mark_process_dead(pid, str(multiproc_dir))


def exposition(multiproc_dir: Path | None) -> tuple[bytes, str]:
    """The text format for a scrape: this process's registry, or every worker's in multiprocess mode."""
    registry: Any = REGISTRY
    if multiproc_dir is not None:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=str(multiproc_dir))
    return generate_latest(registry), CONTENT_TYPE_LATEST
