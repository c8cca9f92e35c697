"""Steps whose work grows with a request's size, run off the event loop through a runner the application hands in.

The event loop serves every request of the process: ranking or indexing a 100,000-message history is a second of CPU,
which must not run there, or every other request (``/healthz`` too) waits for it. The component does not decide how
work leaves the loop: the application passes a ``Runner`` (``asyncio.to_thread`` in the service), and a library call
without one works in place. A short step stays in place anyway: a hop to a thread costs more than the work."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

LARGE = 1_000
"""Items (messages, ranked positions, units) past which a step goes to the runner: ~1 ms of work and more."""


class Runner(Protocol):
    """Runs ``work()`` elsewhere than the event loop (a worker thread) and hands back its result."""

    def __call__(self, work: Callable[[], T], /) -> Awaitable[T]: ...


async def run_sized(runner: Runner | None, size: int, work: Callable[[], T]) -> T:
    """``work()`` through ``runner`` when ``size`` is past ``LARGE``, else here. For work on data nothing else
    changes meanwhile (a step over shared state goes through ``guarded``)."""
    if runner is None or size <= LARGE:
        return work()
    return await runner(work)


async def guarded(lock: asyncio.Lock, runner: Runner | None, size: int, work: Callable[[], T]) -> T:
    """``work()`` (which reads or changes state ``lock`` guards) holding ``lock``: through ``runner`` when ``size`` is
    past ``LARGE``, else here. A step in a worker thread is not stopped by a cancelled caller: it runs to its end with
    ``lock`` held (shielded), so no other step sees the state half changed, and the next finds it whole."""
    if runner is None or size <= LARGE:
        async with lock:
            return work()
    step: asyncio.Future[T] = asyncio.ensure_future(_locked(lock, runner, work))
    step.add_done_callback(retrieved)  # a caller that went away is not told: its error is not logged as lost
    return await asyncio.shield(step)


async def _locked(lock: asyncio.Lock, runner: Runner, work: Callable[[], T]) -> T:
    async with lock:
        return await runner(work)


def retrieved(step: asyncio.Future[Any]) -> None:
    """Reads a finished step's outcome, so that a failure nobody awaited is not logged as never retrieved."""
    if not step.cancelled():
        step.exception()
