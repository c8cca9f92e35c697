"""Old tool results come back when the question is about them (issue 21, item 3): plan_hydration recalls an earlier
turn's results and workflow_history its turn line, within their budgets, the previous turn first; an unrelated
question recalls nothing and the snapshot says why; a phase the session cannot see is never recalled. Figures are
checked against sums computed here, never against the distillation code."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Session, TurnRecord
from components.context_window.token_estimator import estimator_for

TOPICS = [
    ("List the open support tickets by priority", "support_tickets", ["ticket_id", "priority", "status", "opened_on"]),
    ("Show inventory levels by warehouse", "inventory", ["sku", "warehouse", "units", "counted_on"]),
    ("Which employees joined last quarter", "employees", ["employee_id", "department", "salary", "hired_on"]),
    ("Website sessions by traffic source", "web_sessions", ["session_id", "source", "pages", "visited_on"]),
    ("Shipping delays by carrier", "shipments", ["shipment_id", "carrier", "delay_hours", "shipped_on"]),
    ("Marketing campaign click-through rates", "campaigns", ["campaign", "channel", "ctr", "launched_on"]),
    ("Server CPU utilisation per cluster", "metrics", ["host", "cluster", "cpu_pct", "sampled_at"]),
    ("Supplier contract renewals due", "contracts", ["supplier", "category", "value_eur", "renews_on"]),
    ("Customer churn by plan tier", "subscriptions", ["account", "tier", "months_active", "cancelled_on"]),
    ("Energy consumption per building", "meters", ["meter", "building", "kwh", "read_on"]),
]
ORDERS_QUERY = "Total revenue of the 2024 orders by region"
QUESTION = "What was the revenue figure from the orders query we ran at the start?"
UNRELATED = "Draft a friendly reminder email about the team offsite next Thursday"


def table(tool: str, columns: list[str], rows: int, rng: random.Random) -> dict:
    body = [
        [
            f"{columns[0]}-{i}",
            rng.choice(["north", "south", "east", "west"]),
            round(rng.uniform(1, 500), 2),
            "2024-05-01",
        ]
        for i in range(rows)
    ]
    return {"tool": tool, "columns": columns, "rows": body}


def long_session(turns: int = 30, *, about: int = 2, phase_of_about: str | None = None, phase: str | None = None):
    """``turns`` turns with large results (tables of 300 rows, or long texts); turn ``about`` ran the orders query."""
    rng = random.Random(turns)
    records = []
    for n in range(1, turns + 1):
        query, tool, columns = TOPICS[n % len(TOPICS)]
        if n == about:
            query, tool, columns = ORDERS_QUERY, "run_sql", ["order_id", "region", "revenue", "ordered_on"]
        if n % 3 == 0 and n != about:
            words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "note"]) for _ in range(1_200))
            result = {"tool": "fetch_report", "text": f"{query}. {words}"}
        else:
            result = table(tool, columns, 300, rng)
        records.append(
            TurnRecord(
                turn=n,
                query=f"{query} (request {n})",
                plan=f"1. query {tool}\n2. summarise",
                results=(result,),
                phase=phase_of_about if n == about else phase,
            )
        )
    return Session(id=f"long-{turns}-{about}-{phase_of_about}", turns=records, phase=phase)


def revenue_sum(session: Session, turn: int) -> str:
    rows = session.turns[turn - 1].results[0]["rows"]
    return f"sum {sum(r[2] for r in rows):,.2f}"  # the statistics line's figure, formatted here


@pytest.fixture
def plan(builtin):
    return builtin("plan_hydration")


@pytest.fixture
def workflow(builtin):
    return builtin("workflow_history")


async def test_a_question_about_turn_2_brings_its_result_back_after_the_previous_turn(plan, ctx_for):
    session = long_session()
    out = await plan.contribute(4_000, ctx_for(QUESTION, session=session))
    text = out.text()
    assert text.startswith("## Results of the previous turn (turn 30:")  # the previous turn keeps its place
    heading = f"## Earlier result recalled (turn 2: {ORDERS_QUERY} (request 2))"
    assert heading in text and text.index(heading) > text.index("### Result 1")
    recalled = text[text.index(heading) :]
    assert revenue_sum(session, 2) in recalled  # the statistics over all 300 rows of turn 2's revenue column
    assert out.metadata["recall"]["recalled_turns"] == [2]
    assert "distinctive words" in out.metadata["recall"]["recalled_why"][2]
    assert out.metadata["turn"] == 30 and out.strategy.endswith("+recall")


async def test_on_main_the_result_of_turn_2_is_gone(plan, ctx_for):
    """What the test above guards: without recall only the previous turn is sent."""
    session = long_session()
    out = await plan.contribute(4_000, ctx_for(QUESTION, session=session, config={"recall_pct": 0}))
    assert "turn 2:" not in out.text() and revenue_sum(session, 2) not in out.text()
    assert out.metadata["recall"]["reason"] == "recall is off (recall_pct 0)"


async def test_an_unrelated_question_recalls_nothing_and_says_why(plan, workflow, ctx_for):
    session = long_session()
    out = await plan.contribute(4_000, ctx_for(UNRELATED, session=session))
    assert "Earlier result recalled" not in out.text()
    assert out.metadata["recall"]["reason"] == "nothing relevant: no earlier turn shares a word with the question"
    assert out.metadata["recall"]["searched"] == 29
    lines = await workflow.contribute(4_000, ctx_for(UNRELATED, session=session))
    assert "recalled" not in lines.text() and lines.metadata["recall"]["reason"].startswith("nothing relevant")


async def test_a_question_going_on_with_the_previous_turn_recalls_nothing(plan, ctx_for):
    session = long_session()
    last = TurnRecord(
        31,
        "Forecast the robot maintenance windows",
        results=(table("forecast", ["robot", "site", "hours", "due_on"], 50, random.Random(1)),),
    )
    session = Session(id="going-on", turns=[*session.turns, last])
    out = await plan.contribute(
        4_000, ctx_for("Which robot maintenance windows at each warehouse overlap in that forecast?", session=session)
    )
    assert out.metadata["turn"] == 31 and "Earlier result recalled" not in out.text()
    reason = out.metadata["recall"]["reason"]
    assert reason.startswith("nothing relevant: the closest by words") and "by BM25 (from x1.2)" in reason


async def test_workflow_history_lists_turn_2_beyond_max_turns_marked_as_recalled(workflow, ctx_for):
    session = long_session()
    out = await workflow.contribute(2_000, ctx_for(QUESTION, session=session))
    text = out.text()
    assert out.metadata["turns_included"] == 10 and "- Turn 21 " in text and "- Turn 20 " not in text
    line = f"- Turn 2 (recalled: an older turn matching the question; success): {ORDERS_QUERY} (request 2)"
    assert line in text and text.index(line) > text.index("- Turn 21 ")
    assert out.metadata["recall"]["recalled_turns"] == [2]
    assert estimator_for("gpt-4o").count_text_message(text) <= 2_000


@pytest.mark.parametrize("current", ["operate", "complete"])
async def test_a_result_of_a_phase_the_session_cannot_see_is_never_recalled(plan, workflow, ctx_for, current):
    session = long_session(phase_of_about="ideate", phase=current)
    for module in (plan, workflow):
        out = await module.contribute(6_000, ctx_for(QUESTION, session=session))
        assert "request 2)" not in out.text() and revenue_sum(session, 2) not in out.text()


async def test_an_invalid_turn_is_never_recalled(plan, ctx_for):
    session = long_session()
    turns = list(session.turns)
    turns[1] = TurnRecord(**{f: getattr(turns[1], f) for f in TurnRecord.__slots__} | {"valid": False})
    out = await plan.contribute(4_000, ctx_for(QUESTION, session=Session(id="invalid", turns=turns)))
    assert "request 2)" not in out.text()


async def test_small_results_are_left_out_below_recall_min_chars(plan, ctx_for):
    session = long_session()
    out = await plan.contribute(4_000, ctx_for(QUESTION, session=session, config={"recall_min_chars": 10**7}))
    assert "Earlier result recalled" not in out.text()
    assert out.metadata["recall"]["reason"] == "no earlier turns to recall from"


async def test_the_index_is_built_once_and_grows_with_the_session(plan, ctx_for):
    session = long_session(40)
    first = Session(id=session.id, turns=session.turns[:30])
    await plan.contribute(4_000, ctx_for(QUESTION, session=first))
    built = plan.get_status()["recall_index"]["texts"]
    assert built == 30
    out = await plan.contribute(4_000, ctx_for(QUESTION, session=session))
    assert plan.get_status()["recall_index"]["texts"] == 40  # only the ten new turns were read
    assert out.metadata["recall"]["recalled_turns"] == [2]
    changed = list(session.turns)
    changed[1] = TurnRecord(2, "Count of late deliveries", plan="", results=({"tool": "t", "text": "12 late"},))
    again = await plan.contribute(4_000, ctx_for(QUESTION, session=Session(id=session.id, turns=changed)))
    assert "request 2)" not in again.text()  # a changed turn is read afresh
    purged = await plan.purge(session.id, "u")
    assert purged["recall_index_entries"] > 0 and plan.get_status()["recall_index"]["sessions"] == 0


@settings(max_examples=60, deadline=None)
@given(budget=st.integers(0, 6_000), recall_pct=st.floats(0, 100), about=st.integers(1, 25))
def test_never_over_budget_and_the_previous_turn_first(builtin, ctx_for, run, budget, recall_pct, about):
    session = long_session(26, about=about)
    config = {"recall_pct": recall_pct}
    for module_id in ("plan_hydration", "workflow_history"):
        out = run(builtin(module_id).contribute(budget, ctx_for(QUESTION, session=session, config=config)))
        text = out.text()
        assert estimator_for("gpt-4o").count_text_message(text) <= budget if text else True
        if "Earlier result recalled" in text:  # the previous turn keeps priority: never a recall without it
            assert text.startswith("## Results of the previous turn (turn 26:")
        if "(recalled: " in text:
            assert "- Turn 26 (" in text.split("(recalled: ")[0]


class HashingEmbedder:
    """tda's own lexical embedder (hashed word unigrams and bigrams), as the context's ``Embedder``; counts texts."""

    def __init__(self) -> None:
        from tda.knowledge.embeddings import HashingEmbedding

        self.embed_fn = HashingEmbedding()
        self.embedded = 0

    async def embed(self, texts):
        self.embedded += len(texts)
        return [list(map(float, v)) for v in self.embed_fn(list(texts))]


async def test_with_an_embedder_each_turn_is_embedded_once_for_both_modules(builtin, ctx_for):
    from components.context_window.recall.turns import TurnRecall

    TurnRecall._shared_vectors.clear()
    plan, workflow, embedder = builtin("plan_hydration"), builtin("workflow_history"), HashingEmbedder()
    session = long_session()
    out = await plan.contribute(4_000, ctx_for(QUESTION, session=session, embedder=embedder))
    assert out.metadata["recall"]["method"] == "lexical+dense" and out.metadata["recall"]["recalled_turns"] == [2]
    first = embedder.embedded
    assert first == 30 + 1  # one text per turn (its query and first plan step), and the question
    lines = await workflow.contribute(2_000, ctx_for(QUESTION, session=session, embedder=embedder))
    assert lines.metadata["recall"]["recalled_turns"] == [2]
    assert embedder.embedded == first  # the gists and the question were embedded for plan_hydration already
    report = {"tool": "fetch_report", "text": "Quarterly audit findings for the robot fleet."}
    grown = Session(session.id, turns=[*session.turns, TurnRecord(31, "Audit the robot fleet", results=(report,))])
    await plan.contribute(4_000, ctx_for(QUESTION, session=grown, embedder=embedder))
    assert embedder.embedded == first + 1  # only the new turn; the question is known


async def test_a_long_session_met_first_is_embedded_a_batch_a_turn_and_matched_by_words_meanwhile(builtin, ctx_for):
    from components.context_window.recall.turns import EMBED_PER_CALL, TurnRecall

    TurnRecall._shared_vectors.clear()
    plan, embedder = builtin("plan_hydration"), HashingEmbedder()
    session = long_session(120)
    methods = []
    for _ in range(6):
        out = await plan.contribute(4_000, ctx_for(QUESTION, session=session, embedder=embedder))
        recall = out.metadata["recall"]
        methods.append((recall["method"], recall.get("pending_embeddings", 0) > 0))
        assert recall["recalled_turns"] == [2]  # by words while the vectors are being made
        if recall["method"] == "lexical+dense":
            break
    assert methods[0] == ("lexical", True) and methods[-1] == ("lexical+dense", False)
    calls = len(methods)
    assert embedder.embedded <= calls * EMBED_PER_CALL + 1  # never more than a batch a call (and the question)


async def test_through_the_orchestrator_the_window_holds_turn_2s_result_and_line(builtin_registry):
    from components.context_window.base import AssemblyContext, Profile
    from components.context_window.handler import ContextWindowHandler
    from tda.builtins import DEFAULT_TYPES

    session = long_session()
    handler = ContextWindowHandler(builtin_registry)
    for query, expected in ((QUESTION, True), (UNRELATED, False)):
        ctx = AssemblyContext(query, Profile("p", "tool_enabled"), session, model="gpt-4o", model_limit=32_000)
        window = await handler.assemble(ctx, DEFAULT_TYPES["balanced"])
        text = "\n".join(str(m.get("content")) for m in window.messages)
        assert (revenue_sum(session, 2) in text) is expected
        assert ("- Turn 2 (recalled" in text) is expected
        plan = window.snapshot.module("plan_hydration")
        assert plan.used <= plan.allocated
        assert ("reason" in plan.metadata["recall"]) is not expected  # why nothing was recalled, when nothing was


@pytest.mark.parametrize(
    ("module_id", "config", "says"),
    [
        ("plan_hydration", {"recall_pct": 150}, "plan_hydration option 'recall_pct'"),
        ("plan_hydration", {"recall_min_chars": -1}, "plan_hydration option 'recall_min_chars'"),
        ("workflow_history", {"recall_turns": 0}, "workflow_history option 'recall_turns'"),
    ],
)
def test_a_bad_recall_option_is_refused_naming_module_and_option(builtin_registry, module_id, config, says):
    from pydantic import ValidationError

    from components.context_window.window_type import ContextWindowType
    from tda.builtins import DEFAULT_TYPES

    data = DEFAULT_TYPES["balanced"].model_dump() | {"id": "mine", "is_default": False}
    data["modules"][module_id]["config"] = config
    with pytest.raises(ValidationError) as info:
        ContextWindowType.model_validate(data, context=builtin_registry.validation_context())
    (option,) = config
    messages = {".".join(map(str, e["loc"])): e["msg"] for e in info.value.errors()}
    assert says in messages[f"modules.{module_id}.config.{option}"]


async def test_the_same_turns_rank_the_same_whatever_the_index_saw_before(builtin, ctx_for):
    """A service hands the newest turns only: an index that saw more (turns that slid out, a changed turn) must give
    what a fresh one gives for the same turns."""
    session = long_session(60, about=30)
    newest = Session(session.id, turns=session.turns[20:])
    changed = list(session.turns)
    changed[25] = TurnRecord(26, "Revenue of the orders again, by region", results=({"tool": "t", "text": "x"},))
    # what the index saw: all 60 turns, then one changed, then the newest 50
    seasoned = builtin("plan_hydration")
    for turns in (session.turns, changed, session.turns[10:]):
        await seasoned.contribute(4_000, ctx_for(QUESTION, session=Session(session.id, turns=turns)))
    after = await seasoned.contribute(4_000, ctx_for(QUESTION, session=newest))
    fresh = await builtin("plan_hydration").contribute(4_000, ctx_for(QUESTION, session=newest))
    assert after.text() == fresh.text() and after.metadata == fresh.metadata
    assert fresh.metadata["recall"]["recalled_turns"] == [30]


class KeptTurns:
    """An application's ``EarlierTurns``: the older turns kept described, their records handed out only when asked by
    number (what is asked is kept, so a test can tell what a module read)."""

    def __init__(self, turns: list[TurnRecord]) -> None:
        self.turns = {t.turn: t for t in turns}
        self.described_calls: list[tuple[str, int]] = []
        self.read: list[list[int]] = []
        self._kept: dict[tuple[str, int], object] = {}

    async def described(self, kind, describe, *, before):
        self.described_calls.append((kind, before))
        out = []
        for n, t in sorted(self.turns.items()):
            if n < before and t.valid:
                if (kind, n) not in self._kept:
                    self._kept[(kind, n)] = describe(t)
                out.append((n, self._kept[(kind, n)]))
        return out

    async def records(self, turns):
        self.read.append(list(turns))
        return [self.turns[n] for n in sorted(turns) if n in self.turns]


async def test_with_an_application_index_the_older_turns_are_searched_and_only_the_recalled_one_read(
    plan, workflow, ctx_for
):
    """The service hands the newest turns only (here 10 of 30) and keeps the rest described: turn 2 still comes back,
    and of the older turns only turn 2's whole record is read."""
    whole = long_session()
    kept = KeptTurns(whole.turns)
    session = Session(id=whole.id, turns=whole.turns[-10:])
    out = await plan.contribute(4_000, ctx_for(QUESTION, session=session, earlier_turns=kept))
    assert out.metadata["recall"]["recalled_turns"] == [2]
    assert revenue_sum(whole, 2) in out.text()
    assert kept.read == [[2]]
    assert out.metadata["recall"]["searched"] == 29  # every earlier turn, not only the 9 handed ones
    lines = await workflow.contribute(2_000, ctx_for(QUESTION, session=session, earlier_turns=kept))
    assert f"- Turn 2 (recalled: an older turn matching the question; success): {ORDERS_QUERY}" in lines.text()
    assert ("workflow_history", 21) in kept.described_calls  # asked for the turns older than those it was handed
    kept.turns[2] = dataclasses.replace(kept.turns[2], valid=False)  # invalidated since: never recalled
    again = await plan.contribute(4_000, ctx_for(QUESTION, session=session, earlier_turns=kept))
    assert revenue_sum(whole, 2) not in again.text()


