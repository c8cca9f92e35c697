"""A summary block's key, made once for the messages the block holds.

Every call plans its windows' summaries, and the work ahead after each step plans the next call's (up to three asks),
each plan naming up to four blocks of ``SUMMARY_BLOCK`` messages by a key made of their transcript: ~10-30 KB of text
joined, pickled and digested, ~10 blocks a call at 100 gateway turns, nearly all of them blocks named before (a stored
history hands out the same messages call after call). The key depends on the block's messages alone (the bound and
instruction are the module's constants), so it is kept by the messages' identities and handed out again when the same
messages come. The messages are held weakly (a dead one, whose id another message may take, is a miss): the cache
keeps no history alive. The transcript itself is made again only when a summary is written (rare)."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence

from components.context_window.base import Message
from components.context_window.session_cache import BoundedCache

Key = tuple[str, str]
KEPT = 1024
"""Blocks kept in all (a session's plans name 4-8 at a time)."""


class BlockKeys:
    """Block keys by the session and the identities of the block's messages (held weakly, checked on a hit)."""

    def __init__(self, entries: int = KEPT) -> None:
        self._kept: BoundedCache[tuple[int | str, ...], tuple[tuple[weakref.ref[Message], ...], Key]] = BoundedCache(
            entries
        )

    def key(self, session_id: str, block: Sequence[Message], make: Callable[[Sequence[Message]], Key]) -> Key:
        """``make(block)``, or the key made before for these very messages in this session."""
        ids: tuple[int | str, ...] = (session_id, *map(id, block))
        found = self._kept.get(ids)
        if found is not None and all(ref() is m for ref, m in zip(found[0], block, strict=True)):
            return found[1]
        made = make(block)
        self._kept.put(ids, (tuple(map(weakref.ref, block)), made))
        return made

    def discard(self, session_id: str) -> None:
        self._kept.discard_where(lambda ids: ids[0] == session_id)
