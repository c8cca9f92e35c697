"""The one cache helper (components/context_window/session_cache.py), as tda's caches use it."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.session_cache import BoundedCache, _sized, entry_bytes


def test_the_oldest_entry_goes_first_unless_it_was_touched() -> None:
    cache: BoundedCache[str, int] = BoundedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.touch("a")  # a costly value in use (a Router) outlives one added after it
    cache.put("c", 3)
    assert "a" in cache and "c" in cache and "b" not in cache


def test_discard_forgets_one_entry_and_a_missing_one_is_no_error() -> None:
    cache: BoundedCache[str, int] = BoundedCache(4)
    cache.put("a", 1)
    cache.discard("a")
    cache.discard("never there")
    assert cache.get("a") is None and len(cache) == 0


def test_a_full_cache_evicts_one_entry_not_all() -> None:
    cache: BoundedCache[int, int] = BoundedCache(3)
    for i in range(4):
        cache.put(i, i)
    assert [i for i in range(4) if i in cache] == [1, 2, 3]


def test_a_cache_bounded_by_bytes_holds_no_more_than_its_limit_whatever_its_entries_size() -> None:
    """A count of entries bounds nothing when one entry may be a long text or a vector: the oldest go first until
    the texts and arrays held fit ``max_bytes``; an entry larger than the limit alone is not kept, and evicts none."""
    cache: BoundedCache[str, np.ndarray] = BoundedCache(1000, max_bytes=10_000)
    for i in range(100):
        cache.put(f"text {i:03d}", np.zeros(100, dtype=np.float32))  # 8 + 400 bytes each
        assert cache.held_bytes == sum(len(k) + 400 for k in [f"text {j:03d}" for j in range(100)] if k in cache)
        assert cache.held_bytes <= 10_000
    assert len(cache) == 10_000 // 408 and "text 099" in cache and "text 000" not in cache
    cache.put("text 099", np.zeros(10, dtype=np.float32))  # written over: counted once, at its new size
    assert cache.held_bytes == (len(cache) - 1) * 408 + 8 + 40
    held = len(cache)
    cache.put("huge", np.zeros(5_000, dtype=np.float32))
    assert "huge" not in cache and len(cache) == held  # nothing pushed out for it
    cache.discard("text 099")
    assert cache.held_bytes == len(cache) * 408
    cache.clear()
    assert cache.held_bytes == 0


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("abcdefgh"), st.integers(0, 3)), max_size=12),
    st.lists(st.tuples(st.sampled_from(["", "a", "bb", "ccc", "dddd", "eeeee", "ffffffff", "g"]), st.integers(0, 3))),
    st.integers(0, 6),
    st.one_of(st.none(), st.integers(0, 12)),
)
def test_put_all_keeps_the_entries_puts_one_by_one_keep(
    before: list[tuple[str, int]], items: list[tuple[str, int]], entries: int, max_bytes: int | None
) -> None:
    """``put_all`` (a conversation met cold puts thousands of counts at once) leaves what a ``put`` of each item in
    order leaves: the same entries in the same order, the same bytes held, whatever the bounds, keys put again
    (held, or evicted by an earlier item), or an item too large to keep."""
    one: BoundedCache[str, int] = BoundedCache(entries, max_bytes=max_bytes)
    batch: BoundedCache[str, int] = BoundedCache(entries, max_bytes=max_bytes)
    for key, value in before:
        one.put(key, value)
        batch.put(key, value)
    for key, value in items:
        one.put(key, value)
    batch.put_all(items)
    assert list(batch._entries.items()) == list(one._entries.items())
    assert batch.held_bytes == one.held_bytes and batch._sizes == one._sizes


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(st.text(max_size=6), st.binary(max_size=6), st.tuples(st.text(max_size=3), st.integers())),
    st.one_of(st.integers(), st.booleans(), st.text(max_size=4), st.none()),
)
def test_equivalence_an_entry_s_size_read_directly_is_entry_bytes(key: object, value: object) -> None:
    """Equivalence (an optimisation): ``put_all`` sizes a text's count by the text's length without ``entry_bytes``'
    walk; every entry's size is still ``entry_bytes``'."""
    assert _sized(key, value) == entry_bytes(key, value)