class ScaledEmbedder:
    """One class, two models: each names its model as ``vector_space``; vectors of one length per model."""

    def __init__(self, model: str, dims: int) -> None:
        self.vector_space, self.dims, self.embedded = model, dims, []

    async def embed(self, texts):
        self.embedded += list(texts)
        return [[float(len(t) % (i + 2)) for i in range(self.dims)] for t in texts]


async def test_embedders_of_one_class_with_different_models_never_share_vectors(builtin, ctx_for):
    """The vector cache is keyed by what vectors depend on (the embedder's model), not the embedder's class: each
    model embeds the turns itself, and its vectors are all of its own length (a mix would not compare)."""
    from components.context_window.recall.turns import TurnRecall

    TurnRecall._shared_vectors.clear()
    plan, session = builtin("plan_hydration"), long_session()
    small, large = ScaledEmbedder("model-a", 3), ScaledEmbedder("model-b", 7)
    for embedder in (small, large):
        await plan.contribute(4_000, ctx_for(QUESTION, session=session, embedder=embedder))
    assert small.embedded and sorted(large.embedded) == sorted(small.embedded)
    lengths = {(key[0], len(vector)) for key, vector in TurnRecall._shared_vectors.items()}
    assert lengths == {("model-a", 3), ("model-b", 7)}


