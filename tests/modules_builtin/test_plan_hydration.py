from __future__ import annotations

import itertools
import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Session, TurnRecord
from components.context_window.tool_results.shapes import Table, parse_result
from modules.plan_hydration.distillation import L2_SAMPLE_ROWS, column_kind, column_statistics, fmt, sample_plan


@pytest.fixture
def plan(builtin):
    return builtin("plan_hydration")


def session_with(*results, phase=None, **turn_fields) -> Session:
    turn = TurnRecord(turn=3, query="Sales by region?", results=tuple(results), **turn_fields)
    return Session(
        id="s1",
        turns=[TurnRecord(turn=1, query="older", results=({"tool": "old", "text": "stale"},)), turn],
        phase=phase,
    )


def orders(n: int, *, seed: int = 7) -> dict:
    rng = random.Random(seed)
    rows = [
        [i + 1, rng.choice(["EMEA", "APAC", "AMER"]), round(rng.uniform(1, 100), 2), f"2024-03-{1 + i % 28:02d}"]
        for i in range(n)
    ]
    return {"tool": "run_sql", "columns": ["id", "region", "amount", "order_date"], "rows": rows}


async def test_small_results_are_included_verbatim(plan, ctx_for):
    table = {"tool": "run_sql", "columns": ["region", "total"], "rows": [["EMEA", 10], ["APAC", 7]]}
    out = await plan.contribute(
        2_000, ctx_for(session=session_with(table, {"tool": "search", "text": "Found 2 regions."}))
    )
    assert out.placement == "context" and out.strategy == "distilled"
    assert out.metadata["levels"] == ["full", "full"] and out.metadata["turn"] == 3
    assert "region | total\nEMEA | 10\nAPAC | 7" in out.text()
    assert "Found 2 regions." in out.text() and "stale" not in out.text()
    assert out.header.startswith("## Results of the previous turn (turn 3: Sales by region?)")


async def test_statistics_cover_every_row_not_just_the_sample(plan, ctx_for):
    result = orders(1_000)
    result["rows"][500][2] = 9_999.5  # an outlier far from every sampled row
    out = await plan.contribute(50_000, ctx_for(session=session_with(result)))
    text = out.text()
    assert out.metadata["levels"] == ["analytical"]
    amounts = [r[2] for r in result["rows"]]
    assert "[501]" not in text  # the outlier's row is not in the sample...
    assert "max 9,999.50" in text  # ...but the statistics saw it
    assert f"mean {fmt(statistics.fmean(amounts))}," in text
    assert f"sum {sum(amounts):,.2f}" in text
    assert "- id (numeric, 1,000 values): min 1, max 1,000, mean 500.5, median 500.5, p25 250.75, p75 750.25" in text
    assert "- order_date (temporal, 1,000 values): range 2024-03-01 → 2024-03-28, 28 distinct" in text
    assert "Sample (50 of 1,000 rows: first 10, 30 evenly spaced, last 10; [row number]):" in text
    assert "[1] 1 |" in text and "[1000] 1000 |" in text


def test_numeric_statistics_match_the_statistics_module():
    rng = random.Random(3)
    values = [rng.gauss(50, 12) for _ in range(2_001)]
    line = column_statistics(Table("t", ("x",), [(v,) for v in values]))[0]
    p25, median, p75 = statistics.quantiles(values, n=4, method="inclusive")
    for name, expected in [("median", median), ("p25", p25), ("p75", p75), ("stddev", statistics.stdev(values))]:
        assert f"{name} {fmt(expected)}," in line


def test_categorical_columns_get_distinct_count_and_top_ten_with_share():
    rows = [(f"c{i}",) for i in range(12) for _ in range(12 - i)]  # c0 x12, c1 x11, ... c11 x1 = 78 rows
    line = column_statistics(Table("t", ("customer",), rows))[0]
    assert line.startswith("- customer (categorical, 78 values): 12 distinct; top: c0 15.4%, c1 14.1%")
    assert "c9 3.8%" in line and "c10" not in line  # top ten only


