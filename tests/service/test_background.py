"""The background writer: per-key order, failures contained, settle and drain wait for what was queued."""

from __future__ import annotations

import asyncio

from tda.background import BackgroundWriter


async def test_jobs_of_one_key_run_in_order_and_a_failure_does_not_stop_the_next(caplog):
    writer, done = BackgroundWriter(), []

    def job(name: str, delay: float, fail: bool = False):
        async def run() -> None:
            await asyncio.sleep(delay)
            if fail:
                raise RuntimeError(f"{name} failed")
            done.append(name)

        return run

    writer.submit("s", job("a1", 0.05), "a1")
    writer.submit("s", job("a2", 0.0, fail=True), "a2")
    writer.submit("s", job("a3", 0.0), "a3")
    writer.submit("t", job("b1", 0.0), "b1")
    await writer.settle("t")
    assert done == ["b1"]  # another key does not wait for "s"
    await writer.settle("s")
    assert done == ["b1", "a1", "a3"] and "a2 failed" in caplog.text
    assert writer.pending == 0


async def test_drain_waits_for_jobs_queued_while_it_waits():
    writer, done = BackgroundWriter(), []

    async def first() -> None:
        await asyncio.sleep(0.05)
        writer.submit("other", second, "second")  # e.g. a turn finishing while the server shuts down
        done.append("first")

    async def second() -> None:
        await asyncio.sleep(0.05)
        done.append("second")

    writer.submit("s", first, "first")
    await writer.drain()
    assert done == ["first", "second"]


async def test_the_writer_says_when_its_last_job_ends_not_before():
    """The service gives freed memory back then (``FreedMemory``): once nothing is left, not between two jobs."""
    idle: list[int] = []
    writer = BackgroundWriter(idle=lambda: idle.append(writer.pending))

    async def job() -> None:
        await asyncio.sleep(0.01)

    writer.submit("s", job, "s1")
    writer.submit("s", job, "s2")
    writer.submit("t", job, "t1")
    await writer.settle("t")
    assert idle == []  # "s" still has work queued
    await writer.drain()
    await asyncio.sleep(0)  # the done callbacks of the last job
    assert idle == [0]
    writer.submit("s", job, "s3")
    await writer.drain()
    await asyncio.sleep(0)
    assert idle == [0, 0]
