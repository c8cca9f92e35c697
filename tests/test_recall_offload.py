"""Recall over a long history runs its big steps through the runner the application hands in (a worker thread in the
service: the event loop stays free for other requests), with the same results as in place; a caller cancelled
mid-step never leaves the index half built."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable
from typing import TypeVar

import pytest

from components.context_window import offload
from components.context_window.base import Message, Session
from components.context_window.recall.messages import SessionRecall
from tests.support import make_ctx, module_ctx
from tests.test_history_recall import FACT, RECALL, CountingEmbedder, long_history, planted, window_parts

T = TypeVar("T")


@pytest.fixture
def history(builtin_registry):
    return builtin_registry.modules["conversation_history"]


class ThreadRunner:
    """``asyncio.to_thread`` (the service's runner), noting the thread each step ran in."""

    def __init__(self) -> None:
        self.threads: list[int] = []

    async def __call__(self, work: Callable[[], T]) -> T:
        def noted() -> T:
            self.threads.append(threading.get_ident())
            return work()

        return await asyncio.to_thread(noted)


class GatedRunner(ThreadRunner):
    """Each step waits in its thread until ``release`` is set (``entered`` says one is waiting)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    async def __call__(self, work: Callable[[], T]) -> T:
        def gated() -> T:
            self.entered.set()
            self.release.wait(10)
            return work()

        return await super().__call__(gated)


async def test_a_long_history_is_indexed_and_ranked_in_the_runners_thread_with_the_same_results():
    messages = long_history()
    runner = ThreadRunner()
    answers = []
    for recall in (SessionRecall(CountingEmbedder()), SessionRecall(CountingEmbedder(), runner=runner)):
        session = Session("a", messages=messages)
        await recall.sync(session, dense=True)
        ranking = await recall.recall(session, "What kind of dog is Biscuit?", before=1_990, enough_tokens=2_000)
        lead = await recall.lead(session, "What kind of dog is Biscuit?", split=1_990)
        answers.append((ranking, lead))
    assert answers[0] == answers[1]
    assert answers[1][0].units[0].messages[0].content == FACT and answers[1][0].method == "lexical+dense"
    assert runner.threads and threading.get_ident() not in runner.threads  # off the event loop's thread


async def test_a_short_history_stays_in_place():
    runner = ThreadRunner()
    recall = SessionRecall(runner=runner)
    ranking = await recall.recall(Session("a", messages=planted(20)), "greyhound", before=30, enough_tokens=100)
    assert ranking.units[0].messages[0].content == FACT
    assert runner.threads == []  # a hop to a thread would cost more than the work


async def test_a_cancelled_indexing_step_finishes_and_leaves_the_index_whole():
    messages = long_history()
    runner = GatedRunner()
    recall = SessionRecall(runner=runner)
    session = Session("a", messages=messages)
    index = recall.index_of(session)
    adding = asyncio.create_task(recall.add(index, messages))
    while not runner.entered.is_set():
        await asyncio.sleep(0.01)
    adding.cancel()
    with pytest.raises(asyncio.CancelledError):
        await adding
    assert index.guard.locked()  # the step goes on in its thread, holding the index: no other step sees it half built
    runner.release.set()
    async with index.guard:  # the next step waits for it
        assert len(index) == len(index.unit_of) == len(index.lexical) == len(messages)
    ranking = await recall.recall(session, "greyhound", before=1_990, enough_tokens=100)
    fresh = await SessionRecall().recall(Session("a", messages=messages), "greyhound", before=1_990, enough_tokens=100)
    assert ranking == fresh


async def test_the_history_module_packs_a_long_recall_in_the_contexts_runner_with_the_same_window(
    history, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(offload, "LARGE", 3)  # a few units ranked count as many here
    messages = [Message(m.role, f"{m.content} greyhound", turn=m.turn) for m in planted(300)]
    windows = []
    runner = ThreadRunner()
    for offloaded in (None, runner):
        ctx = make_ctx(messages=messages, query="What kind of dog did Margot adopt?")
        ctx = module_ctx(dataclasses.replace(ctx, offload=offloaded), config=RECALL)
        history._recalls.discard("")  # each its own index (the module keeps one per embedder)
        c = await history.contribute(3_000, ctx)
        windows.append((c.messages(), c.metadata))
    assert windows[0] == windows[1]
    assert window_parts(windows[1][0])[1] and runner.threads