def test_column_typing_rules():
    assert column_kind("x", [*range(41), *["n/a"] * 9]) == "numeric"  # 82% of the first 50 parse
    assert column_kind("x", [*range(40), *["n/a"] * 10]) == "categorical"  # exactly 80% is not over 80%
    assert column_kind("x", ["n/a"] * 50 + list(range(1000))) == "categorical"  # only the first 50 are probed
    assert column_kind("created_at", ["last Tuesday", "yesterday"]) == "temporal"  # by name
    assert column_kind("x", ["2024-01-05", "2024-02-01T10:00:00"]) == "temporal"  # by parse
    assert column_kind("flag", [True, False] * 10) == "categorical"  # booleans are not numbers


def test_stratified_sample_takes_first_k_even_interior_and_last_k():
    indices, edge = sample_plan(1_000, 50)
    assert edge == 10 and indices[:10] == list(range(10)) and indices[-10:] == list(range(990, 1000))
    gaps = {b - a for a, b in itertools.pairwise(indices[10:40])}
    assert gaps <= {32, 33}  # evenly spaced through the interior


@given(n=st.integers(0, 5_000), size=st.integers(0, 80))
def test_sample_is_sorted_distinct_in_range_and_of_the_asked_size(n, size):
    indices, _ = sample_plan(n, size)
    assert indices == sorted(set(indices))
    assert all(0 <= i < n for i in indices)
    assert len(indices) == min(n, size)


async def test_over_thresholds_but_not_analytical_becomes_metadata_only(plan, ctx_for):
    wide = {
        "tool": "fetch",
        "columns": ["id", "body"],
        "rows": [[i, "x" * 400] for i in range(40)],
    }  # 16K chars, 40 rows
    text = {"tool": "read_file", "text": "line\n" * 3_000}  # 15K chars
    out = await plan.contribute(5_000, ctx_for(session=session_with(wide, text)))
    assert out.metadata["levels"] == ["metadata", "metadata"]
    assert (
        "### Result 1: fetch (40 rows × 2 columns; too large to include: metadata only)\nColumns: id, body"
        in out.text()
    )
    assert (
        "### Result 2: read_file (text, 15,000 characters, 3,001 lines; too large to include: metadata only)"
        in out.text()
    )
    assert "xxxx" not in out.text()


async def test_few_very_wide_rows_get_analytical_distillation(plan, ctx_for):
    wide = {"tool": "fetch", "columns": ["id", "body"], "rows": [[i, "word " * 200] for i in range(60)]}  # 60K chars
    out = await plan.contribute(20_000, ctx_for(session=session_with(wide)))
    assert out.metadata["levels"] == ["analytical"]


async def test_l2_cuts_samples_but_keeps_statistics_when_the_total_is_huge(plan, ctx_for):
    results = [
        {"tool": f"q{i}", "columns": ["id", "note"], "rows": [[j, "n" * 300] for j in range(200)]} for i in range(16)
    ]
    out = await plan.contribute(10**7, ctx_for(session=session_with(*results)))
    assert out.metadata["l2"] is True and out.strategy == "L2"
    assert out.text().count(f"Sample ({L2_SAMPLE_ROWS} of 200 rows") == 16
    assert out.text().count("- id (numeric, 200 values): min 0, max 199") == 16


async def test_thresholds_come_from_the_window_type(plan, ctx_for):
    small = orders(30)
    assert (await plan.contribute(9_000, ctx_for(session=session_with(small)))).metadata["levels"] == ["full"]
    tight = ctx_for(session=session_with(small), config={"distillation": {"max_rows": 10, "max_chars": 10_000}})
    assert (await plan.contribute(9_000, tight)).metadata["levels"] == ["metadata"]
    with pytest.raises(ValueError, match="max_rows"):
        await plan.contribute(9_000, ctx_for(session=session_with(small), config={"distillation": {"max_rows": 0}}))


