"""History recall's abstention: on which questions does recall say "nothing relevant found", and could any rule over
its signals say it on more of the questions nothing answers without saying it on an answerable one?

Data: bench/conversation_data.py (long chats between people; four answerable question kinds and three that nothing
answers: a topic never raised, a person never named, a detail never given). Each chat is indexed as the service does
(``SessionRecall`` with the embedder of TDA_EMBEDDER, default minilm-int8, every vector in) and each question ranked
against the whole chat. Reported:

1. per kind, how many questions recall abstains on (the reason starts "nothing relevant found");
2. the signals the abstention reads, per kind (ranges): the best message's z-score over the chat's cosines, the best
   message's share of the question's idf weight (coverage), and the share of that weight in words no message holds;
3. the frontier: over a grid of rules "abstain when z < a and coverage < b and unseen share >= c", the rule that keeps
   every answerable question and catches the most of each unanswerable kind beyond what recall catches now: how much
   an abstention rule over these signals could still gain;
4. answerable questions reworded with a day, a month or a clause opener ("Sorry, quick one: Remind me, ..."): how
   many make recall abstain (a capitalised word taken for a name nothing mentions; should be 0).

Run: `python bench/abstention_bench.py` (BENCH_CONVERSATIONS=n chats, default 2, as conversation_bench.py).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench.conversation_data import KINDS, UNANSWERABLE, conversations  # noqa: E402
from bench.dense_chats import dense_conversations  # noqa: E402
from components.context_window.base import Message, Session  # noqa: E402
from components.context_window.recall.messages import HistoryIndex, SessionRecall  # noqa: E402
from components.context_window.relevance import terms, z_scores  # noqa: E402
from tda.config import offline_library_defaults  # noqa: E402

offline_library_defaults()

CONVERSATIONS = int(os.environ.get("BENCH_CONVERSATIONS", "2"))
DENSE = int(os.environ.get("BENCH_DENSE", "2"))
EMBEDDER = os.environ.get("TDA_EMBEDDER", "minilm-int8")
REWORDINGS: dict[str, Callable[[str], str]] = {
    "'... on Saturday?'": lambda q: q.rstrip("?") + " on Saturday?",
    "'Back in November, ...'": lambda q: "Back in November, " + q[0].lower() + q[1:],
    "'Sorry, quick one: Remind me, ...'": lambda q: "Sorry, quick one: Remind me, " + q[0].lower() + q[1:],
}


@dataclass(frozen=True)
class Asked:
    kind: str
    text: str
    abstained: bool
    best_z: float
    coverage: float
    unseen: float
    """Share of the question's idf weight in words no earlier message holds."""


def measure(index: HistoryIndex, recall: SessionRecall, kind: str, question: str, vector: np.ndarray) -> Asked:
    """What recall decides for ``question`` over the whole chat, and the signals it decides by."""
    n = len(index)
    query = index.focus(question)
    dense = index.dense_scores(vector, n)
    assert dense is not None
    reason = index.rank(query, vector, n, evidence=recall.evidence)[3]
    weight = {t: index.lexical.idf(t) for t in set(terms(query))}
    return Asked(
        kind,
        question,
        abstained=reason is not None and reason.startswith("nothing relevant found"),
        best_z=float(z_scores(dense).max(initial=0.0)),
        coverage=float(index.lexical.coverage(list(weight), n).max(initial=0.0)),
        unseen=sum(w for t, w in weight.items() if t not in index.lexical) / (sum(weight.values()) or 1.0),
    )


