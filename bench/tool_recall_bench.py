"""Tool-result recall benchmark (issue 21, item 3): do old tool results reach the window when a question is about them?

Workload: ``--sessions`` generated agent sessions (default 20) of 24-36 turns. Each turn runs one analysis (an
entity, a measure, a dimension: "Revenue of orders by region"), with its plan and one large result: a table of
150-1,500 rows (every row carrying the turn's batch code, e.g. ``B4821``, in a ``batch`` column) or a report text of
2,000-9,000 characters opening with the batch code. The conversation holds each turn's question and a short answer
(no figures: those are in the results). Per session, three questions about one turn older than the newest ten,
paraphrased ("What did the purchases query show for sales per region?"), and one question about none of them.
Before the questions, each session is assembled until its turns are indexed (a live session indexes a turn as it
comes; a long one met whole is embedded a batch of parts per turn, matched by words meanwhile).

A question is answered when its target's batch code is in the assembled window (Balanced type, ``tool_enabled``
profile, ``--limit`` tokens, gpt-4o counting): plan_hydration's statistics name it (every row holds it) at every
level but metadata-only. ``workflow line`` counts the target's "- Turn N (" line. ``false recalls``: unrelated
questions for which an earlier result was recalled anyway.

Speed: plan_hydration's and workflow_history's ``contribute`` on a 200-turn session, median over turns 151-200 as
the session grows (each call sees one new turn, as a live session does), and the first call on the whole 200 turns
(the index built from nothing). ``_service``: the same with what the service hands a module: the newest 40
records, built afresh for each turn (nothing kept by identity).

Run ``python bench/tool_recall_bench.py [--embedder none|hashing|minilm] [--code DIR]``; ``--code`` runs another
checkout's component and modules (e.g. main's, for the before figures).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tda.builtins import module_registry

ROOT = Path(__file__).resolve().parents[1]

ENTITIES = {
    "orders": ("purchases", "order_id"),
    "support tickets": ("helpdesk cases", "ticket_id"),
    "shipments": ("deliveries", "shipment_id"),
    "invoices": ("bills", "invoice_id"),
    "web sessions": ("site visits", "visit_id"),
    "employees": ("staff", "employee_id"),
    "servers": ("machines", "host"),
    "marketing campaigns": ("ad campaigns", "campaign_id"),
    "subscriptions": ("memberships", "account_id"),
    "meter readings": ("utility meters", "meter_id"),
    "warehouse stock": ("inventory", "sku"),
    "loan applications": ("credit requests", "application_id"),
}
MEASURES = {
    "revenue": "sales",
    "average delay": "mean lateness",
    "count": "number",
    "cost": "spend",
    "error rate": "failure share",
    "utilisation": "usage",
}
DIMENSIONS = ["region", "month", "product line", "channel", "team"]
QUESTIONS = [
    "What did the {entity} query show for {measure} per {dimension}?",
    "Going back to the {entity} numbers we pulled earlier: what was the {measure}?",
    "Remind me of the {measure} figures from the {entity} analysis at the start.",
]
UNRELATED = [
    "Draft a friendly reminder email about the team offsite next Thursday.",
    "Translate 'good morning, colleagues' into Portuguese.",
    "Suggest a name for our new internal newsletter.",
    "How do I reset my laptop's keyboard backlight?",
]
RECENT_TURNS = 40
"""Turn records the service reads for a turn (tda/store/sessions.py)."""
ANSWER = "Done: the results are above; the main points are summarised in the table."


@dataclass(frozen=True)
class Analysis:
    entity: str
    measure: str
    dimension: str
    batch: str

    @property
    def query(self) -> str:
        return f"{self.measure.capitalize()} of {self.entity} by {self.dimension}"


def analyses(rng: random.Random, turns: int) -> list[Analysis]:
    combos = [(e, m, d) for e in ENTITIES for m in MEASURES for d in DIMENSIONS]
    chosen = rng.sample(combos, turns)
    return [Analysis(e, m, d, f"B{rng.randrange(1000, 9999)}{i}") for i, (e, m, d) in enumerate(chosen)]


def result_of(a: Analysis, rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.7:
        key = ENTITIES[a.entity][1]
        column = a.measure.replace(" ", "_")
        values = [f"{a.dimension} {k}" for k in range(rng.randrange(3, 9))]
        rows = [
            [f"{key[:3]}-{i}", rng.choice(values), round(rng.uniform(1, 900), 2), a.batch]
            for i in range(rng.randrange(150, 1_500))
        ]
        return {"tool": "run_sql", "columns": [key, a.dimension.replace(" ", "_"), column, "batch"], "rows": rows}
    moves = ["held steady", "rose", "fell", "stayed flat", "followed the season", "was revised"]
    filler = " ".join(f"In week {k} it {rng.choice(moves)}." for k in range(1, 400))
    text = f"Report {a.batch}: {a.query}. The {a.measure} moved as follows. {filler}"
    return {"tool": "fetch_report", "text": text[: rng.randrange(2_000, 9_000)]}


def session_turns(seed: int, turns: int) -> tuple[list[Analysis], list[Any], list[Any]]:
    from components.context_window.base import Message, TurnRecord

    rng = random.Random(seed)
    plan = analyses(rng, turns)
    records, messages = [], []
    for n, a in enumerate(plan, 1):
        steps = f"1. query the {a.entity} table for {a.measure}\n2. group by {a.dimension}\n3. summarise"
        records.append(TurnRecord(n, a.query, plan=steps, answer=ANSWER, results=(result_of(a, rng),)))
        messages += [Message("user", a.query, turn=n), Message("assistant", ANSWER, turn=n)]
    return plan, records, messages


def make_embedder(name: str) -> Any:
    if name == "none":
        return None
    from tda.knowledge.embeddings import HashingEmbedding, make_embedder

    embed = HashingEmbedding() if name == "hashing" else make_embedder("minilm-int8")

    class Wrapped:
        async def embed(self, texts: list[str]) -> list[list[float]]:
            return [list(map(float, v)) for v in embed(list(texts))]

    return Wrapped()


async def accuracy(args: argparse.Namespace, embedder: Any) -> dict[str, Any]:
    from components.context_window.base import AssemblyContext, Profile, Session
    from components.context_window.handler import ContextWindowHandler
    from tda.builtins import DEFAULT_TYPES

    handler = ContextWindowHandler(module_registry(entry_point_group=None).load())
    asked = found = lines = false = unrelated = 0
    for seed in range(args.sessions):
        rng = random.Random(1_000 + seed)
        turns = rng.randrange(24, 37)
        plan, records, messages = session_turns(seed, turns)
        target = rng.randrange(1, turns - 10)  # older than the newest ten turns
        a = plan[target - 1]
        synonyms = ENTITIES[a.entity][0], MEASURES[a.measure]
        questions = [
            q.format(
                entity=rng.choice([a.entity, synonyms[0]]),
                measure=rng.choice([a.measure, synonyms[1]]),
                dimension=a.dimension,
            )
            for q in QUESTIONS
        ]
        session = Session(f"bench-{seed}", messages=messages, turns=records)

        def ctx(question: str, session: Session = session) -> AssemblyContext:
            return AssemblyContext(
                query=question,
                profile=Profile("p", "tool_enabled"),
                session=session,
                model="gpt-4o",
                model_limit=args.limit,
                embedder=embedder,
            )

        for _ in range(10):  # a live session indexes its turns as they come; met whole, a batch of parts a turn
            window = await handler.assemble(ctx(UNRELATED[0]), DEFAULT_TYPES["balanced"])
            if not any(pending(window.snapshot, m) for m in ("plan_hydration", "workflow_history")):
                break
        for question in [*questions, rng.choice(UNRELATED)]:
            window = await handler.assemble(ctx(question), DEFAULT_TYPES["balanced"])
            text = "\n".join(str(m.get("content")) for m in window.messages)
            if question in UNRELATED:
                unrelated += 1
                false += "Earlier result recalled" in text
                continue
            asked += 1
            found += a.batch in text
            lines += f"- Turn {target} (" in text
    return {"questions": asked, "answered": found / asked, "workflow_line": lines / asked, "false": false / unrelated}


def forget_vectors() -> None:
    try:
        from components.context_window.recall.turns import TurnRecall
    except ImportError:  # code from before recall
        return
    TurnRecall._shared_vectors.clear()


def pending(snapshot: Any, module_id: str) -> int:
    recall = snapshot.module(module_id).metadata.get("recall") or {}
    return int(recall.get("pending_embeddings", 0))


async def speed(embedder: Any) -> dict[str, float]:
    from components.context_window.base import AssemblyContext, Directives, Profile, Session
    from components.context_window.token_estimator import estimator_for
    from tda.builtins import DEFAULT_TYPES

    registry = module_registry(entry_point_group=None).load()
    _, records, messages = session_turns(7, 200)
    question = "What did the purchases query show for sales per region?"
    distillation = DEFAULT_TYPES["balanced"].distillation.model_dump()
    out: dict[str, float] = {}
    for module_id, budget in (("plan_hydration", 3_000), ("workflow_history", 1_500)):
        module = registry.modules[module_id]

        def ctx(n: int, *, sid: str, fresh: bool = False, module_id: str = module_id) -> AssemblyContext:
            # fresh: as the service gives them, the newest RECENT_TURNS records, built anew for each turn
            turns = [dataclasses.replace(t) for t in records[max(0, n - RECENT_TURNS) : n]] if fresh else records[:n]
            whole = AssemblyContext(
                query=question,
                profile=Profile("p", "tool_enabled"),
                session=Session(sid, messages=messages[: 2 * n], turns=turns),
                model="gpt-4o",
                embedder=embedder,
            )
            config = {"distillation": distillation} if module_id == "plan_hydration" else {}
            return whole.for_module(Directives(config=config), estimator_for("gpt-4o"))

        started = time.perf_counter()
        await module.contribute(budget, ctx(200, sid="cold"))
        out[f"{module_id}_cold_ms"] = 1000 * (time.perf_counter() - started)
        for label, fresh in (("", False), ("_service", True)):
            forget_vectors()  # each run embeds its own new turns
            sid = f"warm{label}"
            await module.contribute(budget, ctx(150, sid=sid, fresh=fresh))
            times = []
            for n in range(151, 201):
                turn_ctx = ctx(n, sid=sid, fresh=fresh)
                started = time.perf_counter()
                await module.contribute(budget, turn_ctx)
                times.append(1000 * (time.perf_counter() - started))
            out[f"{module_id}{label}_ms"] = statistics.median(times)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--limit", type=int, default=32_000)
    parser.add_argument("--embedder", choices=["none", "hashing", "minilm"], default="none")
    parser.add_argument("--code", type=Path, default=ROOT, help="checkout whose component and modules run")
    parser.add_argument("--no-speed", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(args.code.resolve()))
    from tda.config import offline_library_defaults

    offline_library_defaults()
    embedder = make_embedder(args.embedder)
    if not args.no_speed:  # first: the accuracy run leaves garbage whose collection would be timed
        figures = asyncio.run(speed(embedder))
        print(" | ".join(f"{k} {v:.2f}" for k, v in figures.items()))
    result = asyncio.run(accuracy(args, embedder))
    print(
        f"code {args.code} | embedder {args.embedder} | limit {args.limit:,} | {result['questions']} questions: "
        f"result in window {result['answered']:.0%}, workflow line {result['workflow_line']:.0%}, "
        f"false recalls {result['false']:.0%}"
    )


if __name__ == "__main__":
    main()
