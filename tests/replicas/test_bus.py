"""The Redis event bus against a real redis-server: events cross processes in order, and losing Redis ends the
streams (their clients resume from the database) instead of leaving them silently deaf."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tda.events import RedisBus, Subscription
from tests.replicas.servers import Redis, require_binaries


@pytest.fixture
def redis_server() -> Iterator[Redis]:
    require_binaries()
    root = Path(tempfile.mkdtemp(prefix="tda-redis-"))
    server = Redis(root).start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
async def buses(redis_server: Redis) -> AsyncIterator[list[RedisBus]]:
    """Two buses on one Redis, as two replicas have (a channel of their own: tests never share one)."""
    channel = f"tda:test:{redis_server.port}"
    pair = [RedisBus(redis_server.url, channel=channel) for _ in range(2)]
    for bus in pair:
        await bus.start()
    try:
        yield pair
    finally:
        for bus in pair:
            await bus.stop()


async def received(sub: Subscription, count: int) -> list[tuple[int, str, dict]]:
    events = []
    while len(events) < count:
        event = await asyncio.wait_for(sub.next(), 5)
        if event.id:  # not a heartbeat
            data = json.loads(event.payload.split(b"data: ", 1)[1])
            events.append((event.id, event.session_id, data))
    return events


async def test_events_published_on_one_replica_reach_both_in_order(buses: list[RedisBus]) -> None:
    one, two = buses
    on_one, on_two, other_session = one.subscribe("s1"), two.subscribe("s1"), two.subscribe("s2")
    everything = two.subscribe(None)
    for i in range(1, 21):
        one.publish_snapshot(i, "s1" if i % 4 else "s2", {"turn": i})
    await one.drain()
    want_s1 = [i for i in range(1, 21) if i % 4]
    for sub in (on_one, on_two):
        got = await received(sub, len(want_s1))
        assert [(i, s, d["turn"]) for i, s, d in got] == [(i, "s1", i) for i in want_s1]
    assert [i for i, _, _ in await received(other_session, 5)] == [4, 8, 12, 16, 20]
    assert [i for i, _, _ in await received(everything, 20)] == list(range(1, 21))


async def test_losing_redis_ends_the_streams_and_the_bus_recovers_when_it_returns(
    buses: list[RedisBus], redis_server: Redis
) -> None:
    one, two = buses
    sub = two.subscribe("s1")
    redis_server.stop()
    with pytest.raises(StopAsyncIteration):  # the client reconnects and resumes from the database
        while True:
            await asyncio.wait_for(sub.next(), 10)
    redis_server.start()  # same port
    for bus in buses:
        await asyncio.wait_for(bus.connected.wait(), 15)
    again = two.subscribe("s1")
    one.publish_snapshot(99, "s1", {"turn": 99})
    [(event_id, _, _)] = await received(again, 1)
    assert event_id == 99


async def test_an_event_leaves_for_the_other_replicas_before_this_ones_streams_are_served(
    buses: list[RedisBus], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Else the other replicas' streams wait for this replica's whole fan-out (hundreds of writes) first."""
    one, two = buses
    local = [one.subscribe("s1") for _ in range(50)]
    queued_when_sent: list[int] = []
    publish = one._redis.publish

    async def watched(channel: str, frame: bytes) -> int:
        queued_when_sent.append(sum(sub.queue.qsize() for sub in local))
        return await publish(channel, frame)

    monkeypatch.setattr(one._redis, "publish", watched)
    remote = two.subscribe("s1")
    one.publish_snapshot(7, "s1", {"turn": 7})
    await one.drain()
    assert queued_when_sent == [0]  # handed to Redis while no local stream had it yet
    assert [i for i, _, _ in await received(remote, 1)] == [7]
    for sub in local:
        assert [i for i, _, _ in await received(sub, 1)] == [7]
