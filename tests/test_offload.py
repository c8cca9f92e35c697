"""A big request's body is freed a slice at a time (tda/offload.py ``free_in_slices``), and never what something
else still holds."""

from __future__ import annotations

from tda.offload import FREE_SLICE, free_in_slices


class Watched(list):
    """A list that notes the length it had at each deletion."""

    def __init__(self, items: range, deletions: list[int]) -> None:
        super().__init__(items)
        self.deletions = deletions

    def __delitem__(self, key: object) -> None:
        self.deletions.append(len(self))
        super().__delitem__(key)


def test_a_body_held_by_no_one_else_is_freed_a_slice_at_a_time():
    deletions: list[int] = []
    n = 2 * FREE_SLICE + 7
    free_in_slices([{"model": "m", "messages": Watched(range(n), deletions)}])
    assert deletions == [n, n - FREE_SLICE, n - 2 * FREE_SLICE]


def test_the_same_body_under_two_keys_is_freed_once_the_last_is_let_go():
    deletions: list[int] = []
    body = {"messages": Watched(range(FREE_SLICE + 1), deletions)}
    cache = {False: body, True: body}  # how quart caches a parsed body
    held: list[object] = [body, cache]
    del body, cache
    free_in_slices(held)
    assert held == [] and deletions == [FREE_SLICE + 1, 1]


def test_what_something_else_still_holds_is_left_as_it_was():
    deletions: list[int] = []
    kept_list = Watched(range(FREE_SLICE * 2), deletions)
    free_in_slices([{"messages": kept_list}])
    kept_body = {"messages": Watched(range(FREE_SLICE * 2), deletions)}
    free_in_slices([kept_body])
    assert deletions == [] and len(kept_list) == len(kept_body["messages"]) == FREE_SLICE * 2
