"""Work a response need not wait for (recording a champion case), done right after it; and long jobs a request
starts and people follow (experiments: ``Jobs``).

Jobs with the same key run one after another, in the order submitted; ``settle(key)`` waits for a key's
jobs (the next turn of a session waits for the previous turn's, so it sees what that turn recorded), and
``drain()`` waits for all of them: shutdown calls it before closing the stores, so nothing is lost.
A job that fails is logged; it never fails a request.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

Job = Callable[[], Awaitable[Any]]


class BackgroundWriter:
    def __init__(self, idle: Callable[[], None] | None = None) -> None:
        self._last: dict[str, asyncio.Task[None]] = {}
        """Per key, the newest job: each job waits for the one before it."""
        self._idle = idle
        """Called when the last job queued ends (the service gives freed memory back then: ``FreedMemory``)."""

    def submit(self, key: str, job: Job, what: str) -> None:
        previous = self._last.get(key)
        task = asyncio.create_task(self._run(previous, job, what))
        self._last[key] = task
        task.add_done_callback(functools.partial(self._done, key))

    def _done(self, key: str, task: asyncio.Task[None]) -> None:
        if self._last.get(key) is task:
            del self._last[key]
            if not self._last and self._idle is not None:
                self._idle()

    def busy(self, key: str) -> bool:
        """Whether jobs submitted for ``key`` are still to finish."""
        return key in self._last

    async def settle(self, key: str) -> None:
        """Wait until every job submitted for ``key`` so far has finished."""
        task = self._last.get(key)
        if task is not None:
            await asyncio.shield(task)

    async def drain(self) -> None:
        """Wait for every job, those submitted while waiting included (a turn finishing during shutdown)."""
        while self._last:
            await asyncio.gather(*self._last.values())

    @property
    def pending(self) -> int:
        return len(self._last)

    @staticmethod
    async def _run(previous: asyncio.Task[None] | None, job: Job, what: str) -> None:
        if previous is not None:
            await previous  # never raises: _run catches everything
        try:
            await job()
        except Exception as exc:  # the request it belongs to has been answered; keep the reason
            log.warning("background %s failed: %s", what, exc)


QUEUE = 256
"""Events held per subscriber; a subscriber that falls behind loses the oldest progress, never the end."""


@dataclass
class RunningJob:
    task: asyncio.Task[None] | None = None
    subscribers: list[asyncio.Queue[dict[str, Any]]] = field(default_factory=list)

    def publish(self, event: dict[str, Any]) -> None:
        for queue in self.subscribers:
            if queue.full():  # fallen behind: the oldest progress goes, the newest (and the end) arrive
                queue.get_nowait()
            queue.put_nowait(event)


class Jobs:
    """Long jobs this process runs (experiments), by id: their tasks, and a queue per subscriber to their events."""

    def __init__(self) -> None:
        self.jobs: dict[str, RunningJob] = {}

    def launch(self, experiment_id: str, run: Callable[[RunningJob], Coroutine[Any, Any, None]]) -> None:
        job = self.jobs[experiment_id] = RunningJob()
        job.task = asyncio.create_task(run(job))
        job.task.add_done_callback(lambda _: self.jobs.pop(experiment_id, None))

    def cancel(self, experiment_id: str) -> None:
        job = self.jobs.get(experiment_id)
        if job is not None and job.task is not None:
            job.task.cancel()

    @contextlib.asynccontextmanager
    async def subscribe(self, experiment_id: str) -> AsyncIterator[asyncio.Queue[dict[str, Any]] | None]:
        """A queue of the job's events while this process runs it; None when it does not (ended, or run by another
        replica: read what it stored)."""
        job = self.jobs.get(experiment_id)
        if job is None:
            yield None
            return
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(QUEUE)
        job.subscribers.append(queue)
        try:
            yield queue
        finally:
            job.subscribers.remove(queue)

    async def stop(self) -> None:
        """Shutdown: cancel what runs (an experiment saves what it replayed, as cancelled)."""
        tasks = [job.task for job in self.jobs.values() if job.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
