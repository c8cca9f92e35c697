"""History recall's abstention: on which questions does recall say "nothing relevant found", and could any rule over
its signals say it on more of the questions nothing answers without saying it on an answerable one?

Data: bench/conversation_data.py (long chats between people; four answerable question kinds and three that nothing
answers: a topic never raised, a person never named, a detail never given), or a held-out set (below; fresh4, fresh5
and fresh6 add a fourth kind nothing answers, ``wrong_speaker``: asked of the person who never said it, the other one
did). A kind is answerable unless its set lists it as one nothing answers (``NOTHING``). Each chat is indexed as the
service does (``SessionRecall`` with the embedder of TDA_EMBEDDER, default minilm-int8, every vector in) and each
question ranked against the whole chat. Reported:

1. per kind, how many questions recall abstains on (the reason starts "nothing relevant found"), and each answerable
   question it abstains on (the cost);
2. the signals the abstention reads, per kind (ranges): the best message's z-score over the chat's cosines, the best
   message's share of the question's idf weight (coverage), and the share of that weight in words no message holds;
3. the frontier: over a grid of rules "abstain when z < a and coverage < b and unseen share >= c", the rule that keeps
   every answerable question and catches the most of each kind nothing answers beyond what recall catches now: how much
   an abstention rule over these signals could still gain;
4. answerable questions reworded with a day, a month or a clause opener ("Sorry, quick one: Remind me, ..."): how
   many, and which, make recall abstain (a capitalised word taken for a name nothing mentions, outside a hypothetical
   as recall reads names; should be 0);
5. held out (round 4): each candidate signal below added to the grid as a third condition, its thresholds chosen on
   the even-numbered chats of each set (no answerable question there abstains) and reported on the odd-numbered ones,
   so a rule that only fits the chats it was chosen on shows as such:
   * ``gap``: the best message's cosine minus the chat's mean cosine (the score gap to the typical message);
   * ``agreement``: how many of the 10 best messages by words are among the 10 best by meaning;
   * ``speaker``: for a question naming a speaker, the share of the 5 best messages by meaning that speaker said;
   * ``concept_near``: the question's words no message holds (its key concepts), each embedded alone, compared with
     every word of the 10 best messages by words and by meaning: the least near one's best cosine;
   * ``concept_drop``: how far the best 3 messages' z-scores fall when those words (else the rarest) are left out of
     the question: a hit that matched the question's frame ("What did Dana ... last month?"), not its concept, falls
     little.
6. the answer's type (round 5, shipped: ``answer_types.py``): per half (even- and odd-numbered chats), per kind, the
   questions asking for a type of answer (an amount, an age, a colour) and those recall abstains on because none of
   the messages it ranks holds one (its reason says "... gives an amount").

Run: `python bench/abstention_bench.py` (BENCH_CONVERSATIONS=n classic chats, BENCH_DENSE=n dense ones, default 2
each, as conversation_bench.py; BENCH_VARIED=n of bench/varied_chats.py's, default 0; rounds 4 and 5 ran 4 / 4 / 8;
BENCH_DATA=fresh, fresh2, fresh3, fresh4, fresh5, fresh6, fresh7, fresh8 or assistant: bench/fresh_chats.py's six
held-out chats, fresh2_chats.py's five, fresh3_chats.py's, fresh4_chats.py's, fresh5_chats.py's, fresh6_chats.py's or
fresh7_chats.py's or fresh8_chats.py's three or
assistant_chats.py's four instead, BENCH_FRESH_SEED=n).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import os
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench.assistant_chats import KINDS as ASSISTANT_KINDS  # noqa: E402
from bench.assistant_chats import assistant_conversations  # noqa: E402
from bench.conversation_data import KINDS, UNANSWERABLE, Conversation, conversations  # noqa: E402
from bench.dense_chats import dense_conversations  # noqa: E402
from bench.fresh2_chats import KINDS as FRESH2_KINDS  # noqa: E402
from bench.fresh2_chats import fresh2_conversations  # noqa: E402
from bench.fresh3_chats import KINDS as FRESH3_KINDS  # noqa: E402
from bench.fresh3_chats import fresh3_conversations  # noqa: E402
from bench.fresh4_chats import KINDS as FRESH4_KINDS  # noqa: E402
from bench.fresh4_chats import NOTHING as FRESH4_NOTHING  # noqa: E402
from bench.fresh4_chats import fresh4_conversations  # noqa: E402
from bench.fresh5_chats import KINDS as FRESH5_KINDS  # noqa: E402
from bench.fresh5_chats import fresh5_conversations  # noqa: E402
from bench.fresh6_chats import KINDS as FRESH6_KINDS  # noqa: E402
from bench.fresh6_chats import NOTHING as FRESH6_NOTHING  # noqa: E402
from bench.fresh6_chats import fresh6_conversations  # noqa: E402
from bench.fresh7_chats import KINDS as FRESH7_KINDS  # noqa: E402
from bench.fresh7_chats import fresh7_conversations  # noqa: E402
from bench.fresh8_chats import KINDS as FRESH8_KINDS  # noqa: E402
from bench.fresh8_chats import fresh8_conversations  # noqa: E402
from bench.fresh_chats import KINDS as FRESH_KINDS  # noqa: E402
from bench.fresh_chats import fresh_conversations  # noqa: E402
from bench.varied_chats import varied_conversations  # noqa: E402
from components.context_window.answer_types import asked_type  # noqa: E402
from components.context_window.asked_thing import thing_asked  # noqa: E402
from components.context_window.base import Message, Session  # noqa: E402
from components.context_window.recall.messages import HistoryIndex, SessionRecall, asks_hypothetically  # noqa: E402
from components.context_window.relevance import terms, unit_rows, z_scores  # noqa: E402
from tda.config import offline_library_defaults  # noqa: E402

offline_library_defaults()

CONVERSATIONS = int(os.environ.get("BENCH_CONVERSATIONS", "2"))
DENSE = int(os.environ.get("BENCH_DENSE", "2"))
VARIED = int(os.environ.get("BENCH_VARIED", "0"))
DATA = os.environ.get("BENCH_DATA", "default")
EVERY_KIND = tuple(
    dict.fromkeys(
        (
            *KINDS,
            *FRESH_KINDS,
            *FRESH2_KINDS,
            *FRESH3_KINDS,
            *FRESH4_KINDS,
            *FRESH5_KINDS,
            *FRESH6_KINDS,
            *FRESH7_KINDS,
            *FRESH8_KINDS,
            *ASSISTANT_KINDS,
        )
    )
)
"""Every set's question kinds, in order, once each (the held-out sets add latest, inference, ...)."""
NOTHING = tuple(dict.fromkeys((*UNANSWERABLE, *FRESH4_NOTHING, *FRESH6_NOTHING)))
"""The kinds nothing in a chat answers, every set's own list (fresh4, fresh5 and fresh6 add ``wrong_speaker``: asked of
the one who never said it); every other kind is answerable, fresh2's and fresh3's ``swapped`` too."""
FRESH_SEED = int(os.environ.get("BENCH_FRESH_SEED", "0"))
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
    chat: int = 0
    """The chat's number within its set: even ones choose a held-out rule's thresholds, odd ones test it."""
    signals: dict[str, float] = field(default_factory=dict)
    """The round 4 candidates (see the module's docstring), lower meaning "abstain" (inf: the signal says nothing)."""
    typed: bool = False
    """The question asks for a type of answer (``answer_types.asked_type``)."""
    no_type: bool = False
    """Recall abstains because none of the messages it ranks holds that type (round 5)."""


