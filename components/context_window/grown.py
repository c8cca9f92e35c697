"""A list that only grows, handed out as read-only prefixes: what a long session's every turn lengthens by an item
or two (its earlier turns as the turn index describes them, the columns turn recall searches) need not be copied
whole each turn, nor compared whole with the last turn's to find what is new.

The owner appends to the list (``Appended.add``) and hands out ``Prefix`` views of it; a view keeps its length, so
later appends never change what a holder sees, and ``Prefix.extends`` says in O(1) that one view starts with another
(the same list: every item of the shorter is the longer's). A list that changed otherwise (a turn described again, a
turn's validity read anew) is a new list: its views share nothing with the old one's. Numbers are held as machine
integers (an ``array("q")`` under the view: 8 bytes each, read back as ``int``), and a list of (number, item) pairs as
two such columns (``Numbered``: each pair made when read, not held as a tuple and an ``int`` for a session's life).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, MutableSequence, Sequence
from itertools import chain, islice
from typing import Generic, TypeVar, overload

T = TypeVar("T")


class Prefix(Sequence[T], Generic[T]):
    """The first ``len(self)`` items of a list (or an ``array``) only ever appended to: read-only, fixed as the list
    grows."""

    __slots__ = ("_items", "_size")

    def __init__(self, items: MutableSequence[T], size: int | None = None) -> None:
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
                return _as_list(self._items[picked.start : picked.stop])
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
        return _as_list(self._items[: self._size])

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
        copied = self._items[: self._size]  # a list or an array, as this one's
        copied.extend(items)
        return Prefix(copied)


def number_prefix(items: Iterable[int] = ()) -> Prefix[int]:
    """A view of machine integers (8 bytes each, no ``int`` object held), read back as ``int``s."""
    return Prefix(array("q", items))


def _as_list(items: MutableSequence[T]) -> list[T]:
    return items if isinstance(items, list) else list(items)


class Numbered(Sequence[tuple[int, T]], Generic[T]):
    """(number, item) pairs in two columns that only grow (``Prefix`` views: the numbers machine integers, the items
    a list), each pair made when read: a long session's earlier turns, listed by number every turn, hold ~16 bytes a
    turn here where a tuple and an ``int`` a turn held ~90 for the session's life. Read-only, fixed as the columns grow,
    and ``extends`` / ``appended`` as ``Prefix``'s."""

    __slots__ = ("items", "numbers")

    def __init__(self, pairs: Iterable[tuple[int, T]] = (), *, columns: tuple[Prefix[int], Prefix[T]] | None = None):
        if columns is None:
            listed = list(pairs)
            columns = number_prefix(n for n, _ in listed), Prefix([item for _, item in listed])
        self.numbers, self.items = columns

    def __len__(self) -> int:
        return len(self.numbers)

    @overload
    def __getitem__(self, index: int) -> tuple[int, T]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[int, T]]: ...
    def __getitem__(self, index: int | slice) -> tuple[int, T] | list[tuple[int, T]]:
        if isinstance(index, slice):
            return list(zip(self.numbers[index], self.items[index], strict=True))
        return self.numbers[index], self.items[index]

    def __iter__(self) -> Iterator[tuple[int, T]]:
        return zip(self.numbers, self.items, strict=True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Numbered) and other.items._items is self.items._items:
            return len(other) == len(self)
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Numbered({list(self)!r})"

    def extends(self, shorter: Sequence[tuple[int, T]]) -> bool:
        """As ``Prefix.extends``: ``shorter`` is a view of the same columns no longer than this one."""
        return (
            isinstance(shorter, Numbered)
            and self.numbers.extends(shorter.numbers)
            and self.items.extends(shorter.items)
        )

    def appended(self, pairs: Iterable[tuple[int, T]]) -> Numbered[T]:
        """As ``Prefix.appended``: the columns grown in place when this view is their whole, else copied."""
        listed = list(pairs)
        grown = self.numbers.appended(n for n, _ in listed), self.items.appended(item for _, item in listed)
        return Numbered(columns=grown)

    def cut(self, size: int) -> Numbered[T]:
        """Its first ``size`` pairs, in columns of their own (the items after them may be described again)."""
        return Numbered(columns=(number_prefix(self.numbers[:size]), Prefix(self.items[:size])))


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
