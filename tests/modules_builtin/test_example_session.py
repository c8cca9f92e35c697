"""examples/session_all_modules.json exercises every module this folder tests, as `tda assemble` reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.context_window.base import Directives
from components.context_window.token_estimator import estimator_for
from tda.session_file import load_session_file

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "session_all_modules.json"


@pytest.fixture(scope="module")
def example():
    return load_session_file(EXAMPLE).for_module(Directives(), estimator_for("gpt-4o"))


@pytest.mark.parametrize(
    ("module_id", "expected_strategy"),
    [
        ("rag_context", "full"),
        ("plan_hydration", "distilled"),
        ("document_context", "truncated"),
        ("component_instructions", "full"),
        ("workflow_history", "full"),
    ],
)
async def test_every_module_has_something_to_contribute(builtin, example, module_id, expected_strategy):
    out = await builtin(module_id).contribute(100_000, example)
    assert not out.is_empty and out.strategy == expected_strategy


async def test_the_example_shows_each_mechanism(builtin, example):
    assert example.session.phase == "operate" and example.tools and example.knowledge is not None
    assert any(m.tool_calls for m in example.session.messages) and any(
        m.role == "tool" for m in example.session.messages
    )
    plan = await builtin("plan_hydration").contribute(100_000, example)
    assert plan.metadata["levels"] == ["full", "full", "analytical"]  # a 1,500-row result is distilled
    rag = await builtin("rag_context").contribute(100_000, example)
    assert rag.metadata["cases_available"] == 2  # one rated negatively, one below the score threshold
    history = await builtin("workflow_history").contribute(100_000, example)
    assert "Brainstorm" not in history.text()  # the ideate turn is hidden in the operate phase
    documents = await builtin("document_context").contribute(100_000, example)
    # the handbook is over the per-file limit: the parts matching the question are sent, marked as an excerpt
    assert documents.metadata["excerpted"] + documents.metadata["truncated"] == 1