def measure(index: HistoryIndex, recall: SessionRecall, kind: str, question: str, vector: np.ndarray) -> Asked:
    """What recall decides for ``question`` over the whole chat (with the thing it asks about, as recall passes it:
    ``asked_thing``, session 47), and the signals it decides by."""
    n = len(index)
    query = index.focus(question)
    dense = index.dense_scores(vector, n)
    assert dense is not None
    about, thing = index.asked_about(question), thing_asked(question)
    reason = index.rank(query, vector, n, evidence=recall.evidence, about=about, thing=thing)[3]
    weight = {t: index.lexical.idf(t) for t in set(terms(query))}
    kind_asked = asked_type(query)
    return Asked(
        kind,
        question,
        typed=kind_asked is not None,
        no_type=kind_asked is not None and reason is not None and reason.endswith(f" gives {kind_asked}"),
        abstained=reason is not None and reason.startswith("nothing relevant found"),
        best_z=float(z_scores(dense).max(initial=0.0)),
        coverage=float(index.lexical.coverage(list(weight), n).max(initial=0.0)),
        unseen=sum(w for t, w in weight.items() if t not in index.lexical) / (sum(weight.values()) or 1.0),
    )


class Words:
    """Single words embedded once each (a concept alone: a few word pieces)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.held: dict[str, np.ndarray] = {}

    async def vectors(self, words: list[str]) -> np.ndarray:
        new = [w for w in dict.fromkeys(words) if w not in self.held]
        if new:
            self.held.update(zip(new, unit_rows(await self.embedder.embed(new)), strict=True))
        return np.stack([self.held[w] for w in words]) if words else np.zeros((0, 1), np.float32)


def _content_words(text: str) -> dict[str, str]:
    """Each content word's term -> the word, lower-cased, first spelling kept."""
    found: dict[str, str] = {}
    for word in re.findall(r"[A-Za-z][A-Za-z'’-]*", text):
        term = terms(word)
        if term:
            found.setdefault(term[0], re.sub(r"['’]s$", "", word.lower()))
    return found


