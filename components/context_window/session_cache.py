"""The one cache helper: a bounded memo (oldest entries evicted first), keyed by content.

Every cache in the component and the built-in modules is a ``BoundedCache`` (or a ``SessionCache``,
the same with a session id in the key so a module's ``purge`` can forget one session). The rule that
keeps assembly deterministic: a key holds *everything* the cached value was computed from (texts,
values, feedback, message contents), never an object identity or a position alone, so the same input
gives the same output whatever was assembled before. ``content_key`` builds such a key from plain data.
A caller may edit its inputs in place between turns (a turn's result rows, a slot's config): a key read from
the input's values each time sees the edit; one kept per object would not. Only deeply frozen objects
(``Message``, ``ToolSchema``: their parts, tool calls and parameters are read-only copies) may be cached by
identity, the entry holding the object so its id is not reused.
"""

from __future__ import annotations

import hashlib
import pickle
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """At most ``max_entries`` entries; the oldest go first (0 keeps nothing: a cache switched off). ``get`` is
    the dict's own (hot paths call it per message), so a hit costs one dict lookup. With ``max_bytes``, also at most
    about that many bytes of texts and arrays (``entry_bytes``): where one entry may be large (a text, a vector by
    its text), a count of entries bounds nothing."""

    def __init__(self, max_entries: int = 1024, *, max_bytes: int | None = None) -> None:
        if max_entries < 0:
            raise ValueError("max_entries must be 0 or more")
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._sizes: dict[K, int] = {}
        self.held_bytes = 0
        """The bytes its entries hold as ``entry_bytes`` counts them (0 without ``max_bytes``)."""
        self.get = self._entries.get
        self.hits = 0
        self.misses = 0

    def put(self, key: K, value: V) -> V:
        if self.max_bytes is not None:
            size = entry_bytes(key, value)
            if size > self.max_bytes:  # kept, it would push out every other entry, then itself
                self.discard(key)
                return value
            self.held_bytes += size - self._sizes.get(key, 0)
            self._sizes[key] = size
        self._entries[key] = value
        self._fit()
        return value

    def put_all(self, items: Iterable[tuple[K, V]]) -> None:
        """``put`` of each item in order, leaving the same entries, with the evictions made once at the end (the
        oldest first: what is kept is the longest run of the newest entries that fits, either way) rather than a
        call per item: a conversation met cold puts thousands of counts."""
        entries, sizes, limit = self._entries, self._sizes, self.max_bytes
        for key, value in items:
            if key in entries:  # held, or only not evicted yet: as ``put`` finds it after the evictions before
                self._fit()
                self.put(key, value)
                continue
            if limit is not None:
                size = entry_bytes(key, value)
                if size > limit:  # ``put`` keeps none such
                    continue
                self.held_bytes += size
                sizes[key] = size
            entries[key] = value
        self._fit()

    def _fit(self) -> None:
        """Evict the oldest entries until the bounds hold."""
        while len(self._entries) > self.max_entries or (
            self.max_bytes is not None and self.held_bytes > self.max_bytes
        ):
            self._drop(next(iter(self._entries)))

    def _drop(self, key: K) -> None:
        del self._entries[key]
        self.held_bytes -= self._sizes.pop(key, 0)

    def get_or_compute(self, key: K, compute: Callable[[], V]) -> V:
        if key in self._entries:
            self.hits += 1
            return self._entries[key]
        self.misses += 1
        return self.put(key, compute())

    async def aget_or_compute(self, key: K, compute: Callable[[], Awaitable[V]]) -> V:
        """As ``get_or_compute`` for async producers (e.g. a retriever call)."""
        if key in self._entries:
            self.hits += 1
            return self._entries[key]
        self.misses += 1
        return self.put(key, await compute())

    def touch(self, key: K) -> None:
        """Mark ``key`` as just used: it goes last (least-recently-used eviction, for costly values)."""
        self._entries.move_to_end(key)

    def discard(self, key: K) -> None:
        if key in self._entries:
            self._drop(key)

    def discard_where(self, doomed: Callable[[K], bool]) -> int:
        """Drop the entries whose key ``doomed`` accepts; returns how many went."""
        keys = [k for k in self._entries if doomed(k)]
        for k in keys:
            self._drop(k)
        return len(keys)

    def clear(self) -> None:
        self._entries.clear()
        self._sizes.clear()
        self.held_bytes = 0

    def values(self) -> list[V]:
        return list(self._entries.values())

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def stats(self) -> dict[str, Any]:
        return {"entries": len(self._entries), "hits": self.hits, "misses": self.misses}


