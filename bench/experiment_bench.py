"""How long an experiment of TURNS recorded turns takes on the demo data (issue 36: target under a minute for 500).

The demo data (`tda demo`'s profiles and types) gets TURNS turns recorded through the API, spread over SESSIONS
sessions of the demo profiles (the mock model, TDA_EMBEDDER=hashing, SQLite), the way traffic would record them.
Then, as an admin would from the type editor: POST /v1/experiments with the balanced type as edited (unsaved: its
history's share lowered) against what the profiles run now, over the last TURNS turns, and the time until its
figures are saved (``finished_at``), read by polling GET like the page's fallback. Prints the time, the turns per
second, and the experiment's totals.

Run: ``python bench/experiment_bench.py`` (BENCH_TURNS=n, BENCH_SESSIONS=n).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tda.app import create_app  # noqa: E402
from tda.config import Settings, offline_library_defaults  # noqa: E402
from tda.demo import PROFILES, seed_demo  # noqa: E402

offline_library_defaults()

TURNS = int(os.environ.get("BENCH_TURNS", "500"))
SESSIONS = int(os.environ.get("BENCH_SESSIONS", "10"))
TARGET_S = 60.0
QUESTIONS = (
    "Which region had the most returns last quarter?",
    "Break that down by product line.",
    "Draw the weekly trend.",
    "What changed after the price update?",
    "Summarise what we found so far.",
)


async def _ok(response: Any, status: int = 200) -> Any:
    body = await response.get_json()
    assert response.status_code == status, body
    return body


async def _record(client: Any, admin: dict[str, str]) -> None:
    profiles = [p["id"] for p in PROFILES]
    for n in range(SESSIONS):
        await _ok(
            await client.post(
                "/v1/sessions", json={"id": f"bench-{n}", "profile_id": profiles[n % len(profiles)]}, headers=admin
            ),
            201,
        )
    for i in range(TURNS):
        query = f"{QUESTIONS[i % len(QUESTIONS)]} ({i})"
        await _ok(
            await client.post(f"/v1/sessions/bench-{i % SESSIONS}/turns", json={"query": query}, headers=admin), 201
        )


async def _candidate(client: Any, admin: dict[str, str]) -> dict[str, Any]:
    body = await _ok(await client.get("/v1/context-window-types/balanced", headers=admin))
    for k in ("etag", "version", "updated_at"):
        body.pop(k)
    body["is_default"] = False
    body["modules"]["conversation_history"]["target_pct"] = 12
    return body


async def main() -> None:
    logging.disable(logging.WARNING)  # the demo profiles name a knowledge collection not ingested here: said per turn
    folder = Path(tempfile.mkdtemp())
    settings = Settings(data_dir=folder, modules_dir=folder / "modules", mock_model=True, embedder="hashing")
    app = create_app(settings, warm_up_llm=False, warm_up_knowledge=False)
    async with app.test_app() as running:
        svc = app.extensions["tda"]
        await seed_demo(svc.store)
        token, _ = await svc.store.tokens.create("bench-admin", "admin")
        admin = {"Authorization": f"Bearer {token}"}
        client = running.test_client()
        started = time.perf_counter()
        await _record(client, admin)
        print(f"recorded {TURNS} turns over {SESSIONS} sessions in {time.perf_counter() - started:.1f} s")

        body = {"name": "bench", "candidate": {"type": await _candidate(client, admin)}, "slice": {"limit": TURNS}}
        started = time.perf_counter()
        created = await _ok(await client.post("/v1/experiments", json=body, headers=admin), 201)
        while True:
            e = await _ok(await client.get(f"/v1/experiments/{created['id']}", headers=admin))
            if e["finished_at"]:
                break
            await asyncio.sleep(0.2)
        took = time.perf_counter() - started
        t = e["totals"]
        verdict = "meets" if took < TARGET_S else "MISSES"
        print(
            f"experiment of {e['done']} turns ({e['status']}): {took:.1f} s, {e['done'] / took:.0f} turns/s "
            f"({verdict} the target of < {TARGET_S:.0f} s)"
        )
        print(
            f"  tokens sent {t['baseline']['tokens']:,} -> {t['candidate']['tokens']:,}; "
            f"no longer fit: {t['no_longer_fit']}; compared: {t['compared']}"
        )


if __name__ == "__main__":
    asyncio.run(main())
