"""Work that grows with a request's size, run in a worker thread when the request is large.

The event loop serves every request of the process: a step that takes seconds over a 100,000-message chat (counting
its tokens, hashing it, converting it) must not run there, or every other request, ``/healthz`` too, waits for it. A
short list is worked on in place: a hop to a thread costs more than the work."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

from components.context_window.offload import Runner

in_thread: Runner = asyncio.to_thread
"""The runner the service hands the component (``components/context_window/offload.py``): a worker thread."""

LONG = 500
"""Items past which the work goes to a worker thread (about a millisecond of work each at most)."""
T = TypeVar("T")
S = TypeVar("S", bound=Sequence[object])


async def sized(work: Callable[[S], T], items: S) -> T:
    """``work(items)``: in a worker thread when ``items`` is longer than ``LONG``, else here."""
    return await asyncio.to_thread(work, items) if len(items) > LONG else work(items)


FREE_SLICE = 1_000
"""Items of a long list freed per statement (``free_in_slices``): a fraction of a millisecond each."""


def free_in_slices(values: list[object]) -> None:
    """Drop ``values`` (a list the caller hands over), freeing long lists in them a slice at a time. Freeing a
    100,000-message body at once is one call that holds the GIL until the last object is gone (~35 ms, 200 ms on a
    loaded machine), in a worker thread too, so the event loop waits as long; between slices it gets its turn. What
    something else still holds is only let go of, never changed."""
    while values:
        value = values.pop()
        if sys.getrefcount(value) > 2:  # more than ``value`` and getrefcount's own argument
            continue
        if isinstance(value, dict):
            values += [value.pop(key) for key in [k for k, v in value.items() if isinstance(v, list | dict)]]
        elif isinstance(value, list):
            while value:
                del value[-FREE_SLICE:]