def grown_session(draw_topics: list[int], rng: random.Random) -> list[TurnRecord]:
    """Turns on the given topics (an index in TOPICS, or -1: the orders query), each with a small table."""
    turns = []
    for n, topic in enumerate(draw_topics, 1):
        query, tool, columns = TOPICS[topic] if topic >= 0 else (ORDERS_QUERY, "run_sql", TOPICS[0][2])
        result = table(tool, columns, 4, rng)
        turns.append(
            TurnRecord(turn=n, query=f"{query} (request {n})", plan=f"1. query {tool}\n2. sum", results=(result,))
        )
    return turns


@settings(max_examples=8, deadline=None)
@given(
    topics=st.lists(st.integers(-1, len(TOPICS) - 1), min_size=12, max_size=40),
    invalid_at=st.integers(3, 40),
    seed=st.integers(0, 1_000),
)
def test_a_turn_on_a_growing_session_recalls_what_a_fresh_module_recalls(
    builtin, ctx_for, run, topics, invalid_at, seed
):
    """Turn by turn, the service's way (the newest 10 turns handed, the older ones described; each turn described
    first while its tool loop is open, then again with its results): modules that kept their index from the turns
    before, reading only the newest turn, recall the same turns with the same figures and text as modules meeting
    the session for the first time; also after an older turn is invalidated."""
    rng = random.Random(seed)
    kept = KeptTurns([])
    seasoned = {m: builtin(m) for m in ("plan_hydration", "workflow_history")}
    read: list[int] = []
    describe = seasoned["plan_hydration"]._searched._text_of
    seasoned["plan_hydration"]._searched._text_of = lambda d: read.append(1) or describe(d)

    async def both_alike(question: str) -> None:
        valid = [t for _, t in sorted(kept.turns.items()) if t.valid]
        session = Session(id="grown", turns=valid[-10:])
        for module_id, module in seasoned.items():
            budget = 4_000 if module_id == "plan_hydration" else 2_000
            mine = await module.contribute(budget, ctx_for(question, session=session, earlier_turns=kept))
            fresh = await builtin(module_id).contribute(budget, ctx_for(question, session=session, earlier_turns=kept))
            assert mine.text() == fresh.text()
            assert mine.metadata["recall"] == fresh.metadata["recall"]

    async def turn_by_turn() -> None:
        for turn in grown_session(topics, rng):
            if turn.turn == invalid_at:
                kept.turns[2] = dataclasses.replace(kept.turns[2], valid=False)
            for record in (dataclasses.replace(turn, results=(), outcome="tool_calls"), turn):  # open, then done
                kept.turns[turn.turn] = record
                kept._kept = {k: v for k, v in kept._kept.items() if k[1] != turn.turn}  # described anew
                read.clear()
                await both_alike(rng.choice([QUESTION, UNRELATED, f"{rng.choice(TOPICS)[0]} again?"]))
                if turn.turn != invalid_at:  # the list only grew, or its newest turn changed: only that one is read
                    assert len(read) <= 1

    run(turn_by_turn())


