"""EventBus: snapshots fan out to SSE subscribers, one bounded queue each.

Heartbeats are events too: one timer for the whole bus puts a heartbeat in every queue, so a
subscriber waits on its queue alone (no per-event timeout machinery on the hot path of a fan-out).
A subscriber whose queue is full is dropped (its stream ends; the browser reconnects with
``Last-Event-ID`` and resumes from stored snapshots), so one slow reader never slows the others
or grows memory without bound. Each event is encoded once and the same bytes go to every subscriber.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

SNAPSHOT_EVENT = "context_window_snapshot"
HEARTBEAT = b": heartbeat\n\n"


def encode_sse(event: str, data: Any, event_id: int | str | None = None) -> bytes:
    head = f"event: {event}\n" + (f"id: {event_id}\n" if event_id is not None else "")
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


@dataclass(frozen=True)
class Event:
    id: int
    session_id: str
    name: str
    payload: bytes
    """The complete SSE frame."""


_CLOSED = Event(-1, "", "closed", b"")
HEARTBEAT_EVENT = Event(0, "", "heartbeat", HEARTBEAT)


@dataclass(eq=False)
class Subscription:
    session_id: str | None
    """``None``: every session."""
    queue: asyncio.Queue[Event] = field(default_factory=lambda: asyncio.Queue(256))
    dropped: bool = False

    def wants(self, event: Event) -> bool:
        return self.session_id is None or self.session_id == event.session_id

    async def next(self) -> Event:
        """The next event (heartbeats included); ``StopAsyncIteration`` once the bus closed or dropped us."""
        if self.dropped and self.queue.empty():
            raise StopAsyncIteration
        event = await self.queue.get()
        if event is _CLOSED:
            raise StopAsyncIteration
        return event


class EventBus:
    def __init__(self, queue_size: int = 256) -> None:
        self.queue_size = queue_size
        self._subscribers: set[Subscription] = set()
        self.dropped = 0
        self.closed = False

    @property
    def subscriber_count(self) -> int:
        return len(self._subscribers)

    def subscribe(self, session_id: str | None = None) -> Subscription:
        sub = Subscription(session_id, asyncio.Queue(self.queue_size))
        if self.closed:
            sub.queue.put_nowait(_CLOSED)
        else:
            self._subscribers.add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        self._subscribers.discard(sub)

    def publish(self, event: Event) -> int:
        """Deliver to every interested subscriber without waiting; returns how many got it."""
        delivered = 0
        for sub in list(self._subscribers):
            if event is not HEARTBEAT_EVENT and not sub.wants(event):
                continue
            try:
                sub.queue.put_nowait(event)
                delivered += 1
            except asyncio.QueueFull:
                self._drop(sub)
        return delivered

    def publish_snapshot(self, snapshot_id: int, session_id: str, snapshot: dict[str, Any]) -> int:
        # published_at (epoch seconds) lets a client show how fresh an event is (and the benchmark measure fan-out).
        data = {"snapshot_id": snapshot_id, "published_at": time.time(), **snapshot}
        payload = encode_sse(SNAPSHOT_EVENT, data, snapshot_id)
        return self.publish(Event(snapshot_id, session_id, SNAPSHOT_EVENT, payload))

    def heartbeat(self) -> int:
        return self.publish(HEARTBEAT_EVENT)

    async def run_heartbeats(self, every_s: float) -> None:
        """Until cancelled: a heartbeat to every subscriber each ``every_s`` seconds (keeps proxies from
        closing idle streams, and finds dead clients: their writes fail)."""
        while not self.closed:
            await asyncio.sleep(every_s)
            self.heartbeat()

    def close(self) -> None:
        """End every stream (server shutdown): each subscriber sees the end after what it has queued."""
        self.closed = True
        for sub in list(self._subscribers):
            self._drop(sub)

    def _drop(self, sub: Subscription) -> None:
        self._subscribers.discard(sub)
        if not sub.dropped:
            sub.dropped = True
            self.dropped += 1
        with contextlib.suppress(asyncio.QueueFull):  # next() sees ``dropped`` once the queue drains
            sub.queue.put_nowait(_CLOSED)