async def test_uses_the_newest_valid_turn_the_phase_may_see(plan, ctx_for):
    turns = [
        TurnRecord(1, "q1", results=({"tool": "a", "text": "from focus"},), phase="focus"),
        TurnRecord(2, "q2", results=({"tool": "b", "text": "from operate"},), phase="operate"),
        TurnRecord(3, "q3", results=({"tool": "c", "text": "invalidated"},), phase="operate", valid=False),
    ]
    out = await plan.contribute(1_000, ctx_for(session=Session(id="s", turns=turns, phase="operate")))
    assert "from operate" in out.text() and "invalidated" not in out.text()
    back = await plan.contribute(1_000, ctx_for(session=Session(id="s", turns=turns, phase="focus")))
    assert "from focus" in back.text() and "from operate" not in back.text()
    none = await plan.contribute(1_000, ctx_for(session=Session(id="s", turns=turns, phase="ideate")))
    assert none.is_empty and none.metadata["reason"] == "no results from a previous turn"


def test_accepted_shapes_and_clear_errors():
    records = parse_result({"tool": "api", "rows": [{"a": 1, "b": 2}, {"b": 3, "c": 4}]}, 1)
    assert records == Table("api", ("a", "b", "c"), [(1, 2, None), (None, 3, 4)])
    other = parse_result({"tool": "api", "status": "ok", "count": 2}, 2)
    assert other.text == '{"status": "ok", "count": 2}'
    with pytest.raises(ValueError, match=r"result 3 \(run_sql\): row 2 must be a list of 2 values"):
        parse_result({"tool": "run_sql", "columns": ["a", "b"], "rows": [[1, 2], [1]]}, 3)


async def test_condense_steps_down_then_says_why_it_cannot(plan, ctx_for, tokens_used):
    ctx = ctx_for(session=session_with(orders(5_000), orders(40, seed=2)))
    full = await plan.contribute(100_000, ctx)
    seen = [full.strategy]
    for target in (1_500, 1_000, 300, 90):
        smaller = await plan.condense(full, target, ctx)
        assert tokens_used(smaller) <= target
        seen.append(smaller.strategy)
    assert seen == ["distilled", "sample_10", "statistics_only", "metadata_only", "fewer_results"]
    nothing = await plan.condense(full, 30, ctx)
    assert nothing.is_empty and "cannot hold" in nothing.metadata["reason"]


async def test_distillation_is_cached_per_session_and_purged(plan, ctx_for):
    big = orders(2_000)
    for sid in ("a", "a", "b"):
        await plan.contribute(5_000, ctx_for(session=Session(id=sid, turns=[TurnRecord(1, "q", results=(big,))])))
    cache = plan.get_status()["distillation_cache"]
    assert (cache["sessions"], cache["hits"], cache["misses"]) == (2, 1, 2)
    assert (await plan.purge("a", "u"))["purged"] == 1
    assert plan.get_status()["distillation_cache"]["sessions"] == 1


scalars = st.one_of(
    st.none(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True),
    st.text(max_size=30),
    st.booleans(),
    st.sampled_from(["2024-01-01", "2024-13-01", "2023-05-06T10:00:00+02:00"]),
)


@st.composite
def tables(draw):
    width = draw(st.integers(1, 4))
    rows = draw(st.lists(st.lists(scalars, min_size=width, max_size=width), max_size=150))
    return {"tool": "t", "columns": [f"c{i}" for i in range(width)], "rows": rows}


@settings(max_examples=40, deadline=None)
@given(
    results=st.lists(
        st.one_of(tables(), st.builds(lambda t: {"tool": "x", "text": t}, st.text(max_size=3_000))),
        min_size=1,
        max_size=3,
    ),
    budget=st.integers(0, 3_000),
    max_rows=st.integers(1, 200),
)
def test_contribute_never_exceeds_any_budget(builtin, ctx_for, tokens_used, run, results, budget, max_rows):
    plan = builtin("plan_hydration")
    ctx = ctx_for(session=session_with(*results), config={"distillation": {"max_rows": max_rows, "max_chars": 2_000}})
    assert tokens_used(run(plan.contribute(budget, ctx))) <= budget