async def test_a_limited_search_gives_the_best_of_the_full_ranking_and_searches_as_many():
    """A caller taking a few turns asks for that many: the best of what the whole ranking gives, in its order, and the
    same count searched (a long session's hundreds of matches are not each made into a ``Match``)."""
    from components.context_window.recall.turns import TurnRecall, TurnText

    texts = [TurnText(n, f"turn {n}: stock of kettles in {city}", ()) for n, city in enumerate(["Oslo", "Graz"] * 40)]
    args = ("s", texts, "kettles in Oslo")
    kw = {"shown": [79], "candidates": np.arange(79)}
    whole = await TurnRecall().match(*args, **kw)
    best = await TurnRecall().match(*args, **kw, limit=3)
    assert len(whole.matches) > 3 and best.matches == whole.matches[:3]
    assert best.searched == whole.searched == 79


class MiniLMSized:
    """Vectors of MiniLM's size (384 float32), one per text, made from its digest; counts the texts."""

    def __init__(self) -> None:
        self.embedded = 0

    async def embed(self, texts):
        import hashlib

        self.embedded += len(texts)
        seeds = [int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little") for t in texts]
        return [np.random.default_rng(seed).normal(size=384).astype(np.float32) for seed in seeds]


async def test_turn_gists_an_index_took_are_kept_again_by_text_only_among_the_newest():
    """Gists embedded ahead (as the service does once a turn is recorded) wait by text for the index that takes them;
    then the index holds them, and a copy is kept only among the newest ``TAKEN_VECTORS_BYTES`` (for a turn's other
    module): a long session's gists were held twice, ~2 KB a turn until 16 MiB."""
    from components.context_window.recall.turns import TurnRecall, TurnText
    from components.context_window.relevance import TAKEN_VECTORS_BYTES

    TurnRecall._shared_vectors.clear()
    embedder = MiniLMSized()
    gists = [f"Turn {n}: which orders of customer CUST-{n:04d} are still open?" for n in range(3_000)]
    texts = [TurnText(n, gist, (gist,)) for n, gist in enumerate(gists)]
    await TurnRecall.embed_parts(gists, embedder)
    assert embedder.embedded == len(gists)
    matched = await TurnRecall().match(
        "s", texts, "open orders of CUST-0042", shown=[2_999], candidates=np.arange(2_999), embedder=embedder
    )
    assert matched.method == "lexical+dense" and matched.matches[0].position == 42
    held = TurnRecall._shared_vectors
    assert held.held_bytes <= TAKEN_VECTORS_BYTES and ("MiniLMSized", gists[-1]) in held
    assert ("MiniLMSized", gists[0]) not in held
    other = await TurnRecall().match(  # the turn's other module: the newest gists found by text, none embedded again
        "s", texts[-500:], "open orders of CUST-2900", shown=[499], candidates=np.arange(499), embedder=embedder
    )
    assert other.method == "lexical+dense" and embedder.embedded == len(gists) + 2  # the two questions
    TurnRecall._shared_vectors.clear()


def test_each_turn_text_scores_its_best_part_as_the_index_grows_a_few_texts_at_a_time() -> None:
    """Turn recall's best part cosine per text, the texts' part starts extended as texts come (not found again over
    every part each query): after each addition, equal to the best of each text's own parts computed from the vectors
    here (float16-held: within 2**-11), -1 for a text without parts."""
    from components.context_window.recall.turns import _Index
    from components.context_window.relevance import VectorIndex

    rng = np.random.default_rng(7)
    index, parts_of = _Index(), []
    for round_ in range(6):
        for _ in range(rng.integers(1, 5)):
            position, count = len(index.fields), int(rng.integers(0, 4))
            vectors = rng.standard_normal((count, 16)).astype(np.float32)
            if count:
                index.dense = index.dense or VectorIndex()
                index.dense.add(vectors)
                index.owner.extend([position] * count)
            parts_of.append(vectors / np.linalg.norm(vectors, axis=1, keepdims=True) if count else vectors)
            index.put((position, f"turn {position}", ()))
        query = rng.standard_normal(16).astype(np.float32)
        unit = query / np.linalg.norm(query)
        expected = [float((parts @ unit).max()) if len(parts) else -1.0 for parts in parts_of]
        np.testing.assert_allclose(index.best_cosines(query), expected, atol=2**-10, err_msg=f"round {round_}")
