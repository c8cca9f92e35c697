"""The newest turn's cut, made once for what it is made from.

A session's turn asks for its newest turn cut to the same room more than once: the work ahead (after a response) cuts
it for the next call's window, and that call's first step cuts it again to the same room (~0.6 ms of tokenising a
cut: ``cut_to_tokens`` and the counts of the cut texts). The cut depends only on the turn's messages, the room and
the counter, so the last few are kept per session and handed out again when all three are the same."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from components.context_window.base import Message, TokenCounter
from components.context_window.session_cache import BoundedCache

Unit = tuple[Message, ...]
Cut = tuple[Unit, ...] | None
KEPT_PER_SESSION = 4
"""A turn's steps cut at two or three rooms (the condense rule's, each step's loop room aside)."""


class TurnCuts:
    """Per session, the last ``KEPT_PER_SESSION`` cuts of a newest turn, with the units, room and counter they were
    made from."""

    def __init__(self, sessions: int = 64) -> None:
        self._kept: BoundedCache[str, list[tuple[TokenCounter, int, tuple[Unit, ...], Cut]]] = BoundedCache(sessions)

    def cut(
        self,
        session_id: str,
        units: Sequence[Unit],
        room: int,
        tokens: TokenCounter,
        make: Callable[[Sequence[Unit], int, TokenCounter], Cut],
    ) -> Cut:
        """``make(units, room, tokens)``, or the same cut made before from equal units, room and counter."""
        kept = self._kept.get(session_id)
        if kept is None:
            kept = self._kept.put(session_id, [])
        for counter, at, made_from, cut in kept:
            if counter is tokens and at == room and _same(made_from, units):
                return cut
        cut = make(units, room, tokens)
        kept.append((tokens, room, tuple(units), cut))
        del kept[:-KEPT_PER_SESSION]
        return cut

    def discard(self, session_id: str) -> None:
        self._kept.discard(session_id)


def _same(made_from: Sequence[Unit], units: Sequence[Unit]) -> bool:
    """Whether ``units`` are ``made_from``'s messages. Messages compare without their stored counts (``tokens``, a
    cache of what the counter makes of them: the work ahead's joined turn has none yet, the stored turn has them)."""
    return len(made_from) == len(units) and tuple(made_from) == tuple(units)
