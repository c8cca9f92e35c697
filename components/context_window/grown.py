"""A list that only grows, handed out as read-only prefixes: what a long session's every turn lengthens by an item
or two (its earlier turns as the turn index describes them, the columns turn recall searches) need not be copied
whole each turn, nor compared whole with the last turn's to find what is new.

The owner appends to the list (``Appended.add``) and hands out ``Prefix`` views of it; a view keeps its length, so
later appends never change what a holder sees, and ``Prefix.extends`` says in O(1) that one view starts with another
(the same list: every item of the shorter is the longer's). A list that changed otherwise (a turn described again, a
turn's validity read anew) is a new list: its views share nothing with the old one's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, islice
from typing import Generic, TypeVar, overload

T = TypeVar("T")


class Prefix(Sequence[T], Generic[T]):
    """The first ``len(self)`` items of a list only ever appended to: read-only, fixed as the list grows."""

    __slots__ = ("_items", "_size")

    def __init__(self, items: list[T], size: int | None = None) -> None:
        self._items = items
        self._size = len(items) if size is None else size

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):  # only the items asked for are copied, never the list up to them
            picked = range(self._size)[index]
            if picked.step == 1:
                return self._items[picked.start : picked.stop]
            return [self._items[i] for i in picked]
        if not -self._size <= index < self._size:
            raise IndexError("Prefix index out of range")
        return self._items[index if index >= 0 else self._size + index]

    def __iter__(self) -> Iterator[T]:
        return islice(self._items, self._size)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Prefix) and other._items is self._items:
            return other._size == self._size
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Prefix({list(self)!r})"

    def as_list(self) -> list[T]:
        """Its items in a new list, copied at once (a slice of the list: unpacking a view steps item by item)."""
        return self._items[: self._size]

    def extends(self, shorter: Sequence[T]) -> bool:
        """Whether ``shorter`` is a view of the same list no longer than this one (so this one starts with it),
        known without comparing an item."""
        return isinstance(shorter, Prefix) and shorter._items is self._items and shorter._size <= self._size

    def appended(self, items: Iterable[T]) -> Prefix[T]:
        """This view with ``items`` after it: the same list appended to in place when this view is its whole (the
        usual case, the newest view grown), else a new list (this view's items copied) so no other view changes."""
        if self._size == len(self._items):
            self._items.extend(items)
            return Prefix(self._items)
        return Prefix([*self, *items])


class Joined(Sequence[T], Generic[T]):
    """A view (``Prefix``) followed by a few items of its own: a session's earlier turns, a list that only grows, and
    the turns a call was handed. Nothing is copied to join them, and an earlier joined sequence whose view this one's
    extends shares its items up to that view's end without one being compared (``shared_start``)."""

    __slots__ = ("head", "tail")

    def __init__(self, head: Sequence[T], tail: Iterable[T]) -> None:
        self.head = head
        self.tail = tuple(tail)

    def __len__(self) -> int:
        return len(self.head) + len(self.tail)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        cut = len(self.head)
        if isinstance(index, slice):
            picked = range(len(self))[index]
            if picked.step != 1:
                return [self[i] for i in picked]
            head = self.head[picked.start : min(picked.stop, cut)] if picked.start < cut else []
            return [*head, *self.tail[max(picked.start - cut, 0) : max(picked.stop - cut, 0)]]
        at = index if index >= 0 else len(self) + index
        if not 0 <= at < len(self):
            raise IndexError("Joined index out of range")
        return self.head[at] if at < cut else self.tail[at - cut]

    def __iter__(self) -> Iterator[T]:
        return chain(self.head, self.tail)

    def __repr__(self) -> str:
        return f"Joined({list(self.head)!r}, {list(self.tail)!r})"

    def extends_head(self, shorter: Sequence[T]) -> int | None:
        """How many items from the start this one surely shares with ``shorter`` without comparing them: the length
        of ``shorter``'s view when this one's view extends it (None: not known so)."""
        if isinstance(shorter, Joined) and isinstance(self.head, Prefix) and self.head.extends(shorter.head):
            return len(shorter.head)
        return None
