"""Budget arithmetic: limits, redistribution, clamping and surplus (pure functions)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from components.context_window import budget as b

pcts = st.floats(0, 100, allow_nan=False)
shares = st.dictionaries(st.sampled_from("abcdefg"), pcts, min_size=1)


def test_overrides_only_lower_and_reserve_comes_off_the_effective_limit():
    limits = b.resolve_limits(128_000, "litellm", 32_000, 64_000, 12)
    assert (limits.effective_limit, limits.limit_source) == (32_000, "profile_override")
    assert (limits.output_reserve, limits.available) == (3_840, 28_160)
    assert b.resolve_limits(8_192, "litellm", 100_000, None, 0).effective_limit == 8_192


@given(shares, st.floats(0, 100))
def test_redistribution_keeps_proportions_and_adds_exactly_the_freed_share(targets, freed):
    out = b.redistribute(targets, freed)
    receivers = [m for m, t in targets.items() if t > 0]
    if receivers:
        assert abs(sum(out.values()) - sum(targets.values()) - freed) < 1e-6
        first = receivers[0]
        for m in receivers:
            assert abs(out[m] * targets[first] - out[first] * targets[m]) < 1e-6 * max(1.0, out[m] * targets[first])


@given(shares, st.sets(st.sampled_from("abcdefg")))
def test_cap_total_never_exceeds_100_and_spares_fixed_targets_when_it_can(targets, fixed):
    out = b.cap_total(targets, fixed)
    assert sum(out.values()) <= 100 + 1e-6
    if sum(t for m, t in targets.items() if m in fixed) <= 100:
        assert all(out[m] == targets[m] for m in fixed if m in targets)


@given(shares, st.integers(0, 1_000_000), st.data())
def test_allocation_respects_bounds_and_never_exceeds_the_budget(targets, budget, data):
    bounds = {}
    for m in targets:
        lo, hi = sorted([data.draw(pcts), data.draw(pcts)])
        bounds[m] = (lo, hi)
    tokens = b.allocate(targets, bounds, budget)
    assert sum(tokens.values()) <= budget
    for m, t in tokens.items():
        assert t <= bounds[m][1] * budget / 100 + 1


@given(st.data())
def test_surplus_moves_only_unused_tokens_and_respects_caps(data):
    ids = ["a", "b", "c", "d"]
    allocated = {m: data.draw(st.integers(0, 10_000)) for m in ids}
    used = {m: data.draw(st.integers(0, allocated[m])) for m in ids}
    maxes = {m: allocated[m] + data.draw(st.integers(0, 5_000)) for m in ids}
    plan = b.plan_surplus(allocated, used, ["a", "b", "c"], {m: data.draw(st.integers(0, 100)) for m in ids}, maxes)
    assert sum(plan.donations.values()) == sum(plan.grants.values())
    for m, given_away in plan.donations.items():
        assert given_away <= allocated[m] - used[m] and used[m] < 0.3 * allocated[m]
    for m, grant in plan.grants.items():
        assert m != "d" and used[m] > 0.8 * allocated[m] and allocated[m] + grant <= maxes[m]


def test_surplus_is_shared_by_priority():
    plan = b.plan_surplus(
        {"donor": 1000, "hi": 100, "lo": 100},
        {"donor": 0, "hi": 100, "lo": 100},
        ["hi", "lo"],
        {"donor": 50, "hi": 75, "lo": 25},
        {"donor": 1000, "hi": 10_000, "lo": 10_000},
    )
    assert plan.grants == {"hi": 750, "lo": 250} and plan.donations == {"donor": 1000}


@given(st.data())
def test_a_rules_cut_goes_to_the_others_first_and_only_what_they_leave_comes_back(data):
    ids = ["cut", "a", "b", "d"]
    allocated = {m: data.draw(st.integers(1, 10_000)) for m in ids}
    used = {m: data.draw(st.integers(0, allocated[m])) for m in ids}
    maxes = {m: allocated[m] + data.draw(st.integers(0, 5_000)) for m in ids}
    released = {"cut": data.draw(st.integers(0, 5_000))}
    priority = {m: data.draw(st.integers(0, 100)) for m in ids}
    plan = b.plan_surplus(allocated, used, ["cut", "a", "b"], priority, maxes, released=released)
    donated = sum(plan.donations.values())
    assert sum(plan.grants.values()) == donated + min(released["cut"], sum(plan.grants.values()))
    for m, grant in plan.grants.items():
        assert m != "d" and used[m] > 0.8 * allocated[m] and allocated[m] + grant <= maxes[m]
    others = sum(maxes[m] - allocated[m] for m in ("a", "b") if used[m] > 0.8 * allocated[m])
    if plan.grants.get("cut") and donated == 0:  # it took some back: the others had no room left for it
        assert plan.grants.get("a", 0) + plan.grants.get("b", 0) >= min(others, released["cut"])
