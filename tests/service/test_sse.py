"""SSE: a subscriber receives a turn's snapshot; Last-Event-ID resumes; heartbeats; slow subscribers are dropped."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from typing import Any

from tda.events import Event, EventBus


def _events(raw: bytes) -> list[dict[str, Any]]:
    """Parse SSE frames into {event, id, data} dicts (comments such as heartbeats are skipped)."""
    out = []
    for frame in raw.decode().split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in frame.splitlines() if line and not line.startswith(":") and ": " in line
        )
        if "data" in fields:
            out.append({"event": fields.get("event"), "id": fields.get("id"), "data": json.loads(fields["data"])})
    return out


async def _read_until(conn: Any, predicate: Any, buffer: bytes = b"", timeout: float = 5.0) -> bytes:
    """Read the stream until ``predicate(everything read so far)`` holds; returns everything read."""

    async def read() -> bytes:
        nonlocal buffer
        while not predicate(buffer):
            buffer += await conn.receive()
        return buffer

    return await asyncio.wait_for(read(), timeout)


async def _turn(client: Any, admin: dict[str, str], session_id: str, query: str) -> dict[str, Any]:
    r = await client.post(f"/v1/sessions/{session_id}/turns", json={"query": query}, headers=admin)
    assert r.status_code == 201
    return await r.get_json()


async def test_subscriber_receives_the_snapshot_of_a_turn(client, admin, viewer, session_id):
    async with client.request(f"/v1/sessions/{session_id}/events", headers=viewer) as conn:
        await conn.send_complete()
        await _read_until(conn, lambda b: b.startswith(b"retry:"))
        assert conn.status_code == 200 and conn.headers["Content-Type"].startswith("text/event-stream")
        turn = await _turn(client, admin, session_id, "stream me")
        raw = await _read_until(conn, lambda b: b"event: context_window_snapshot" in b)
        await conn.disconnect()
    [event] = _events(raw)
    assert event["event"] == "context_window_snapshot" and event["id"] == str(turn["snapshot_id"])
    assert (
        event["data"]["snapshot_id"] == turn["snapshot_id"]
        and event["data"]["total_used"] == turn["snapshot"]["total_used"]
    )


async def test_global_stream_last_event_id_resume_and_heartbeats(client, admin, viewer, session_id):
    first = await _turn(client, admin, session_id, "one")
    second = await _turn(client, admin, session_id, "two")
    headers = {**viewer, "Last-Event-ID": str(first["snapshot_id"])}
    async with client.request("/v1/events", headers=headers) as conn:
        await conn.send_complete()
        raw = await _read_until(conn, lambda b: b": heartbeat" in b)  # resumed events come first, then heartbeats
        third = await _turn(client, admin, session_id, "three")
        raw = await _read_until(conn, lambda b: f"id: {third['snapshot_id']}".encode() in b, raw)
        await conn.disconnect()
    assert [e["id"] for e in _events(raw)] == [str(second["snapshot_id"]), str(third["snapshot_id"])]


async def test_stream_errors(client, viewer):
    assert (await client.get("/v1/sessions/nope/events", headers=viewer)).status_code == 404
    assert (await client.get("/v1/events")).status_code == 401


async def test_bus_drops_a_slow_subscriber_and_keeps_serving_the_others():
    bus = EventBus(queue_size=4)
    slow, fast = bus.subscribe(None), bus.subscribe("s1")
    other = bus.subscribe("s2")
    for i in range(1, 7):
        bus.publish(Event(i, "s1", "x", b"frame"))
        assert (await fast.next()).id == i  # the fast reader keeps up
    assert slow.dropped and not fast.dropped and bus.subscriber_count == 2 and bus.dropped == 1
    assert other.queue.empty()  # another session's stream sees nothing of s1
    try:
        await slow.next()  # its stream ends at once (what it had queued is let go): the client resumes with
        raise AssertionError("a dropped subscriber must end")  # Last-Event-ID from the stored snapshots
    except StopAsyncIteration:
        pass
    assert bus.heartbeat() == 2  # heartbeats go to every stream, whatever its session
    assert (await fast.next()).payload == (await other.next()).payload == b": heartbeat\n\n"


async def test_readers_that_never_read_hold_no_frames_once_dropped():
    """100 streams whose readers never read, 300 large snapshots: each is dropped once 4 MiB of frames wait for it,
    and its queue is emptied then, not when its client finally disconnects. Measured with tracemalloc: the frames
    the bus still holds (before: the newest 256 events per stalled stream, ~25 MiB of 100 KB frames)."""
    bus = EventBus()
    readers = [bus.subscribe("s1") for _ in range(100)]
    tracemalloc.start()
    try:
        for i in range(1, 301):
            bus.publish(Event(i, "s1", "x", bytes(100_000)))  # a new frame each time, as each turn makes one
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert all(r.dropped for r in readers) and bus.subscriber_count == 0
    assert held < 2 * 1024 * 1024, f"{held / 2**20:.1f} MiB of frames still held for readers that were dropped"


async def test_closing_the_bus_ends_open_streams():
    bus = EventBus()
    sub = bus.subscribe(None)
    waiter = asyncio.ensure_future(sub.next())
    await asyncio.sleep(0)
    bus.close()
    try:
        await asyncio.wait_for(waiter, 1)
        raise AssertionError("closing must end the stream")
    except StopAsyncIteration:
        pass
    late = bus.subscribe(None)
    try:
        await asyncio.wait_for(late.next(), 1)
        raise AssertionError("a closed bus gives no new streams")
    except StopAsyncIteration:
        pass


async def test_shutdown_ends_open_streams(client, viewer, svc):
    """What `tda serve` does on SIGTERM before hypercorn drains connections: open streams finish cleanly."""
    async with client.request("/v1/events", headers=viewer) as conn:
        await conn.send_complete()
        await _read_until(conn, lambda b: b.startswith(b"retry:"))
        svc.bus.close()
        await asyncio.wait_for(conn._task, 5)  # the response completes instead of hanging
    assert conn.status_code == 200


async def test_event_ids_are_not_reused_after_a_session_is_deleted(client, admin, viewer, session_id):
    """Snapshot ids are the event ids: a deleted session's ids handed out again would sit at or below a client's
    Last-Event-ID, so a connected or resuming client would skip the new events."""
    await _turn(client, admin, session_id, "one")
    r = await client.post("/v1/sessions", json={"id": "gone", "profile_id": "p1"}, headers=admin)
    assert r.status_code == 201
    await _turn(client, admin, "gone", "a")
    newest = (await _turn(client, admin, "gone", "b"))["snapshot_id"]
    async with client.request("/v1/events", headers=viewer) as conn:  # connected while "gone" holds the newest id
        await conn.send_complete()
        raw = await _read_until(conn, lambda b: b.startswith(b"retry:"))
        assert (await client.delete("/v1/sessions/gone", headers=admin)).status_code == 204
        new = [(await _turn(client, admin, session_id, q))["snapshot_id"] for q in ("two", "three", "four")]
        raw = await _read_until(conn, lambda b: f"id: {new[-1]}".encode() in b, raw)
        await conn.disconnect()
    assert min(new) > newest
    assert [e["id"] for e in _events(raw)] == [str(i) for i in new]
    async with client.request("/v1/events", headers={**viewer, "Last-Event-ID": str(newest)}) as conn:
        await conn.send_complete()
        raw = await _read_until(conn, lambda b: f"id: {new[-1]}".encode() in b)
        await conn.disconnect()
    assert [e["id"] for e in _events(raw)] == [str(i) for i in new]
