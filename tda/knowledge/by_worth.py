"""A mapping whose entries least worth keeping come out without reading every entry: the champion case store, once
full, writes each new case over the case least worth keeping, every turn (tda/knowledge/cases.py)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator
from typing import Any, Generic, Protocol, TypeVar


class Worth(Protocol):
    def worth(self) -> Any:
        """Sorts what to drop first first (comparable with every other's)."""
        ...


V = TypeVar("V", bound=Worth)


class ByWorth(Generic[V]):
    """A dict (key -> value) that lists its values least worth keeping in the order a stable sort by ``worth`` of its
    values in the dict's order would (``least``), kept as a heap as entries come, change and go: a full store of
    2,000 cases scanned for the one to write over was ~1-2 ms of every turn past turn ~2,000
    (docs/history/benchmarks-log.md, "Session 42 (turnflat)"). A changed or removed entry's heap item stays until it
    surfaces (it no longer matches the value held) or the heap is rebuilt."""

    def __init__(self, items: Iterable[tuple[str, V]] = ()) -> None:
        self._values: dict[str, V] = {}
        self._order: dict[str, int] = {}
        """Per key, its place in the dict's order: a value set again keeps it, as a dict's key does."""
        self._latest: dict[str, int] = {}
        """Per key, the heap item of its value (the number it was pushed as): any other of the key's is stale."""
        self._placed = itertools.count()
        self._pushed = itertools.count()
        self._heap: list[tuple[Any, int, int, str, V]] = []
        for key, value in items:
            self[key] = value

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __getitem__(self, key: str) -> V:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def get(self, key: str) -> V | None:
        return self._values.get(key)

    def __setitem__(self, key: str, value: V) -> None:
        if key not in self._values:
            self._order[key] = next(self._placed)
        self._values[key] = value
        self._latest[key] = pushed = next(self._pushed)
        heapq.heappush(self._heap, (value.worth(), self._order[key], pushed, key, value))
        if len(self._heap) > 2 * len(self._values) + 64:  # items of values since changed or removed
            self._heap = [item for item in self._heap if self._current(item)]
            heapq.heapify(self._heap)

    def _current(self, item: tuple[Any, int, int, str, V]) -> bool:
        return self._latest.get(item[3]) == item[2]

    def __delitem__(self, key: str) -> None:
        del self._values[key], self._order[key], self._latest[key]

    def least(self, n: int, excluded: Iterable[str] = ()) -> list[V]:
        """The ``n`` values least worth keeping whose keys are not ``excluded``: those a stable sort by ``worth`` of
        every value in the dict's order lists first (``heapq.nsmallest``'s), found in ~log(entries) steps each."""
        skipped = set(excluded)
        found: list[V] = []
        put_back = []
        while len(found) < n and self._heap:
            item = heapq.heappop(self._heap)
            if not self._current(item):
                continue  # changed or removed since it was pushed
            put_back.append(item)
            if item[3] not in skipped:
                found.append(item[4])
        for item in put_back:  # still held: taking them is the caller's (``del``)
            heapq.heappush(self._heap, item)
        return found
