"""The TTL of Claude's cache marks follows the gaps between a session's calls (tda/cache_ttl.py)."""

from __future__ import annotations

import statistics

from hypothesis import given
from hypothesis import strategies as st

from tda.cache_ttl import CacheTTL


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@given(st.lists(st.floats(min_value=0, max_value=10_000, allow_nan=False), min_size=1, max_size=12))
def test_an_hour_is_chosen_exactly_when_the_recent_gaps_are_five_minutes_to_an_hour(gaps: list[float]) -> None:
    clock, ttl = Clock(), CacheTTL()
    ttl.clock = clock
    assert ttl.ttl("s") is None  # a session's first call: no gap to go by
    seen: list[float] = []  # the gaps as the clock shows them (a sum of floats rounds: 3,600 may read 3,600.000000002)
    for gap in gaps:
        before = clock.now
        clock.now += gap
        seen.append(clock.now - before)
        recent = seen[-4:]  # the last four gaps, as the oracle reads them
        expected = "1h" if 300 < statistics.median_high(recent) <= 3600 else None
        assert ttl.ttl("s") == expected


def test_sessions_are_apart() -> None:
    clock, ttl = Clock(), CacheTTL()
    ttl.clock = clock
    ttl.ttl("slow")
    clock.now += 600
    ttl.ttl("brisk")
    assert ttl.ttl("slow") == "1h"
    clock.now += 10
    assert ttl.ttl("brisk") is None
