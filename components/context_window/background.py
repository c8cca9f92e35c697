"""Work a call starts for later and does not wait for: a reply's vectors embedded for the session's next call, the
summary the next window will need. ``Background`` owns each job until it ends (the event loop keeps a task only
weakly), logs a job's error (a later request never meets it), holds at most ``limit`` at once when given one (work
done ahead of time is a guess: beyond the limit it is not started) and cancels what still runs on ``close``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from .isolation import describe_error

log = logging.getLogger(__name__)


class Background:
    def __init__(self, what: str, limit: int | None = None) -> None:
        self.what = what
        """Names the jobs in the log."""
        self.limit = limit
        self.jobs: set[asyncio.Task[Any]] = set()
        """The jobs running."""

    def start(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any] | None:
        """``work`` as a job of its own (None: the limit is reached, and ``work`` is closed unstarted)."""
        if self.limit is not None and len(self.jobs) >= self.limit:
            work.close()
            return None
        job = asyncio.get_running_loop().create_task(work)
        self.jobs.add(job)
        job.add_done_callback(self._ended)
        return job

    def _ended(self, job: asyncio.Task[Any]) -> None:
        self.jobs.discard(job)
        if not job.cancelled() and (error := job.exception()) is not None:
            log.warning("%s failed: %s", self.what, describe_error(error))

    async def close(self) -> None:
        """Cancel the jobs that still run and wait for them to end (shutdown, before what they use is closed)."""
        jobs = list(self.jobs)
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
