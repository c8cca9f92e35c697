"""Whose champion cases a window may show: the scope every case is recorded in and every search is bound to.

A case records the profile, the session and its user it came from, and whether its answer may quote tool data
(``from_tools``: its turn's tool loop ran, or an earlier turn's whose results its history may show). A window for a
session of profile P may show a case of P only, and only as the profile's ``case_sharing`` allows:

* ``session``: the session's own cases;
* ``user`` (the default): also the same user's cases from their other sessions, unless built on tool results. The
  user ``anonymous`` (sessions created without one) is nobody in particular: such sessions see only their own;
* ``profile``: every case of P (sharing across users, chosen on purpose).

Cases recorded before scopes existed carry no profile: they are never served (fail closed).
A session is told apart by its id and its creation time, so a deleted session's cases never reach a new session
created later under the same id.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from components.context_window.base import CaseSharing

ANONYMOUS = "anonymous"
"""The user of sessions created without one: not a real user, so nothing is shared on its account."""


@dataclass(frozen=True, slots=True)
class CaseScope:
    """The session a window is assembled for (or a case was recorded in), and its profile's ``case_sharing``."""

    profile_id: str
    session_key: str
    """The session's id and creation time (``session_key()``): unique even when an id is reused."""
    user_id: str = ANONYMOUS
    sharing: CaseSharing = "user"
    others_only: bool = False
    """Leave the session's own cases out: a chat client's window, whose conversation already holds what its
    session said (and a retried or edited turn must not come back as an example)."""

    @property
    def real_user(self) -> bool:
        return bool(self.user_id) and self.user_id != ANONYMOUS

    def owner(self, from_tools: bool) -> str:
        """What a case recorded here belongs to: the narrowest scope it is served in. Identical turns of one owner
        are one case (one rating); two users' (or sessions') identical turns are two."""
        if self.sharing == "profile":
            return f"profile\x00{self.profile_id}"
        if self.sharing == "user" and self.real_user and not from_tools:
            return f"user\x00{self.profile_id}\x00{self.user_id}"
        return f"session\x00{self.profile_id}\x00{self.session_key}"

    def metadata(self, from_tools: bool) -> dict[str, Any]:
        """What a case recorded here keeps of its scope (the fields ``allows`` and ``where`` read)."""
        return {
            "profile_id": self.profile_id,
            "user_id": self.user_id,
            "session_key": self.session_key,
            "from_tools": bool(from_tools),
        }

    def allows(self, meta: dict[str, Any]) -> bool:
        """May a window of this scope show the case with this metadata?"""
        if not self.profile_id or meta.get("profile_id") != self.profile_id:
            return False
        if self.others_only and meta.get("session_key") == self.session_key:
            return False
        if self.sharing == "profile":
            return True
        if self.session_key and meta.get("session_key") == self.session_key:
            return True
        return (
            self.sharing == "user"
            and self.real_user
            and meta.get("user_id") == self.user_id
            and meta.get("from_tools", True) is False  # a case without the flag may quote tool data
        )

    def groups(self) -> tuple[tuple[str, ...], ...]:
        """The groups of cases (``case_groups``) this scope may see: the cases it ``allows`` are those in one."""
        if not self.profile_id:
            return ()
        if self.sharing == "profile":
            return (("profile", self.profile_id),)
        own = () if self.others_only else (("session", self.profile_id, self.session_key),)
        if self.sharing == "user" and self.real_user:
            return (*own, ("user", self.profile_id, self.user_id))
        return own

    def where(self) -> dict[str, Any]:
        """``allows`` as a Chroma ``where`` clause."""
        profile: dict[str, Any] = {"profile_id": self.profile_id}
        if self.others_only:
            profile = {"$and": [profile, {"session_key": {"$ne": self.session_key}}]}
        if self.sharing == "profile":
            return profile
        users = {"$and": [{"user_id": self.user_id}, {"from_tools": False}]}
        shared = self.sharing == "user" and self.real_user
        if self.others_only:
            return {"$and": [profile, users]} if shared else {"$and": [profile, {"profile_id": {"$eq": ""}}]}
        own: dict[str, Any] = {"session_key": self.session_key}
        return {"$and": [profile, {"$or": [own, users]} if shared else own]}


def case_groups(meta: dict[str, Any]) -> tuple[tuple[str, ...], ...]:
    """The groups a case is in, by its metadata: its profile's, its session's, and its user's when it is tool-free.
    An index of cases by group finds a scope's cases without reading every case (``CaseScope.groups``)."""
    profile = meta.get("profile_id")
    if not profile:
        return ()
    groups = [("profile", str(profile)), ("session", str(profile), str(meta.get("session_key")))]
    if meta.get("from_tools", True) is False:
        groups.append(("user", str(profile), str(meta.get("user_id"))))
    return tuple(groups)


NOWHERE = CaseScope(profile_id="", session_key="")
"""A scope no case is in (warming up the search)."""


def session_key(session_id: str, created_at: datetime) -> str:
    """A session told apart from an earlier one deleted under the same id."""
    aware = created_at if created_at.tzinfo else created_at.replace(tzinfo=UTC)  # SQLite drops the zone
    return f"{session_id}@{aware.isoformat()}"


def case_id(query: str, answer: str, owner: str) -> str:
    """A case's id: its content (whitespace aside) and the scope it belongs to (``CaseScope.owner``)."""
    text = f"{owner}\x00{' '.join(query.split())}\x00{' '.join(answer.split())}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]
