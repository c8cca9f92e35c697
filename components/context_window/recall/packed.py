"""A session's messages held packed for its recall index: their texts in one UTF-8 buffer and their other fields in one
row each, a ``Message`` made only when one is read.

A native session's recall index holds every message it ever recorded, for the session's life; as objects, a turn's two
messages were ~0.7 KB (the message's slots, its text as a ``str`` of its own, the list's pointer), read again only for
the few units a turn's ranking gathers (docs/history/benchmarks-log.md, "Session 51 (memmsg)"). Packed, a message is its
text's bytes and a 20-byte row. A message that is not plain (a tool call or result, a name, a phase, content parts) is
kept whole: those fields have no column here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, overload

import numpy as np

from ..base import Message
from ..relevance import GrowingArray

_ROLES: tuple[Literal["system", "user", "assistant", "tool"], ...] = ("system", "user", "assistant", "tool")
_ROLE_CODE = {role: code for code, role in enumerate(_ROLES)}
_ROW = np.dtype([("start", np.int64), ("size", np.int32), ("turn", np.int32), ("counts", np.int32)])
"""Per message: where its text starts in the buffer and its bytes, its turn, its stored counts' number in the table
(``_counts``)."""
_TURN_MAX = 2**31 - 1


class PackedMessages(Sequence[Message]):
    """Messages oldest first, appended only (``extend``); read as ``Message``s made anew at each read (equal to those
    appended, their ``tokens`` an equal mapping shared by every message with the same figures)."""

    def __init__(self) -> None:
        self._text = GrowingArray(np.uint8)
        self._rows = GrowingArray(_ROW, np.empty(0, _ROW))
        self._flags = GrowingArray(np.uint8)
        """Per message, its role's code (``_ROLES``) times two, plus one when it is valid."""
        self._counts: list[Mapping[str, int] | None] = [None]
        self._count_numbers: dict[tuple[tuple[str, int], ...], int] = {}
        self._whole: dict[int, Message] = {}
        """The messages kept as they are, by position (not plain: ``_plain``)."""

    def __len__(self) -> int:
        return len(self._flags)

    @overload
    def __getitem__(self, at: int) -> Message: ...

    @overload
    def __getitem__(self, at: slice) -> list[Message]: ...

    def __getitem__(self, at: int | slice) -> Message | list[Message]:
        if isinstance(at, slice):
            return [self._message(i) for i in range(*at.indices(len(self)))]
        if at < 0:
            at += len(self)
        if not 0 <= at < len(self):
            raise IndexError("message position out of range")
        return self._message(at)

    def __iter__(self) -> Iterator[Message]:
        return map(self._message, range(len(self)))

    def __eq__(self, other: object) -> bool:
        """Equal to a sequence of the same messages (read one by one: a comparison with a list is a full read)."""
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def content(self, at: int) -> str:
        """The text of the message at ``at`` (no message made)."""
        whole = self._whole.get(at)
        if whole is not None:
            return whole.content
        start, size, _, _ = self._rows.item(at)
        return self._text.bytes_of(start, start + size).decode()

    def role(self, at: int) -> str:
        """The role of the message at ``at`` (no message made)."""
        return _ROLES[self._flags.item(at) >> 1]

    def extend(self, messages: Sequence[Message]) -> None:
        """Append ``messages``, in order."""
        first = len(self)
        texts: list[bytes] = []
        rows: list[tuple[int, int, int, int]] = []
        flags: list[int] = []
        start = len(self._text)
        for position, message in enumerate(messages, first):
            flags.append(_ROLE_CODE[message.role] * 2 + message.valid)
            if not _plain(message):
                self._whole[position] = message
                rows.append((start, 0, 0, 0))
                continue
            text = message.content.encode()
            texts.append(text)
            rows.append((start, len(text), message.turn, self._counts_number(message.tokens)))
            start += len(text)
        self._text.extend(np.frombuffer(b"".join(texts), np.uint8))
        self._rows.extend(np.array(rows, dtype=_ROW))
        self._flags.extend(np.array(flags, dtype=np.uint8))

    def _message(self, at: int) -> Message:
        whole = self._whole.get(at)
        if whole is not None:
            return whole
        start, size, turn, counts = self._rows.item(at)
        flag = self._flags.item(at)
        text = self._text.bytes_of(start, start + size).decode()
        return Message(_ROLES[flag >> 1], text, turn, bool(flag & 1), (), None, None, None, self._counts[counts], None)

    def _counts_number(self, counts: Mapping[str, int] | None) -> int:
        """The number of ``counts`` in the table (0: none): a session's messages' counts repeat."""
        if counts is None:
            return 0
        key = tuple(counts.items())
        number = self._count_numbers.get(key)
        if number is None:
            number = self._count_numbers[key] = len(self._counts)
            self._counts.append(counts)
        return number


def _plain(message: Any) -> bool:
    """Whether every field of ``message`` has a column here: no tool call or result, name, phase or content parts, a
    turn a row holds."""
    return (
        type(message) is Message
        and not message.tool_calls
        and message.tool_call_id is None
        and message.name is None
        and message.phase is None
        and message.parts is None
        and 0 <= message.turn <= _TURN_MAX
        and (message.tokens is None or isinstance(message.tokens, dict))
    )