async def run() -> tuple[list[Asked], dict[str, tuple[int, int]]]:
    from tda.knowledge.embeddings import Embedder

    embedder = Embedder(EMBEDDER)
    recall = SessionRecall(embedder)
    asked: list[Asked] = []
    reworded: dict[str, tuple[int, int]] = defaultdict(lambda: (0, 0))
    for number, chat in enumerate([*conversations(CONVERSATIONS), *dense_conversations(DENSE)]):
        messages = [Message(m["role"], m["content"]) for m in chat.messages]
        index = await recall.sync(Session(f"c{number}", messages=messages), dense=True)
        for question in chat.questions:
            (vector,) = await embedder.embed([index.focus(question.text)])
            vector_array = np.asarray(vector, dtype=np.float32)
            asked.append(measure(index, recall, question.kind, question.text, vector_array))
            if question.kind in UNANSWERABLE:
                continue
            for name, reword in REWORDINGS.items():
                text = index.focus(reword(question.text))
                wrong = bool(index.unknown_names(text, len(index)))
                done, total = reworded[name]
                reworded[name] = (done + wrong, total + 1)
    return asked, dict(reworded)


def frontier(asked: list[Asked]) -> tuple[tuple[float, float, float], dict[str, int]] | None:
    """The grid rule that keeps every answerable question and abstains on the most questions recall does not."""
    answerable = [a for a in asked if a.kind not in UNANSWERABLE]
    missed = [a for a in asked if a.kind in UNANSWERABLE and not a.abstained]
    best: tuple[int, tuple[float, float, float]] | None = None
    for z, cov, unseen in itertools.product(
        np.arange(1.0, 8.01, 0.25), np.arange(0.0, 1.01, 0.05), (0, 0.25, 0.5, 0.75)
    ):

        def fires(a: Asked, z: float = z, cov: float = cov, unseen: float = unseen) -> bool:
            return a.best_z < z and a.coverage < cov and a.unseen >= unseen

        if any(fires(a) for a in answerable):
            continue
        caught = sum(fires(a) for a in missed)
        if best is None or caught > best[0]:
            best = (caught, (float(z), float(cov), float(unseen)))
    if best is None:
        return None
    z, cov, unseen = best[1]
    counts = {
        k: sum(a.best_z < z and a.coverage < cov and a.unseen >= unseen for a in missed if a.kind == k)
        for k in UNANSWERABLE
    }
    return best[1], counts


def report(asked: list[Asked], reworded: dict[str, tuple[int, int]], seconds: float) -> None:
    print(f"Abstention bench: {CONVERSATIONS} chats, {len(asked)} questions; embedder {EMBEDDER}; {seconds:.0f} s\n")
    print("| kind | asked | recall abstains | best z (min-max) | coverage (min-max) | unseen share (min-max) |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind in KINDS:
        of = [a for a in asked if a.kind == kind]
        if not of:
            continue
        z, cov, un = ([getattr(a, f) for a in of] for f in ("best_z", "coverage", "unseen"))
        print(
            f"| {kind} | {len(of)} | {sum(a.abstained for a in of)} | {min(z):.2f}-{max(z):.2f} | "
            f"{min(cov):.2f}-{max(cov):.2f} | {min(un):.2f}-{max(un):.2f} |"
        )
    best = frontier(asked)
    missed = {k: sum(1 for a in asked if a.kind == k and not a.abstained) for k in UNANSWERABLE}
    if best is None or not any(best[1].values()):
        print(
            "\nFrontier (grid over z, coverage, unseen share): no rule abstains on one more question nothing answers "
            "without abstaining on an answerable one."
        )
    else:
        (z, cov, unseen), counts = best
        gains = ", ".join(f"{k} {counts[k]} of {missed[k]}" for k in UNANSWERABLE)
        print(
            f"\nFrontier (grid over z, coverage, unseen share; no answerable question lost): the best rule, abstain "
            f"when z < {z:.2f} and coverage < {cov:.2f} and unseen share >= {unseen:.2f}, catches beyond recall "
            f"now: {gains}."
        )
    print("\nAnswerable questions reworded, abstained on by the names rule (should be 0):\n")
    for name, (wrong, total) in reworded.items():
        print(f"- {name}: {wrong} of {total}")


def main() -> None:
    start = time.perf_counter()
    asked, reworded = asyncio.run(run())
    report(asked, reworded, time.perf_counter() - start)


if __name__ == "__main__":
    main()