class SessionCache(BoundedCache[tuple[str, Hashable], V]):
    """A ``BoundedCache`` whose keys are ``(session_id, key)``: what a module computed for a session."""

    def get_or_compute(self, session_id: str, key: Hashable, compute: Callable[[], V]) -> V:  # type: ignore[override]
        return super().get_or_compute((session_id, key), compute)

    async def aget_or_compute(  # type: ignore[override]
        self, session_id: str, key: Hashable, compute: Callable[[], Awaitable[V]]
    ) -> V:
        return await super().aget_or_compute((session_id, key), compute)

    def purge(self, session_id: str) -> int:
        """Forget everything cached for ``session_id``; returns how many entries went."""
        return self.discard_where(lambda k: k[0] == session_id)

    def stats(self) -> dict[str, Any]:
        return {"sessions": len({sid for sid, _ in self._entries}), **super().stats()}


class _Held(weakref.ref):
    """A weak reference to a cached object, carrying its key and value: one object an entry (a ``(ref, value)``
    tuple was a second one the collector tracked)."""

    __slots__ = ("key", "value")
    key: int
    value: Any


class ByLiveObject(Generic[V]):
    """A value per live object (deeply frozen ones, see above), held by a weak reference: an entry goes as its object
    does (the reference's callback), so the cache holds only what is alive, at most ``max_entries`` (the oldest go
    first). A cache of per-turn objects (the messages a window makes and drops) otherwise fills with dead references
    and their tuples: 2 x 8,192 objects every full pass of the collector walked for the process's life."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[int, _Held] = OrderedDict()
        """Oldest first; changed only by single calls into C (an entry's callback may run in any thread)."""
        self._gone = self._forget  # one bound method, shared by every reference's callback

    def get(self, obj: object) -> V | None:
        held = self._entries.get(id(obj))
        return held.value if held is not None and held() is obj else None

    def put(self, obj: object, value: V) -> V:
        if not self.max_entries:
            return value
        held = _Held(obj, self._gone)
        held.key, held.value = id(obj), value
        self._entries.pop(held.key, None)  # to the end: the newest
        self._entries[held.key] = held
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return value

    def _forget(self, held: _Held) -> None:
        """``held``'s object is gone: its entry goes (unless the id was reused since by an object cached anew)."""
        if self._entries.get(held.key) is held:
            self._entries.pop(held.key, None)

    def __len__(self) -> int:
        return len(self._entries)


class VectorsByText(Generic[K]):
    """Vectors by the text they were made from, in two parts. Those no index has taken (``waiting``): embedded ahead
    of the call that indexes them, or for an index that is dropped after its call (a stateless chat's, whose client
    sends it again), up to ``max_bytes``. Those an index has taken (``take``) are held by that index: a copy is kept
    here only among the most recent ``taken_bytes`` (a text said again, a turn's other reader), not for the index's
    life (a native session's doubled its vectors' memory, ~4 KB a turn until the bound)."""

    def __init__(self, max_entries: int, max_bytes: int, taken_bytes: int) -> None:
        self.waiting: BoundedCache[K, Any] = BoundedCache(max_entries, max_bytes=max_bytes)
        self.taken: BoundedCache[K, Any] = BoundedCache(max_entries, max_bytes=taken_bytes)

    def get(self, key: K) -> Any:
        found = self.waiting.get(key)
        return found if found is not None else self.taken.get(key)

    def put(self, key: K, vector: Any) -> Any:
        self.taken.discard(key)
        return self.waiting.put(key, vector)

    def take(self, keys: Iterable[K]) -> None:
        """The vectors of ``keys`` are held by an index now: kept here among the most recently taken only."""
        waiting, taken = self.waiting, self.taken
        for key in keys:
            if key in waiting:
                vector = waiting.get(key)
                waiting.discard(key)
                taken.put(key, vector)
            elif key in taken:
                taken.touch(key)

    def __contains__(self, key: object) -> bool:
        return key in self.waiting or key in self.taken

    def __len__(self) -> int:
        return len(self.waiting) + len(self.taken)

    @property
    def held_bytes(self) -> int:
        return self.waiting.held_bytes + self.taken.held_bytes

    def items(self) -> list[tuple[K, Any]]:
        return [*self.waiting._entries.items(), *self.taken._entries.items()]

    def clear(self) -> None:
        self.waiting.clear()
        self.taken.clear()


def entry_bytes(*items: Any) -> int:
    """About the memory ``items`` hold beyond their objects' fixed parts: a text's characters, a bytes' or an array's
    buffer, a tuple's items' (a cache entry's key and value: what grows with the entry's content)."""
    size = 0
    for item in items:
        if isinstance(item, str | bytes):
            size += len(item)
        elif isinstance(item, tuple):
            size += entry_bytes(*item)
        else:
            size += getattr(item, "nbytes", 0)
    return size


def content_key(*parts: Any) -> str:
    """A digest of ``parts`` by value (nested dicts, lists, dataclasses): equal content, equal key.

    Pickling is exact for the plain data modules cache on; ``repr`` covers anything that does not pickle.
    """
    try:
        data = pickle.dumps(parts, protocol=5)
    except Exception:
        data = repr(parts).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=20).hexdigest()
