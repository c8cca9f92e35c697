"""What a tool result's vectors buy in history recall (issue 32): recall of old tool results against the data head.

A gateway agent session's history, as SessionRecall indexes it: per turn the user's request, the agent's tool call
(its SQL or report name as arguments), the tool result (a JSON table of 150-1,500 rows or a report's text, as
bench/tool_recall_bench.py generates them) and a short answer. Per session, three paraphrased questions about turns
older than the newest ten ("What did the purchases query show for sales per region?"). The history is ranked as
``HistoryIndex.rank`` ranks it (BM25 + best-part vectors, fused) with data embedded by its first HEAD characters
(``DATA_HEAD_CHARS``), HEAD in ``--heads`` (0: tool results get no vector, found by their words alone); and with
``--vague``, the user's requests say nothing ("Next one, please.") so that only the call and the result tell what
a turn was about.

A question is recalled at k when the target turn's tool call (the unit that brings its result) ranks in the top k,
or, for "turn", when any of the turn's messages does (recall brings its neighbours along). Also reported: the word
pieces embedded per tool result (the embedder's cost follows them, ~1 ms of CPU each for minilm-int8).

Run: ``python bench/data_head_bench.py [--sessions 20] [--turns 30] [--heads 600,300,150,0] [--vague]``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench.tool_recall_bench import ENTITIES, MEASURES, QUESTIONS, Analysis, analyses, result_of  # noqa: E402
from components.context_window.base import Message  # noqa: E402
from components.context_window.recall import messages as recall  # noqa: E402

NEWEST = 10
KS = (1, 5, 10)


def session(seed: int, turns: int, vague: bool) -> tuple[list[Analysis], list[Message]]:
    rng = random.Random(seed)
    plan = analyses(rng, turns)
    history = []
    for n, a in enumerate(plan, 1):
        result = result_of(a, rng)
        call_id = f"call_{n}"
        if result["tool"] == "run_sql":
            table = a.entity.replace(" ", "_")
            column = a.measure.replace(" ", "_")
            group = a.dimension.replace(" ", "_")
            arguments = {"sql": f"SELECT {group}, SUM({column}) FROM {table} GROUP BY {group}"}
            content = json.dumps({"columns": result["columns"], "rows": result["rows"]})
        else:
            arguments = {"report": f"{a.entity} {a.measure}"}
            content = result["text"]
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": result["tool"], "arguments": json.dumps(arguments)},
        }
        history += [
            Message("user", "Next one, please." if vague else f"{a.query}, please.", turn=n),
            Message("assistant", "", tool_calls=(call,), turn=n),
            Message("tool", content, tool_call_id=call_id, turn=n),
            Message("assistant", "Done: the figures are in the result above.", turn=n),
        ]
    return plan, history


def questions(seed: int, plan: list[Analysis]) -> list[tuple[int, str]]:
    rng = random.Random(seed + 1)
    old = rng.sample(range(len(plan) - NEWEST), 3)
    out = []
    for turn in old:
        a = plan[turn]
        template = rng.choice(QUESTIONS)
        entity, measure = ENTITIES[a.entity][0], MEASURES[a.measure]
        out.append((turn + 1, template.format(entity=entity, measure=measure, dimension=a.dimension)))
    return out


class Vectors:
    """The embedder's vectors, cached by text (a text is embedded once whatever the head)."""

    def __init__(self, name: str) -> None:
        from tda.knowledge.embeddings import make_embedder

        self.embed = make_embedder(name)
        self.cache: dict[str, np.ndarray] = {}

    def of(self, texts: list[str]) -> list[np.ndarray]:
        new = list(dict.fromkeys(t for t in texts if t not in self.cache))
        for start in range(0, len(new), 32):
            some = new[start : start + 32]
            self.cache.update(zip(some, (np.asarray(v, np.float32) for v in self.embed(some)), strict=True))
        return [self.cache[t] for t in texts]


def ranks(history: list[Message], asked: list[tuple[int, str]], vectors: Vectors, head: int) -> list[tuple[int, int]]:
    """Per question: the 1-based rank of its turn's tool call, and of the best of its turn's messages."""
    recall.DATA_HEAD_CHARS = max(head, 1)
    index = recall.HistoryIndex()
    per_message = [[] if head == 0 and m.role == "tool" else recall.parts_of(recall.embedded_text(m)) for m in history]
    flat = vectors.of([p for parts in per_message for p in parts])
    grouped, at = [], 0
    for parts in per_message:
        grouped.append(flat[at : at + len(parts)])
        at += len(parts)
    index.add(history, grouped)
    out = []
    for turn, question in asked:
        positions, _, _, _ = index.rank(question, vectors.of([question])[0], len(history))
        order = list(positions)
        call = (turn - 1) * 4 + 1
        in_turn = [order.index(p) + 1 for p in range(call - 1, call + 3) if p in order]
        out.append((order.index(call) + 1 if call in order else 10**6, min(in_turn, default=10**6)))
    return out


def word_pieces(texts: list[str]) -> float:
    from tokenizers import Tokenizer

    from tda.knowledge.model_files import model_folder

    tokenizer = Tokenizer.from_file(str(model_folder() / "tokenizer.json"))
    tokenizer.no_truncation()  # as the embedder reads them (up to 512), unpadded
    tokenizer.no_padding()
    return statistics.fmean(len(tokenizer.encode(t).ids) for t in texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--heads", default="600,300,150,0")
    parser.add_argument("--embedder", default="minilm-int8")
    parser.add_argument("--vague", action="store_true")
    args = parser.parse_args()
    vectors = Vectors(args.embedder)
    sessions = [session(seed, args.turns, args.vague) for seed in range(args.sessions)]
    asked = [questions(seed, plan) for seed, (plan, _) in enumerate(sessions)]
    results = [m.content for _, history in sessions for m in history if m.role == "tool"]
    print(
        f"data head bench: {args.sessions} sessions x {args.turns} turns, {sum(map(len, asked))} questions, "
        f"embedder {args.embedder}, requests {'vague' if args.vague else 'naming the analysis'}"
    )
    print(
        f"{'head':>6}{'pieces':>8}"
        + "".join(f"{f'call@{k}':>9}" for k in KS)
        + "".join(f"{f'turn@{k}':>9}" for k in KS)
    )
    for head in (int(h) for h in args.heads.split(",")):
        found = [r for (_, history), qs in zip(sessions, asked, strict=True) for r in ranks(history, qs, vectors, head)]
        pieces = word_pieces([r[:head] for r in results]) if head else 0.0
        calls = "".join(f"{sum(c <= k for c, _ in found) / len(found):>9.0%}" for k in KS)
        turns = "".join(f"{sum(t <= k for _, t in found) / len(found):>9.0%}" for k in KS)
        print(f"{head:>6}{pieces:>8.0f}{calls}{turns}", flush=True)
    print(json.dumps({"sessions": args.sessions, "vague": args.vague}))


if __name__ == "__main__":
    main()
