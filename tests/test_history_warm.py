"""conversation_history counts a long history met cold in a worker thread (``TokenEstimator.warm``): the window is
the one counted on the spot, message by message."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import AssemblyContext, Directives, Message, Profile, Session
from components.context_window.module_registry import load_folder
from components.context_window.token_estimator import TokenEstimator

FOLDER = Path(__file__).resolve().parents[1] / "modules" / "conversation_history"
WORDS = "revenue quarter region forecast margin churn cohort the a of to and in for with".split()


class OnTheSpot(TokenEstimator):
    """Counts every text where it is asked, as before ``warm`` existed."""

    async def warm(self, texts: object) -> None:
        return None


def history(lengths: list[int]) -> tuple[Message, ...]:
    return tuple(
        Message(
            "user" if i % 2 == 0 else "assistant",
            f"message {i}: " + " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(n)),
            turn=i // 2 + 1,
        )
        for i, n in enumerate(lengths)
    )


async def window(tokens: TokenEstimator, messages: tuple[Message, ...], budget: int, config: dict) -> tuple:
    definition = load_folder(FOLDER, "builtin")
    module = definition.cls(definition.manifest)
    ctx = AssemblyContext(
        query="How did the margin in the north region change?",
        profile=Profile(id="p", type="general"),
        session=Session(id="s", messages=messages),
    ).for_module(Directives(config=config), tokens)
    c = await module.contribute(budget, ctx)
    counts = [tokens.count_message(m) for m in messages]  # what the walk priced them at
    return c.units, c.metadata, c.held_back, counts


@settings(max_examples=20, deadline=None)
@given(
    lengths=st.lists(st.integers(min_value=1, max_value=900), min_size=1, max_size=300),
    budget=st.integers(min_value=200, max_value=60_000),
    recall=st.sampled_from([0, None]),
)
async def test_the_window_is_the_same_whether_counted_in_a_thread_or_on_the_spot(
    lengths: list[int], budget: int, recall: int | None
) -> None:
    messages = history(lengths)
    config = {"recall_pct": recall} if recall is not None else {}
    warmed = await window(TokenEstimator("o200k_base"), messages, budget, config)
    assert warmed == await window(OnTheSpot("o200k_base"), messages, budget, config)
