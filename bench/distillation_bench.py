"""plan_hydration distillation speed: statistics over every row, cold and cached.

Prints medians (ms) for distilling 1,000 / 10,000 / 100,000-row results, the 100K/10K ratio (linear
work should give ~10), and plan_hydration.contribute on a 10,000-row result cold (statistics
computed) and warm (distillation cached for the session). Target: a 10,000-row result distils in well
under 100 ms. Run: python bench/distillation_bench.py
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import time
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from components.context_window.base import AssemblyContext, Directives, ModuleManifest, Profile, Session, TurnRecord
from components.context_window.token_estimator import estimator_for
from components.context_window.tool_results.shapes import parse_result
from modules.plan_hydration.distillation import distill
from modules.plan_hydration.handler import PlanHydrationModule
from tda.config import offline_library_defaults

offline_library_defaults()  # tiktoken loads litellm's bundled encodings, as in the service

COLUMNS = ["order_id", "order_date", "region", "customer", "product", "quantity", "net_amount"]


def result(rows: int, seed: int = 1) -> dict:
    rng = random.Random(seed)
    return {
        "tool": "sql_query",
        "columns": COLUMNS,
        "rows": [
            [
                i,
                (date(2025, 1, 1) + timedelta(days=i % 365)).isoformat(),
                rng.choice(["EMEA", "APAC", "AMER", "LATAM"]),
                f"C{rng.randint(1, 900):04d}",
                rng.choice(["Starter", "Team", "Business", "Enterprise"]),
                rng.randint(1, 40),
                round(rng.uniform(5, 5000), 2),
            ]
            for i in range(rows)
        ],
    }


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    figures = {}
    for rows, repeat in ((1_000, 21), (10_000, 11), (100_000, 5)):
        data = result(rows)
        figures[rows] = median_ms(lambda data=data: distill(parse_result(data, 1), 1, 500, 10_000), repeat)
        print(f"distil {rows:>7,} rows x {len(COLUMNS)} columns: median {figures[rows]:8.2f} ms")
    print(f"ratio t(100,000)/t(10,000): {figures[100_000] / figures[10_000]:.2f} (linear = 10)")

    manifest = ModuleManifest.model_validate_json(
        (Path(__file__).resolve().parents[1] / "modules/plan_hydration/manifest.json").read_text()
    )
    data = result(10_000)
    ctx = AssemblyContext("q", Profile("p"), Session("s", turns=[TurnRecord(1, "q", results=(data,))])).for_module(
        Directives(), estimator_for("gpt-4o")
    )

    def cold() -> None:
        asyncio.run(PlanHydrationModule(manifest).contribute(4_000, ctx))

    module = PlanHydrationModule(manifest)
    asyncio.run(module.contribute(4_000, ctx))
    cold_ms = median_ms(cold, 11)
    warm_ms = median_ms(lambda: asyncio.run(module.contribute(4_000, ctx)), 11)
    print(f"contribute, 10,000 rows: cold {cold_ms:.2f} ms, warm (cached distillation) {warm_ms:.2f} ms")
    print(f"ratio cold/warm: {cold_ms / warm_ms:.1f}")


if __name__ == "__main__":
    main()