async def candidates(index: HistoryIndex, words: Words, question: str, dense: np.ndarray) -> dict[str, float]:
    """The round 4 candidate signals for ``question`` (see the module's docstring)."""
    n = len(index)
    query = index.focus(question)
    lexical = index.lexical_scores(query)[:n]
    by_meaning, by_words = np.argsort(-dense), np.argsort(-lexical)
    words_ranked = by_words[: min(10, int(np.count_nonzero(lexical)))]
    signals = {
        "gap": float(dense.max() - dense[dense > -1].mean()),
        "agreement": float(len(set(by_meaning[:10].tolist()) & set(words_ranked.tolist()))),
        "speaker": np.inf,
        "concept_near": np.inf,
        "concept_drop": np.inf,
    }
    about = index.asked_about(question)
    if about:
        said = np.asarray(index.said_by)[by_meaning[:5]]
        signals["speaker"] = float(np.isin(said, list(about)).mean())
    asked = _content_words(query)
    concepts = [w for t, w in asked.items() if t not in index.lexical]
    if concepts:
        hit_words = list(
            dict.fromkeys(
                w
                for p in {*by_meaning[:10].tolist(), *words_ranked.tolist()}
                for w in _content_words(index.messages[p].content).values()
            )
        )
        near = (await words.vectors(concepts)) @ (await words.vectors(hit_words)).T
        signals["concept_near"] = float(near.max(axis=1, initial=-1.0).min())
    elif asked:
        rarest = max(index.lexical.idf(t) for t in asked)
        concepts = [w for t, w in asked.items() if index.lexical.idf(t) >= rarest]
    rest = re.sub(r"(?i)\b(?:" + "|".join(map(re.escape, concepts)) + r")(?:['’]s)?\b", " ", query) if concepts else ""
    if terms(rest):
        without = index.dense_scores((await words.vectors([rest]))[0], n)
        assert without is not None
        best = by_meaning[:3]
        signals["concept_drop"] = float((z_scores(dense)[best] - z_scores(without)[best]).max())
    return signals


HELD_OUT: dict[str, Callable[[int], list[Conversation]]] = {
    "fresh": lambda seed: fresh_conversations(6, seed),
    "fresh2": lambda seed: fresh2_conversations(5, seed),
    "fresh3": lambda seed: fresh3_conversations(3, seed),
    "fresh4": lambda seed: fresh4_conversations(3, seed),
    "fresh5": lambda seed: fresh5_conversations(3, seed),
    "fresh6": lambda seed: fresh6_conversations(3, seed),
    "fresh7": lambda seed: fresh7_conversations(3, seed),
    "fresh8": lambda seed: fresh8_conversations(3, seed),
    "assistant": lambda seed: assistant_conversations(4, seed),
}
"""Each ``BENCH_DATA`` set written apart from the tuning: its chats from a seed, every one the set has."""


def chats() -> list[tuple[int, Conversation]]:
    """Every chat asked about, with its number within its set."""
    if DATA in HELD_OUT:
        return list(enumerate(HELD_OUT[DATA](FRESH_SEED)))
    sets = (conversations(CONVERSATIONS), dense_conversations(DENSE), varied_conversations(VARIED) if VARIED else [])
    return [(number, chat) for chat_set in sets for number, chat in enumerate(chat_set)]


