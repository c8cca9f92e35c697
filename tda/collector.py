"""Cycle collection paused while a big request is in flight, so that request does not stall every other one.

A full pass of Python's cycle collector walks every tracked object, holding the GIL throughout. A 100,000-message
chat brings about 800,000 of them (its messages as parsed, validated and indexed), and as they pile up the
collector makes full passes of 0.6-1 s each, four in that one request: every other request waits, /healthz too.
While a request with a big body runs, automatic collection waits; objects are still freed as usual (reference
counting), only garbage in reference cycles waits, and it is collected once the last big request is done, when
the objects it walked are gone. At most ``MAX_PAUSE_S`` at a time: a steady stream of big requests must not keep
cycles from ever being collected (then the collector runs, stalls included).
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Iterator

MAX_PAUSE_S = 30.0


class CollectorPause:
    """Counts the big requests in flight; automatic collection is off while any is (up to ``max_pause_s``)."""

    def __init__(self, max_pause_s: float = MAX_PAUSE_S) -> None:
        self.max_pause_s = max_pause_s
        self.holders = 0
        self.since: float | None = None
        """When this pause turned collection off (None: it did not, or it has been turned back on)."""

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self.acquire()
        try:
            yield
        finally:
            self.release()

    def acquire(self) -> None:
        if self.holders == 0 and gc.isenabled():
            gc.disable()
            self.since = time.monotonic()
        self.holders += 1
        self._expire()

    def release(self) -> None:
        self.holders -= 1
        if self.holders == 0:
            self._resume()
        else:
            self._expire()

    def _expire(self) -> None:
        if self.since is not None and time.monotonic() - self.since > self.max_pause_s:
            self._resume()

    def _resume(self) -> None:
        if self.since is not None:
            gc.enable()
            self.since = None


PAUSE = CollectorPause()
"""The process's one pause (the collector is the process's)."""
