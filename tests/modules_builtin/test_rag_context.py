from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import ChampionCase, Session, TurnRecord

CASES = [
    ChampionCase(
        "c1",
        "Revenue by region last quarter?",
        0.93,
        plan="1. query sales by region\n2. chart it",
        answer="EMEA led with 4.1M.",
        tokens=1800,
        feedback=1,
    ),
    ChampionCase("c2", "Top customers by revenue?", 0.81, plan="1. rank customers", answer="ACME first.", tokens=900),
    ChampionCase(
        "c3", "Churn by month?", 0.75, plan="1. monthly churn query", answer="Churn fell in March.", tokens=1200
    ),
    ChampionCase("bad", "Revenue per region?", 0.95, plan="wrong join", answer="Wrong.", tokens=500, feedback=-1),
    ChampionCase("weak", "Unrelated question", 0.40, plan="x", answer="y"),
]


@dataclass
class Cases:
    cases: list[ChampionCase]
    calls: list[str] = field(default_factory=list)

    async def retrieve_cases(self, query: str, *, k: int = 3) -> list[ChampionCase]:
        self.calls.append(query)
        return sorted(self.cases, key=lambda c: -c.score)[:k]


@pytest.fixture
def rag(builtin):
    return builtin("rag_context")


async def test_keeps_good_cases_best_first_under_an_adapt_not_copy_header(rag, ctx_for, tokens_used):
    ctx = ctx_for(cases=Cases(CASES))
    out = await rag.contribute(10_000, ctx)
    text = out.text()
    assert out.placement == "context" and out.strategy == "full"
    assert "do not copy" in out.header
    assert [t.splitlines()[0] for t in out.texts()] == [
        "### Case 1 (similarity 0.93, cost 1,800 tokens, rated helpful)",
        "### Case 2 (similarity 0.81, cost 900 tokens)",
        "### Case 3 (similarity 0.75, cost 1,200 tokens)",
    ]
    assert "wrong join" not in text and "Unrelated" not in text  # negative feedback, low score
    assert out.metadata["cases_used"] == 3 and out.metadata["top_score"] == 0.93
    assert tokens_used(out) <= 10_000


async def test_signals_report_top_eligible_score_and_share_one_retrieval(rag, ctx_for):
    cases = Cases(CASES)
    ctx = ctx_for(cases=cases)
    assert await rag.signals(ctx) == {"top_score": 0.93, "eligible_cases": 3}  # 0.95 was rated negatively
    await rag.contribute(5_000, ctx)
    await rag.condense(await rag.contribute(5_000, ctx), 100, ctx)
    assert len(cases.calls) == 1


async def test_min_score_and_k_are_configurable(rag, ctx_for):
    ctx = ctx_for(cases=Cases(CASES), config={"min_score": 0.8, "k": 1})
    out = await rag.contribute(10_000, ctx)
    assert out.metadata["cases_used"] == 1 and "Revenue by region" in out.text()
    with pytest.raises(ValueError, match="'k' must be at least 1"):
        await rag.contribute(100, ctx_for(cases=Cases(CASES), config={"k": 0}))


async def test_condense_drops_weakest_cases_then_shortens_the_best(rag, ctx_for, tokens_used):
    long_case = ChampionCase(
        "L", "How do I reconcile invoices?", 0.9, plan=" ".join(f"Step {i} does a thing." for i in range(300))
    )
    ctx = ctx_for(cases=Cases([long_case, *CASES[1:3]]))
    full = await rag.contribute(20_000, ctx)
    assert full.metadata["cases_used"] == 3
    fewer = await rag.condense(full, tokens_used(full) - 20, ctx)
    assert fewer.strategy == "fewer_cases" and fewer.metadata["cases_used"] == 2
    short = await rag.condense(full, 200, ctx)
    assert short.strategy == "shortened" and tokens_used(short) <= 200
    assert short.texts()[0].startswith("### Case 1") and short.texts()[0].endswith(".")  # a sentence end
    empty = await rag.condense(full, 20, ctx)
    assert empty.is_empty and "cannot hold" in empty.metadata["reason"]


async def test_without_retriever_it_contributes_nothing_and_says_why(rag, ctx_for):
    out = await rag.contribute(1_000, ctx_for())
    assert out.is_empty and out.metadata["reason"] == "no case retriever"
    assert await rag.signals(ctx_for()) == {"top_score": 0.0, "eligible_cases": 0}


async def test_each_assembly_sees_the_current_cases_and_ratings(rag, ctx_for):
    """Same session, turn and query: a case rated negatively since the last assembly is no longer served."""
    rated = [dataclasses.replace(c, feedback=-1) if c.score == 0.93 else c for c in CASES]
    first = await rag.contribute(10_000, ctx_for(cases=Cases(CASES)))
    later = await rag.contribute(10_000, ctx_for(cases=Cases(rated)))
    assert "0.93" in first.text() and "0.93" not in later.text()
    assert not rag.manifest.capabilities.purgeable  # nothing is kept between assemblies


texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=400)
case_lists = st.lists(
    st.builds(
        ChampionCase,
        id=st.uuids().map(str),
        query=texts,
        score=st.floats(0, 1),
        plan=texts,
        answer=texts,
        tokens=st.integers(0, 10**6),
        feedback=st.sampled_from([-1, 0, 1]),
    ),
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(cases=case_lists, budget=st.integers(-5, 1_500))
def test_contribute_never_exceeds_any_budget(builtin, ctx_for, tokens_used, run, cases, budget):
    rag = builtin("rag_context")
    out = run(rag.contribute(budget, ctx_for(cases=Cases(cases))))
    assert tokens_used(out) <= max(budget, 0)


async def test_one_retrieval_per_turn_and_a_fresh_one_next_turn(rag, ctx_for):
    """Cases recorded or rated since the last turn count, even when the query is repeated."""
    cases = Cases(CASES)
    first = ctx_for(cases=cases, session=Session(id="a"))
    await rag.signals(first)
    await rag.contribute(1_000, first)
    assert cases.calls.count("What changed?") == 1  # signals and contribute share the turn's retrieval
    later = ctx_for(cases=cases, session=Session(id="a", turns=[TurnRecord(turn=1, query="What changed?")]))
    await rag.contribute(1_000, later)
    assert cases.calls.count("What changed?") == 2