async def run() -> tuple[list[Asked], dict[str, list[str]]]:
    from tda.knowledge.embeddings import Embedder

    embedder = Embedder(EMBEDDER)
    recall = SessionRecall(embedder)
    words = Words(embedder)
    asked: list[Asked] = []
    reworded: dict[str, list[str]] = defaultdict(list)
    """Per rewording, the answerable questions whose rewording recall abstains on (a name nothing mentions)."""
    for session, (number, chat) in enumerate(chats()):
        messages = [Message(m["role"], m["content"], name=m.get("name")) for m in chat.messages]
        index = await recall.sync(Session(f"c{session}", messages=messages), dense=True)
        for question in chat.questions:
            (vector,) = await embedder.embed([index.focus(question.text)])
            vector_array = np.asarray(vector, dtype=np.float32)
            measured = measure(index, recall, question.kind, question.text, vector_array)
            dense = index.dense_scores(vector_array, len(index))
            assert dense is not None
            signals = await candidates(index, words, question.text, dense)
            asked.append(dataclasses.replace(measured, chat=number, signals=signals))
            if question.kind in NOTHING:
                continue
            for name, reword in REWORDINGS.items():
                text = index.focus(reword(question.text))
                # recall reads no names in a hypothetical ("Would X enjoy a trip to Iceland?": ``_abstention``)
                if not asks_hypothetically(text) and index.unknown_names(text, len(index)):
                    reworded[name].append(reword(question.text))
    return asked, {name: reworded[name] for name in REWORDINGS}


def frontier(asked: list[Asked]) -> tuple[tuple[float, float, float], dict[str, int]] | None:
    """The grid rule that keeps every answerable question and abstains on the most questions recall does not."""
    answerable = [a for a in asked if a.kind not in NOTHING]
    missed = [a for a in asked if a.kind in NOTHING and not a.abstained]
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
        k: sum(a.best_z < z and a.coverage < cov and a.unseen >= unseen for a in missed if a.kind == k) for k in NOTHING
    }
    return best[1], counts


SIGNALS = ("gap", "agreement", "speaker", "concept_near", "concept_drop")


@dataclass(frozen=True)
class HeldOut:
    signal: str
    rule: tuple[float, float, float]
    """Abstain when the best z < rule[0], the best coverage < rule[1] and the signal < rule[2]."""
    chosen_on: dict[str, int]
    """Per unanswerable kind, the questions recall misses now that the rule catches on the even chats."""
    tested_on: dict[str, int]
    """The same on the odd chats, and "answerable": the answerable questions it abstains on there."""


def held_out(asked: list[Asked], signal: str) -> HeldOut:
    """The grid rule over (z, coverage, ``signal``) that catches the most on the even chats without abstaining on an
    answerable one there, and what it does on the odd chats."""
    live = [a for a in asked if not a.abstained]
    z, cov, sig = (
        np.array([getattr(a, f) if f else a.signals[signal] for a in live]) for f in ("best_z", "coverage", "")
    )
    answerable = np.array([a.kind not in NOTHING for a in live])
    even = np.array([a.chat % 2 == 0 for a in live])
    cuts = np.unique(np.quantile(sig[np.isfinite(sig)], np.linspace(0, 1, 41))) if np.isfinite(sig).any() else []
    best: tuple[int, tuple[float, float, float]] = (0, (0.0, 0.0, -np.inf))
    for a, b, c in itertools.product(np.arange(2.0, 8.01, 0.25), np.arange(0.10, 0.56, 0.05), cuts):
        fires = (z < a) & (cov < b) & (sig < c)
        if (fires & answerable & even).any():
            continue
        caught = int((fires & ~answerable & even).sum())
        if caught > best[0]:
            best = (caught, (float(a), float(b), float(c)))
    a, b, c = best[1]
    fires = (z < a) & (cov < b) & (sig < c)
    kinds = np.array([a.kind for a in live])

    def counts(half: np.ndarray) -> dict[str, int]:
        return {k: int((fires & half & (kinds == k)).sum()) for k in NOTHING}

    return HeldOut(
        signal, best[1], counts(even), {**counts(~even), "answerable": int((fires & answerable & ~even).sum())}
    )


