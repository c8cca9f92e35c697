"""Cycle collection paused while a big request is in flight, so that request does not stall every other one; and the
libraries a process loads frozen out of the collector's walks once they are loaded (``LoadedFrozen``).

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
import sys
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


class LoadedFrozen:
    """What `tda serve` has loaded, frozen out of the collector's full passes (``gc.freeze``): at start-up, and again
    when the background work is done (``idle``) after a request imported modules since (litellm on the first call
    that names a model only it routes, anyio on the first upstream call). A library's objects (its functions,
    classes, dicts) live as long as the process, and every full pass walked them, holding the event loop: litellm
    loaded after the start-up freeze left ~200,000 objects that a native session's full passes walked, 70-500 ms
    each. Freezing holds what is alive then out of every later pass, garbage in cycles included, for good: so it is
    done only when the process has loaded modules it had not (a finite set: each is loaded once), after a collection
    (what is garbage then is freed first); objects it froze are still freed when their last reference goes. Off
    until ``freeze`` (a library or a test process: the collector as Python leaves it)."""

    def __init__(self) -> None:
        self.modules: int | None = None
        """How many modules were loaded at the last freeze (None: never frozen here)."""
        self.freezes = 0

    def freeze(self) -> None:
        gc.collect()
        gc.freeze()
        self.modules = len(sys.modules)
        self.freezes += 1

    def idle(self) -> None:
        """The background work is done: freeze again if modules were loaded since the last freeze (not while a big
        request holds the collector off: its objects are not long-lived, and the pass is what the pause avoids)."""
        if self.modules is not None and len(sys.modules) != self.modules and not PAUSE.holders:
            self.freeze()


LOADED = LoadedFrozen()
"""The process's one (the collector is the process's): `tda serve` freezes it at start-up."""
