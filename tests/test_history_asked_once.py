"""One assembly asks the history module up to three times (at its allocation, with the surplus, in the fill), each time
for recall's lead and ranking of the same query: the query is asked of recall once per assembly
(``HistoryRecall.ask``), and every window is the one a fresh assembly gets at that budget."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.context_window.base import AssemblyContext, Contribution, Message, Session
from components.context_window.recall.messages import SessionRecall
from tests.support import ConceptEmbedder, generated_chat, make_ctx, module_ctx

FACT = "My sister Margot adopted a three-legged greyhound called Biscuit last spring."
RECALL = {"recall_pct": 60, "cache_block": 0}
QUESTIONS = (
    "What kind of dog did Margot adopt?",
    "What did we say about the kettle and the garden in the rain?",
    "Which ferry did the bicycle go on, and was there lemon bread?",
    "What should we do next?",
)


def planted(messages: int, at: int) -> list[Message]:
    """A chat of short lines over a few words (many rank for a question in them), the fact at ``at``."""
    chat = generated_chat(messages)
    chat[at] = Message("user", FACT, turn=chat[at].turn)
    return chat


@pytest.fixture
def history(builtin_registry):
    return builtin_registry.modules["conversation_history"]


class CountedRecall(SessionRecall):
    """Recall counting how often it brings a session's index up to date for a call (``_synced``)."""

    def __init__(self) -> None:
        super().__init__(ConceptEmbedder())
        self.synced = 0

    async def _synced(self, session: Session) -> Any:
        self.synced += 1
        return await super()._synced(session)


def assembly(messages: list[Message], query: str, recall: SessionRecall) -> AssemblyContext:
    """A module's context for one assembly: its asks share one memo, as the orchestrator's do."""
    ctx = make_ctx(messages=messages, query=query)
    return module_ctx(dataclasses.replace(ctx, history_recall=recall), config=RECALL)


def window(c: Contribution) -> tuple[Any, ...]:
    return tuple(m.content for m in c.messages()), c.strategy, c.tokens, c.left_out, c.metadata


async def test_an_assembly_asks_recall_once_for_its_three_windows(history):
    """The allocation's, the surplus's and the fill's windows of one old call recall from one ask of the query: on
    main each lead and each ranking synced the index and read the query again (five times here)."""
    recall = CountedRecall()
    messages = planted(240, 8)
    await recall.sync(Session("s", messages=messages), dense=True)
    ctx = assembly(messages, QUESTIONS[0], recall)
    recall.synced = 0
    windows = [await history.contribute(budget, ctx) for budget in (600, 1_500, 2_400)]
    assert recall.synced == 1
    assert [c.metadata.get("recall") for c in windows[1:]] == ["lexical+dense"] * 2  # each one recalled
    assert FACT in [m.content for m in windows[2].messages()]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    budgets=st.lists(st.integers(300, 4_000), min_size=2, max_size=3),
    question=st.sampled_from(QUESTIONS),
    at=st.integers(0, 239),
)
async def test_each_ask_of_an_assembly_gets_what_a_fresh_assembly_gets(history, budgets, question, at):
    """Invariant: a window asked after others in the same assembly (the question asked of recall once, the walk and
    the pricing reused) is the window a fresh module with a fresh recall gets at that budget (nothing kept between)."""
    messages = planted(240, at)
    ctx = assembly(messages, question, await synced(messages))
    shared = [window(await history.contribute(budget, ctx)) for budget in budgets]
    fresh = []
    for budget in budgets:
        module = type(history)(history.manifest)
        fresh.append(window(await module.contribute(budget, assembly(messages, question, await synced(messages)))))
    assert shared == fresh


async def synced(messages: list[Message]) -> SessionRecall:
    """A recall of its own whose index of ``messages`` has every vector."""
    recall = SessionRecall(ConceptEmbedder())
    await recall.sync(Session("s", messages=messages), dense=True)
    return recall
