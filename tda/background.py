"""Work a response need not wait for (recording a champion case), done right after it.

Jobs with the same key run one after another, in the order submitted; ``settle(key)`` waits for a key's
jobs (the next turn of a session waits for the previous turn's, so it sees what that turn recorded), and
``drain()`` waits for all of them: shutdown calls it before closing the stores, so nothing is lost.
A job that fails is logged; it never fails a request.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

Job = Callable[[], Awaitable[Any]]


class BackgroundWriter:
    def __init__(self) -> None:
        self._last: dict[str, asyncio.Task[None]] = {}
        """Per key, the newest job: each job waits for the one before it."""

    def submit(self, key: str, job: Job, what: str) -> None:
        previous = self._last.get(key)
        task = asyncio.create_task(self._run(previous, job, what))
        self._last[key] = task
        task.add_done_callback(lambda done: self._last.get(key) is done and self._last.pop(key))

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
