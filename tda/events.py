"""EventBus: snapshots fan out to SSE subscribers, one bounded queue each.

Heartbeats are events too: one timer for the whole bus puts a heartbeat in every queue, so a
subscriber waits on its queue alone (no per-event timeout machinery on the hot path of a fan-out).
A subscriber whose queue is full (256 events or ``MAX_QUEUED_BYTES`` of frames) is dropped and its queue emptied
at once (its stream ends; the browser reconnects with ``Last-Event-ID`` and resumes from stored snapshots), so one
slow reader never slows the others, and a reader that never reads holds no frames while it stays connected.
Each event is encoded once and the same bytes go to every subscriber.

``EventBus`` serves one process. ``RedisBus`` (``TDA_BUS_URL=redis://…``) puts Redis pub/sub in front of
it, so an event published on any replica reaches the subscribers of every replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

SNAPSHOT_EVENT = "context_window_snapshot"
CONTROL = "control:"
"""Events named ``control:<what>`` say that shared state changed; the bus runs a handler, no stream sees them."""
HEARTBEAT = b": heartbeat\n\n"
MAX_QUEUED_BYTES = 4 * 1024 * 1024
"""Frames a subscriber may have waiting; past it (or past its queue's length) it is dropped."""


def encode_sse(data: Any, event: str | None = None, event_id: int | str | None = None) -> bytes:
    """One server-sent event, ``data`` as compact JSON: every stream tda serves (snapshots, chat completions,
    responses) frames its events here. No ``event`` line: the client's default, ``message`` (OpenAI's chunks)."""
    head = (f"event: {event}\n" if event is not None else "") + (f"id: {event_id}\n" if event_id is not None else "")
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


@dataclass(frozen=True)
class Event:
    id: int
    session_id: str
    name: str
    payload: bytes
    """The complete SSE frame."""

    def to_wire(self, origin: str) -> bytes:
        """For Redis: who sent it, then the event (session ids and names hold no newline)."""
        return f"{origin}\n{self.id}\n{self.session_id}\n{self.name}\n".encode() + self.payload

    @classmethod
    def from_wire(cls, wire: bytes) -> tuple[str, Event]:
        origin, event_id, session_id, name, payload = wire.split(b"\n", 4)
        return origin.decode(), cls(int(event_id), session_id.decode(), name.decode(), payload)


def stream_key(project: str, session_id: str) -> str:
    """What a session's events are published and subscribed under: its project and id, so a stream of a deleted
    session never carries the turns of another project's session created later under the same id."""
    return f"{project}/{session_id}"


def snapshot_event(snapshot_id: int, session_id: str, snapshot: dict[str, Any]) -> Event:
    # published_at (epoch seconds) lets a client show how fresh an event is (and the benchmark measure fan-out).
    data = {"snapshot_id": snapshot_id, "published_at": time.time(), **snapshot}
    return Event(snapshot_id, session_id, SNAPSHOT_EVENT, encode_sse(data, SNAPSHOT_EVENT, snapshot_id))


_CLOSED = Event(-1, "", "closed", b"")
HEARTBEAT_EVENT = Event(0, "", "heartbeat", HEARTBEAT)


@dataclass(eq=False)
class Subscription:
    session_id: str | None
    """``None``: every session."""
    queue: asyncio.Queue[Event] = field(default_factory=lambda: asyncio.Queue(256))
    dropped: bool = False
    queued_bytes: int = 0
    """The frames waiting in ``queue``: a reader that stalls may hold at most ``MAX_QUEUED_BYTES`` of them."""

    def wants(self, event: Event) -> bool:
        return self.session_id is None or self.session_id == event.session_id

    async def next(self) -> Event:
        """The next event (heartbeats included); ``StopAsyncIteration`` once the bus closed or dropped us."""
        if self.dropped and self.queue.empty():
            raise StopAsyncIteration
        event = await self.queue.get()
        if event is _CLOSED:
            raise StopAsyncIteration
        self.queued_bytes -= len(event.payload)
        return event


class EventBus:
    def __init__(self, queue_size: int = 256, max_queued_bytes: int = 0) -> None:
        self.queue_size = queue_size
        self.max_queued_bytes = max_queued_bytes or MAX_QUEUED_BYTES
        self._subscribers: set[Subscription] = set()
        self._control: dict[str, Callable[[], Awaitable[None]]] = {}
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
            if sub.queued_bytes + len(event.payload) > self.max_queued_bytes:
                self._drop(sub)
                continue
            try:
                sub.queue.put_nowait(event)
            except asyncio.QueueFull:
                self._drop(sub)
                continue
            sub.queued_bytes += len(event.payload)
            delivered += 1
        return delivered

    def publish_snapshot(self, snapshot_id: int, session_id: str, snapshot: dict[str, Any]) -> int:
        if not self._subscribers:  # nobody to encode the frame for (a stream that comes later resumes from the DB)
            return 0
        return self.publish(snapshot_event(snapshot_id, session_id, snapshot))

    def on_control(self, what: str, handler: Callable[[], Awaitable[None]]) -> None:
        """Run ``handler`` when another process says ``what`` changed (e.g. "modules": reload them)."""
        self._control[what] = handler

    def publish_control(self, what: str) -> None:
        """Tell the other processes that ``what`` changed (there are none, here)."""

    async def start(self) -> None:
        """Connect to what carries events between processes (nothing, here)."""

    async def drain(self) -> None:
        """Wait until what was published has left this process (at once, here)."""

    async def stop(self) -> None:
        self.close()

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

    def drop_all(self) -> None:
        """End every open stream without closing the bus: its clients reconnect and resume from the database."""
        for sub in list(self._subscribers):
            self._drop(sub)

    def _drop(self, sub: Subscription) -> None:
        self._subscribers.discard(sub)
        if not sub.dropped:
            sub.dropped = True
            self.dropped += 1
        # Its client resumes from the database (Last-Event-ID) anyway: let go of what it has not read now, not when
        # a reader that never reads finally disconnects (100 of them kept ~35 MiB of frames alive until then).
        while not sub.queue.empty():
            sub.queue.get_nowait()
        sub.queued_bytes = 0
        sub.queue.put_nowait(_CLOSED)


class RedisBus(EventBus):
    """Events between replicas over Redis pub/sub: one channel, one Redis subscription per replica, fanned out
    to the local subscribers as ``EventBus`` does.

    ``publish_snapshot`` queues the frame for Redis, then delivers to this replica's streams on the event loop's
    next step (no Redis round trip for them), after the sender has handed the frame on: the other replicas'
    streams do not wait for this replica's whole fan-out. One sender task keeps the frames' order, and each replica
    skips its own frames when Redis echoes them. ``drain()`` waits until the queued frames reached Redis; the
    turn lock drains before the next turn of a session may start, so a session's events reach every replica in
    turn order whichever replica ran each turn.

    Redis is not the record (the database is): when the connection drops, every local stream is ended, and
    again once it is back, so clients reconnect with Last-Event-ID and resume from stored snapshots.
    """

    CHANNEL = "tda:events"
    OUTBOX = 10_000
    RETRY_S = 0.5

    def __init__(self, url: str, queue_size: int = 256, channel: str = CHANNEL, drain_timeout_s: float = 2.0) -> None:
        super().__init__(queue_size)
        self.url = url
        self.channel = channel
        self.drain_timeout_s = drain_timeout_s
        self.connected = asyncio.Event()
        self._outbox: asyncio.Queue[bytes] = asyncio.Queue(self.OUTBOX)
        self._tasks: list[asyncio.Task[None]] = []
        self._redis: Any = None
        self.origin = uuid.uuid4().hex
        """This process, on the wire: it skips its own frames (it delivered or applied them already)."""

    def publish_snapshot(self, snapshot_id: int, session_id: str, snapshot: dict[str, Any]) -> int:
        """Queue for the other replicas, then deliver to this replica's streams; returns how many may get it."""
        if self.closed:
            return 0
        event = snapshot_event(snapshot_id, session_id, snapshot)
        try:
            self._outbox.put_nowait(event.to_wire(self.origin))
        except asyncio.QueueFull:  # Redis has been unreachable for long: streams were ended, clients resume from the DB
            log.warning("event bus: Redis outbox full, snapshot %s not sent to other replicas", snapshot_id)
        # This replica's streams next: the sender, woken first, hands the frame to Redis before hundreds of local
        # streams queue up ahead of it (else the other replicas' streams wait for this one's whole fan-out).
        asyncio.get_running_loop().call_soon(self.publish, event)
        return self.subscriber_count

    def publish_control(self, what: str) -> None:
        with contextlib.suppress(asyncio.QueueFull):
            self._outbox.put_nowait(Event(0, "", CONTROL + what, b"").to_wire(self.origin))

    async def start(self) -> None:
        import redis.asyncio as redis

        self._redis = redis.Redis.from_url(self.url, health_check_interval=10, socket_keepalive=True)
        try:
            await self._redis.ping()
        except (redis.RedisError, OSError) as exc:
            raise RuntimeError(f"TDA_BUS_URL={self.url}: Redis does not answer ({exc}); start it or fix it") from None
        self._tasks = [asyncio.create_task(self._receive()), asyncio.create_task(self._send())]
        await asyncio.wait_for(self.connected.wait(), 10)

    async def drain(self) -> None:
        if self._tasks and self.connected.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._outbox.join(), self.drain_timeout_s)

    async def stop(self) -> None:
        await self.drain()
        self.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._redis is not None:
            await self._redis.aclose()

    async def _send(self) -> None:
        import redis.asyncio as redis

        while True:
            frame = await self._outbox.get()
            while True:
                try:
                    await self._redis.publish(self.channel, frame)
                    break
                except (redis.RedisError, OSError) as exc:  # kept and retried: order holds, delivery is late
                    log.warning("event bus: could not publish to Redis at %s (%s); retrying", self.url, exc)
                    await asyncio.sleep(self.RETRY_S)
            self._outbox.task_done()

    async def _receive(self) -> None:
        import redis.asyncio as redis

        while not self.closed:
            pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.channel)
                if not self.connected.is_set():
                    self.drop_all()  # streams opened while Redis was away may have missed events: resume them
                    self.connected.set()
                async for message in pubsub.listen():
                    if message["type"] == "message":
                        origin, event = Event.from_wire(message["data"])
                        if origin != self.origin:  # this replica's own events were delivered when published
                            self._receive_one(event)
            except (redis.RedisError, OSError) as exc:
                self._lost(exc)
                await asyncio.sleep(self.RETRY_S)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

    def _receive_one(self, event: Event) -> None:
        if not event.name.startswith(CONTROL):
            self.publish(event)
            return
        handler = self._control.get(event.name.removeprefix(CONTROL))
        if handler is not None:
            task = asyncio.create_task(self._run_control(event.name, handler))
            self._tasks.append(task)
            task.add_done_callback(self._tasks.remove)

    @staticmethod
    async def _run_control(name: str, handler: Callable[[], Awaitable[None]]) -> None:
        try:
            await handler()
        except Exception:  # one failed refresh must not stop the bus; the next change or a restart applies it
            log.exception("event bus: handling %s failed", name)

    def _lost(self, exc: BaseException) -> None:
        if self.connected.is_set():
            log.warning("event bus: lost Redis at %s (%s); ending streams so clients resume", self.url, exc)
            self.connected.clear()
            self.drop_all()


def create_bus(url: str | None) -> EventBus:
    """``TDA_BUS_URL`` (checked by Settings): unset, the in-process bus; ``redis://…``, Redis between replicas."""
    return RedisBus(url) if url else EventBus()
