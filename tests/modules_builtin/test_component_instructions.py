from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Profile

TEXTS = {
    "charting": {
        "full": "Render charts with the chart component. " * 30 + "Always label both axes.",
        "medium": "Use the chart component; label axes; pick bar for categories and line for time.",
        "light": "Charts: label axes.",
    },
    "tables": {"full": "Show tabular data with the table component. " * 20, "light": "Tables: keep them short."},
    "unused": {"full": "Never shown: not enabled on the profile."},
}


@pytest.fixture
def instructions(builtin):
    return builtin("component_instructions")


def ctx_with(ctx_for, components=("charting", "tables"), texts=TEXTS, **kw):
    return ctx_for(
        profile=Profile(id="p", components=tuple(components)), extras={"component_instructions": texts}, **kw
    )


async def test_enabled_components_at_full_intensity_in_the_system_prefix(instructions, ctx_for):
    out = await instructions.contribute(5_000, ctx_with(ctx_for, components=("tables", "charting", "maps")))
    assert out.placement == "system" and out.strategy == "full"
    assert [t.split("\n")[0] for t in out.texts()] == ["### tables", "### charting"]  # profile order
    assert "Never shown" not in out.text()
    assert out.metadata["missing"] == ["maps"]


async def test_condense_steps_intensity_down_last_component_first(instructions, ctx_with_texts, tokens_used):
    ctx = ctx_with_texts
    full = await instructions.contribute(5_000, ctx)
    seen = []
    for target in (tokens_used(full) - 1, 200, 30, 20, 5):
        out = await instructions.condense(full, target, ctx)
        assert tokens_used(out) <= target
        seen.append((out.strategy, out.metadata["intensities"]))
    assert seen == [
        ("reduced_intensity", {"charting": "full", "tables": "light"}),  # tables has no medium: next lighter
        ("reduced_intensity", {"charting": "medium", "tables": "light"}),
        ("reduced_intensity", {"charting": "light", "tables": "light"}),
        ("dropped_components", {"charting": "light"}),
        ("empty", {}),
    ]


@pytest.fixture
def ctx_with_texts(ctx_for):
    return ctx_with(ctx_for)


async def test_starting_intensity_is_an_option_and_is_checked(instructions, ctx_for):
    out = await instructions.contribute(5_000, ctx_with(ctx_for, config={"intensity": "light"}))
    assert out.text().endswith("### tables\nTables: keep them short.") and out.strategy == "full"
    with pytest.raises(ValueError, match="'intensity' must be one of full, medium, light"):
        await instructions.contribute(5_000, ctx_with(ctx_for, config={"intensity": "loud"}))
    with pytest.raises(ValueError, match="component 'tables' need at least one"):
        await instructions.contribute(5_000, ctx_with(ctx_for, texts={"tables": {"full": 3}}))


async def test_nothing_enabled_says_why_and_status_reports_the_last_run(instructions, ctx_for):
    out = await instructions.contribute(5_000, ctx_for(extras={"component_instructions": TEXTS}))
    assert out.is_empty and out.metadata["reason"] == "no enabled component has instructions"
    assert instructions.get_status()["last"]["strategy"] == "empty"
    assert await instructions.purge("s1", "u") == {"purged": 0}


text = st.text(max_size=600)


@settings(max_examples=60, deadline=None)
@given(
    specs=st.dictionaries(
        st.sampled_from(["a", "b", "c"]),
        st.fixed_dictionaries({}, optional={"full": text, "medium": text, "light": text}).filter(
            lambda d: any(v.strip() for v in d.values())
        ),
    ),
    budget=st.integers(-1, 400),
)
def test_contribute_never_exceeds_any_budget(builtin, ctx_for, tokens_used, run, specs, budget):
    instructions = builtin("component_instructions")
    out = run(instructions.contribute(budget, ctx_with(ctx_for, components=("a", "b", "c"), texts=specs)))
    assert tokens_used(out) <= max(budget, 0)
