"""Earlier-turn recall in the service (issue 21, item 3): what a turn costs on a long session of tool turns.

One session of ``--turns`` turns (default 200) played over HTTP (the app's test client, the mock model): each turn's
reply calls a tool, the tool's rows come back (``/tool-results``), the model answers. Per new turn (the ``POST
/turns`` step), from turn ``--from`` on: the Server-Timing ``assemble`` and ``turn`` figures, and plan_hydration's
own ``contribute`` time (its status's ``last.ms``: wall time, other modules run beside it), and the process's CPU
time for the step (less sensitive to other load on the machine); medians. The growth: the step's CPU time at turns
91-100, 291-300 and over the last 10 turns (run ``--turns 2000`` or more to see whether a turn's cost follows the
session), the process's RSS after turns 100 and 300 and at the end, and the window's tokens at those turns: a window
still filling grows honestly (at turn 100 it is not yet full; by 300 it is). Then three questions about turn 3's result:
whether it reached the window (plan_hydration's "Earlier result recalled (turn 3: ...)"); and what a replica meeting
the session for the first time spends reading and describing its turns (``cold_index_ms``).

Run ``python bench/turn_recall_service_bench.py [--embedder hashing|minilm-int8] [--code DIR]``; ``--code`` runs
another checkout (e.g. the branch's base, for the before figures).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PRODUCTS = "kettle toaster blender lamp kayak tent drill ladder heater fan mixer router scanner printer bicycle".split()
CITIES = "Lisbon Oslo Graz Porto Leeds Turin Ghent Lyon Bergen Malmo Cork Bruges Split Krakow Dresden".split()
FACT = ("How many turquoise umbrellas are left in the Tromsø warehouse?", "turquoise umbrella", "Tromsø", 4187)
MARK = "## Earlier result recalled (turn 3:"
QUESTIONS = (
    "Remind me: how many turquoise umbrellas did the Tromsø warehouse have?",
    "What was the umbrella stock in Tromsø again?",
    "Turquoise umbrellas in Tromsø: how many units?",
)


def turns(n: int, seed: int = 11) -> list[tuple[str, list[dict[str, Any]]]]:
    rng = random.Random(seed)
    out = []
    for i in range(1, n + 1):
        if i == 3:
            query, product, city, units = FACT
            out.append((query, [{"product": product, "warehouse": city, "size": "S", "units": units}]))
            continue
        product, city = rng.choice(PRODUCTS), rng.choice(CITIES)
        rows = [{"product": product, "warehouse": city, "size": s, "units": rng.randint(1, 900)} for s in "SML"]
        rows += [
            {"product": product, "warehouse": city, "size": f"X{k}", "units": rng.randint(1, 900)} for k in range(20)
        ]
        out.append((f"What {product} stock does the {city} warehouse hold?", rows))
    return out


async def play(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    from tda.app import create_app
    from tda.config import Settings
    from tests.service.support import ScriptedModel

    settings = Settings(data_dir=data, modules_dir=data / "modules", mock_model=True, embedder=args.embedder)
    model = ScriptedModel()
    app = create_app(settings, llm=model.llm, migrate=False, warm_up_llm=False)
    tool = {"type": "function", "function": {"name": "stock_report", "parameters": {"type": "object"}}}
    async with app.test_app_class(app, startup_timeout=600) as running:  # a loaded machine starts slowly
        svc = running.app.extensions["tda"]
        token, _ = await svc.store.tokens.create("bench", "admin")
        client, headers = running.test_client(), {"Authorization": f"Bearer {token}"}

        async def call(url: str, body: Any) -> Any:
            r = await client.post(url, json=body, headers=headers)
            assert r.status_code in (200, 201), await r.get_json()
            return r

        await call("/v1/profiles", {"id": "p", "type": "tool_enabled", "tools": [tool]})
        await call("/v1/sessions", {"id": "s", "profile_id": "p"})
        plan_ms, assemble, whole, cpus, every_cpu, rss, window = [], [], [], [], [], [], []
        for n, (query, rows) in enumerate(turns(args.turns), 1):
            model.replies += [[("c1", "stock_report", {"q": query[:20]})], "Noted."]
            started, cpu = time.perf_counter(), time.process_time()
            r = await call("/v1/sessions/s/turns", {"query": query})
            elapsed, cpu = 1000 * (time.perf_counter() - started), 1000 * (time.process_time() - cpu)
            every_cpu.append(cpu)
            if n in (100, 300):
                rss.append(rss_mib())
            if n in (100, 300, args.turns):
                window.append(window_tokens((await r.get_json())["snapshot"]))
            timing = dict(part.split(";dur=") for part in r.headers["Server-Timing"].split(", "))
            if n >= args.start:
                plan_ms.append(svc.registry.modules["plan_hydration"].get_status()["last"]["ms"])
                assemble.append(float(timing["assemble"]))
                whole.append(elapsed)
                cpus.append(cpu)
            results = {"results": [{"tool_call_id": "c1", "content": json.dumps(rows)}]}
            await call(f"/v1/sessions/s/turns/{n}/tool-results", results)
            await svc.writer.settle("s")
            del model.sent[:-1]  # the fake model keeps every window it was sent: the bench's memory, not tda's
        cold = await cold_index_ms(svc)
        found = 0
        for question in QUESTIONS:
            model.replies.append("Answered.")
            await call("/v1/sessions/s/turns", {"query": question})
            await svc.writer.settle("s")
            found += MARK in "\n".join(str(m.get("content") or "") for m in model.sent[-1]["messages"])
    return {
        **cold,
        "plan_hydration_ms": statistics.median(plan_ms),
        "assemble_ms": statistics.median(assemble),
        "turn_ms": statistics.median(whole),
        "turn_cpu_ms": statistics.median(cpus),
        "turn_cpu_ms_91_100": statistics.median(every_cpu[90:100] or [0.0]),
        "turn_cpu_ms_291_300": statistics.median(every_cpu[290:300] or [0.0]),
        "turn_cpu_ms_last10": statistics.median(every_cpu[-10:]),
        "rss_mib_turn_100_300_end": " -> ".join(f"{mib:.0f}" for mib in [*rss, rss_mib()]),
        "window_tokens_turn_100_300_end": " -> ".join(window),
        "turn_3_recalled": f"{found}/{len(QUESTIONS)}",
    }


def window_tokens(snapshot: dict[str, Any]) -> str:
    """The window's tokens of its budget, and conversation_history's share."""
    history = next((m["used"] for m in snapshot["modules"] if m["module_id"] == "conversation_history"), 0)
    return f"{snapshot['total_used']}/{snapshot['available_budget']} (history {history})"


def rss_mib() -> float:
    """This process's resident memory (MiB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def cold_index_ms(svc: Any) -> dict[str, float]:
    """A replica meeting the session for the first time: its turns read and described for plan_hydration."""
    try:
        from modules.plan_hydration.offload import describe
        from tda.recall.turns import TurnIndex
    except ImportError:  # code from before the turn index
        return {}
    index = TurnIndex(svc.store.db, lambda: None)
    session = await svc.store.sessions.get("s")
    started = time.perf_counter()
    await index.bound(session, session.phase).described("plan_hydration", describe, before=2**31 - 1)
    return {"cold_index_ms": 1000 * (time.perf_counter() - started)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--start", type=int, default=151, help="first turn whose figures count")
    parser.add_argument("--embedder", default="minilm-int8")
    parser.add_argument("--code", type=Path, default=ROOT, help="checkout whose code runs")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(args.code.resolve()))
    from tda.config import offline_library_defaults
    from tda.db import upgrade

    offline_library_defaults()  # litellm's cost map as shipped: no fetch (and its retries) from an offline machine

    data = Path(tempfile.mkdtemp(prefix="turn-recall-bench-"))
    upgrade(f"sqlite+aiosqlite:///{data / 'tda.db'}")
    figures = asyncio.run(play(args, data))
    print(
        f"code {args.code} | embedder {args.embedder} | {args.turns} turns | "
        + " | ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items())
    )


if __name__ == "__main__":
    main()
