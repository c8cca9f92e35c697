"""How long Claude keeps a session's prompt cache: chosen from the gaps between the session's calls.

Anthropic keeps a marked prefix 5 minutes unless told 1 hour; a 5-minute write costs 1.25x the input price, a
1-hour one 2x, a read 0.1x. A session whose calls come more than 5 minutes apart (an agent waiting on a person, a
long-running tool) would write its prefix again on every call with 5 minutes and read it with 1 hour. Gaps over an
hour no TTL bridges: there the cheaper 5-minute write stays. The gaps are this process's own record of each
session's latest calls (a replica that meets a session first chooses 5 minutes).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

from components.context_window.session_cache import BoundedCache

FIVE_MINUTES_S, ONE_HOUR_S = 300.0, 3600.0
GAPS_KEPT = 4
"""The recent gaps the choice looks at (their median: one long pause does not switch a brisk session)."""
SESSIONS_KEPT = 10_000


class CacheTTL:
    """Each session's latest call times; ``ttl`` records a call and chooses its cache marks' TTL."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, sessions: int = SESSIONS_KEPT) -> None:
        self.clock = clock
        self._calls: BoundedCache[str, tuple[float, ...]] = BoundedCache(sessions)

    def ttl(self, session_id: str) -> str | None:
        """ "1h" when the session's recent calls came 5 minutes to an hour apart (the median gap), else None (the
        provider's 5 minutes). Records this call."""
        calls = (*(self._calls.get(session_id) or ()), self.clock())[-(GAPS_KEPT + 1) :]
        self._calls.put(session_id, calls)
        gaps = sorted(later - earlier for earlier, later in itertools.pairwise(calls))
        if not gaps:
            return None
        median = gaps[len(gaps) // 2]
        return "1h" if FIVE_MINUTES_S < median <= ONE_HOUR_S else None