def answer_type_report(asked: list[Asked]) -> None:
    """Round 5: per half and kind, the questions asking for a type of answer, and those recall abstains on because
    none of the messages it ranks holds one."""
    print("\nThe answer's type (round 5): asked for a type / abstained on because no ranked message holds one\n")
    print("| kind | even chats | odd chats |")
    print("|---|---:|---:|")
    for kind in EVERY_KIND:
        halves = [[a for a in asked if a.kind == kind and a.typed and a.chat % 2 == half] for half in (0, 1)]
        if any(halves):
            print(f"| {kind} | " + " | ".join(f"{sum(a.no_type for a in h)} of {len(h)}" for h in halves) + " |")


def report(asked: list[Asked], reworded: dict[str, list[str]], seconds: float) -> None:
    chats = (
        f"{DATA} chats, seed {FRESH_SEED}"
        if DATA in HELD_OUT
        else f"{CONVERSATIONS} classic, {DENSE} dense, {VARIED} varied chats"
    )
    print(f"Abstention bench: {chats}, {len(asked)} questions; embedder {EMBEDDER}; {seconds:.0f} s\n")
    print("| kind | asked | recall abstains | best z (min-max) | coverage (min-max) | unseen share (min-max) |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind in EVERY_KIND:
        of = [a for a in asked if a.kind == kind]
        if not of:
            continue
        z, cov, un = ([getattr(a, f) for a in of] for f in ("best_z", "coverage", "unseen"))
        print(
            f"| {kind} | {len(of)} | {sum(a.abstained for a in of)} | {min(z):.2f}-{max(z):.2f} | "
            f"{min(cov):.2f}-{max(cov):.2f} | {min(un):.2f}-{max(un):.2f} |"
        )
    lost = [a for a in asked if a.abstained and a.kind not in NOTHING]
    print(f"\nAnswerable questions recall abstains on: {len(lost)}\n")
    for a in lost:
        print(f"- {a.kind}, chat {a.chat}: {a.text}")
    answer_type_report(asked)
    best = frontier(asked)
    missed = {k: sum(1 for a in asked if a.kind == k and not a.abstained) for k in NOTHING}
    if best is None or not any(best[1].values()):
        print(
            "\nFrontier (grid over z, coverage, unseen share): no rule abstains on one more question nothing answers "
            "without abstaining on an answerable one."
        )
    else:
        (z, cov, unseen), counts = best
        gains = ", ".join(f"{k} {counts[k]} of {missed[k]}" for k in NOTHING if any(a.kind == k for a in asked))
        print(
            f"\nFrontier (grid over z, coverage, unseen share; no answerable question lost): the best rule, abstain "
            f"when z < {z:.2f} and coverage < {cov:.2f} and unseen share >= {unseen:.2f}, catches beyond recall "
            f"now: {gains}."
        )
    print(
        "\nHeld out (round 4): a third condition per candidate signal, thresholds chosen on the even chats, tested on "
        "the odd ones (unanswerable questions recall misses now, caught; answerable ones abstained on):\n"
    )
    none = [k for k in NOTHING if any(a.kind == k for a in asked)]
    kinds = " / ".join(none)
    print(f"| signal | rule: abstain when | chosen on: {kinds} | tested on: {kinds} | answerable lost |")
    print("|---|---|---:|---:|---:|")
    misses = {
        (k, half): sum(1 for a in asked if a.kind == k and not a.abstained and a.chat % 2 == half)
        for k in none
        for half in (0, 1)
    }
    for signal in SIGNALS:
        found = held_out(asked, signal)
        z, cov, cut = found.rule
        rule = f"z < {z:.2f}, coverage < {cov:.2f}, {signal} < {cut:.2f}" if np.isfinite(cut) else "none catches one"
        chosen, tested = (
            " / ".join(f"{caught[k]} of {misses[k, half]}" for k in none)
            for half, caught in enumerate((found.chosen_on, found.tested_on))
        )
        print(f"| {signal} | {rule} | {chosen} | {tested} | {found.tested_on['answerable']} |")
    print("\nAnswerable questions reworded, abstained on by the names rule (should be 0):\n")
    answerable = sum(a.kind not in NOTHING for a in asked)
    for name, wrong in reworded.items():
        print(f"- {name}: {len(wrong)} of {answerable}" + "".join(f"\n  - {text}" for text in wrong))


def main() -> None:
    start = time.perf_counter()
    asked, reworded = asyncio.run(run())
    report(asked, reworded, time.perf_counter() - start)


if __name__ == "__main__":
    main()
