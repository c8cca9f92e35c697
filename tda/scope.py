"""The project a request acts in: set once by authentication, read by the store, which applies it to every query
(``tda/store/projects.py``), so another project's rows are simply not there (404), wherever they are asked for.

``None`` acts in every project: the operator's tokens, the CLI and start-up. Work a request starts (a background
task, a thread through ``asyncio.to_thread``) copies the context, so it stays in the request's project.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from .errors import Forbidden

DEFAULT_PROJECT = "default"
"""Where data made before projects existed lives, and what is created with no project named."""


@dataclass(frozen=True)
class Acting:
    project: str | None
    """The project whose rows are visible; None: every project's."""
    shared: bool
    """May change what every project shares (shipped types, the default type, modules, component instructions):
    the operator, and the ``default`` project's admins (who administered the whole server before projects)."""


EVERYWHERE = Acting(None, shared=True)
_ACTING: ContextVar[Acting] = ContextVar("tda_acting", default=EVERYWHERE)


def acting() -> Acting:
    return _ACTING.get()


def current() -> str | None:
    """The project rows are filtered to (None: unfiltered)."""
    return _ACTING.get().project


def owner() -> str:
    """The project a row created now belongs to."""
    return _ACTING.get().project or DEFAULT_PROJECT


def act_as(acting: Acting) -> None:
    """For the rest of this request (its task and what it starts)."""
    _ACTING.set(acting)


@contextlib.contextmanager
def everywhere() -> Iterator[None]:
    """Unfiltered for the block: reading the token that says which project a request acts in."""
    token = _ACTING.set(EVERYWHERE)
    try:
        yield
    finally:
        _ACTING.reset(token)


def require_shared(what: str) -> None:
    """403 unless the caller may change what every project shares."""
    if not _ACTING.get().shared:
        raise Forbidden(
            f"{what} is shared by every project; only an operator token or an admin of the "
            f"{DEFAULT_PROJECT!r} project may change it"
        )
