"""Work that grows with a request's size, run in a worker thread when the request is large.

The event loop serves every request of the process: a step that takes seconds over a 100,000-message chat (counting
its tokens, hashing it, converting it) must not run there, or every other request, ``/healthz`` too, waits for it. A
short list is worked on in place: a hop to a thread costs more than the work."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TypeVar

LONG = 500
"""Items past which the work goes to a worker thread (about a millisecond of work each at most)."""
T = TypeVar("T")
S = TypeVar("S", bound=Sequence[object])


async def sized(work: Callable[[S], T], items: S) -> T:
    """``work(items)``: in a worker thread when ``items`` is longer than ``LONG``, else here."""
    return await asyncio.to_thread(work, items) if len(items) > LONG else work(items)
