"""A bounded per-session memo for modules: what a module computed once for a session, it reuses.

Keys are ``(session_id, key)``; the least recently used entries go first when the bound is hit,
and ``purge(session_id)`` forgets one session (the module's ``purge``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class SessionCache(Generic[V]):
    def __init__(self, max_entries: int = 1024) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, Hashable], V] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, session_id: str, key: Hashable, compute: Callable[[], V]) -> V:
        full_key = (session_id, key)
        if full_key in self._entries:
            return self._hit(full_key)
        return self._store(full_key, compute())

    async def aget_or_compute(self, session_id: str, key: Hashable, compute: Callable[[], Awaitable[V]]) -> V:
        """As ``get_or_compute`` for async producers (e.g. a retriever call)."""
        full_key = (session_id, key)
        if full_key in self._entries:
            return self._hit(full_key)
        return self._store(full_key, await compute())

    def _hit(self, full_key: tuple[str, Hashable]) -> V:
        self.hits += 1
        self._entries.move_to_end(full_key)
        return self._entries[full_key]

    def _store(self, full_key: tuple[str, Hashable], value: V) -> V:
        self.misses += 1
        self._entries[full_key] = value
        if len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return value

    def purge(self, session_id: str) -> int:
        """Forget everything cached for ``session_id``; returns how many entries went."""
        doomed = [k for k in self._entries if k[0] == session_id]
        for k in doomed:
            del self._entries[k]
        return len(doomed)

    def __len__(self) -> int:
        return len(self._entries)

    def stats(self) -> dict[str, Any]:
        return {
            "sessions": len({sid for sid, _ in self._entries}),
            "entries": len(self._entries),
            "hits": self.hits,
            "misses": self.misses,
        }
