"""A recall window asked again by a later step of the same turn, answered with the first step's.

Every step of a turn's tool loop asks for the window its first step filled (the handler's fill pass offers each step
the first step's room: "so each gets the first step's answer"), and a recall window is the history module's most
costly answer (whether to recall, the newest units walked, the ranking gathered, ~100-200 units priced and packed,
~0.8 ms at 100 gateway turns). Its answer depends only on what it is asked (the room, the strategy, the options), the
query, the turn and its phase, the counter, the recall and the history: when all of those are the same, the answer
made before is handed out again. The history is compared only when it is a list the client sent (the gateway's
conversation: the messages a call lends the next are the same objects, so the comparison is by identity, in C); a
stored history (read page by page) and the work ahead's joined one are walked again."""

from __future__ import annotations

from typing import Any

from components.context_window.base import AssemblyContext, Contribution, InMemoryMessages
from components.context_window.session_cache import BoundedCache

KEPT_PER_SESSION = 4
"""A step asks for three or four recall windows (the condense rule's, the allocation's, the fill's)."""


def asked_key(ctx: AssemblyContext, recall: Any, budget: int, strategy: str | None, recall_pct: float) -> tuple | None:
    """What a recall window is made from (``budget``: what the window is asked for, before the tool loop's room, which
    the history and the directives decide), or None when its history is not a list of messages held (a stored history
    is read page by page, the work ahead's is joined)."""
    source = ctx.session.message_source()
    if type(source) is not InMemoryMessages or not ctx.session.id:
        return None
    session = ctx.session
    asked = (budget, strategy, recall_pct, ctx.directives, ctx.query, session.turn_number, session.phase)
    return session.id, id(ctx.tokens), id(recall), asked, source.messages


class AskedWindows:
    """Per session, its last ``KEPT_PER_SESSION`` recall windows with what each was made from (``asked_key``) and
    the counter and recall that made it (held, so that their ids stay theirs)."""

    def __init__(self, sessions: int = 64) -> None:
        self._kept: BoundedCache[str, list[tuple[tuple, tuple[Any, Any], Contribution]]] = BoundedCache(sessions)

    def get(self, key: tuple | None) -> Contribution | None:
        """The window made before under an equal ``key`` (None: none, or no key)."""
        for made_from, _, window in (self._kept.get(key[0]) or ()) if key is not None else ():
            if made_from == key:
                return window
        return None

    def keep(self, key: tuple | None, held: tuple[Any, Any], window: Contribution) -> Contribution:
        """``window``, kept under ``key`` (unless None)."""
        if key is None:
            return window
        kept = self._kept.get(key[0])
        if kept is None:
            kept = self._kept.put(key[0], [])
        kept.append((key, held, window))
        del kept[:-KEPT_PER_SESSION]
        return window

    def discard(self, session_id: str) -> None:
        self._kept.discard(session_id)
