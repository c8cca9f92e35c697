"""An experiment's totals (tda/experiments.py ``totals_of``) against a separately written count over generated
turns: each side's tokens and dollars are the sums of the turns it fits, a turn that would no longer fit is one
the baseline fits and the candidate does not (a replay error is not one), and the module figures cover the turns
both sides fit."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tda.experiments import totals_of

MODULES = ("system_prompt", "conversation_history", "rag_context")

module = st.fixed_dictionaries(
    {
        "status": st.sampled_from(["ok", "ok", "skipped", "failed"]),
        "used": st.integers(0, 5_000),
        "units": st.integers(0, 20),
        "left_out": st.booleans(),
        "condensed": st.booleans(),
    }
)
window = st.builds(
    lambda tokens, cost, stable, util, modules, kept: {
        "fits": True,
        "tokens": tokens,
        "utilisation": util,
        "stable_prefix": min(stable, tokens),
        "cost_usd": cost,
        "cached_cost_usd": None if cost is None else cost / 2,
        "modules": modules,
        "evidence_kept": kept,
    },
    st.integers(0, 100_000),
    st.none() | st.floats(0, 1, allow_nan=False),
    st.integers(0, 100_000),
    st.floats(0, 1, allow_nan=False),
    st.dictionaries(st.sampled_from(MODULES), module, min_size=1),
    st.none() | st.booleans(),
)
missing = st.builds(lambda error: {"fits": False, "reason": "r", "error": error}, st.booleans())
side = window | missing


@st.composite
def turn(draw: Any) -> dict[str, Any]:
    base, cand = draw(side), draw(side)
    both = base["fits"] and cand["fits"]
    return {
        "labels": draw(st.sampled_from([{}, {"expected_evidence": ["x"]}, {"rating": 1}])),
        "baseline": base,
        "candidate": cand,
        "delta": {"tokens": cand["tokens"] - base["tokens"]} if both else None,
        "rating_kept": draw(st.none() | st.booleans()),
    }


@settings(max_examples=300, deadline=None)
@given(st.lists(turn(), max_size=30))
def test_totals_are_the_sums_of_the_turns(turns: list[dict[str, Any]]) -> None:
    totals = totals_of(turns)
    for name in ("baseline", "candidate"):
        fit = [t[name] for t in turns if t[name]["fits"]]
        assert totals[name]["fits"] == len(fit)
        assert totals[name]["tokens"] == sum(w["tokens"] for w in fit)
        priced = [w["cost_usd"] for w in fit if w["cost_usd"] is not None]
        assert totals[name]["cost_usd"] == (sum(priced) if priced else None)
        assert totals[name]["evidence_kept"] == len([w for w in fit if w["evidence_kept"] is True])
    lost = [t for t in turns if t["baseline"]["fits"] and not t["candidate"]["fits"] and not t["candidate"]["error"]]
    assert totals["no_longer_fit"] == len(lost)
    errors = [t for t in turns if not t["baseline"]["fits"] and t["baseline"]["error"]]
    errors += [t for t in turns if t not in errors and not t["candidate"]["fits"] and t["candidate"]["error"]]
    assert totals["errors"] == len(errors)
    both = [t for t in turns if t["baseline"]["fits"] and t["candidate"]["fits"]]
    assert totals["compared"] == len(both) and totals["turns"] == len(turns)
    for module_id, figures in totals["modules"].items():
        for name in ("baseline", "candidate"):
            used = sum(t[name]["modules"][module_id]["used"] for t in both if module_id in t[name]["modules"])
            assert figures[f"{name}_used"] == used
    assert totals["rated_turns"] == len([t for t in turns if t["rating_kept"] is not None])
