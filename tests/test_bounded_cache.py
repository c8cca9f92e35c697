"""The one cache helper (components/context_window/session_cache.py), as tda's caches use it."""

from components.context_window.session_cache import BoundedCache


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
