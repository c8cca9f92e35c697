"""API tokens: random secrets shown once, stored as SHA-256 hashes, each with a role."""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, timedelta
from typing import Any, Literal

from sqlalchemy import Select, bindparam, delete, select

from components.context_window.session_cache import BoundedCache

from ..db import Database
from ..errors import NotFound
from ..models import ApiTokenRow, BrowserSessionRow, utcnow
from ..roles import ROLES as ROLES
from . import audit

Role = Literal["admin", "viewer"]
TOKEN_PREFIX = "tda_"


def hash_token(token: str) -> str:
    # Tokens carry 256 random bits, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Principal:
    token_id: int
    name: str
    role: str

    @property
    def actor(self) -> str:
        return f"token:{self.name}#{self.token_id}"


def token_dict(row: ApiTokenRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": row.name,
        "role": row.role,
        "created_at": row.created_at.isoformat(),
        "revoked": row.revoked_at is not None,
    }


SESSION_MAX_AGE = timedelta(days=7)
"""A browser sign-in ends after this even if its window stays open (rows older are deleted at the next sign-in)."""

CACHE_TTL_S = 1.0
"""How long a verified token (or a sign-in's token) is trusted without reading it again: a revocation through
another replica or the CLI takes effect within this, with nothing to publish. Revoking here clears it at once."""

# Built once: a statement built per request cost more than the cache lookup that usually answers it.
_BY_HASH = select(ApiTokenRow).where(ApiTokenRow.token_hash == bindparam("key"))
_BY_ID = select(ApiTokenRow).where(ApiTokenRow.id == bindparam("key"))


class TokenStore:
    def __init__(self, db: Database, cache_ttl_s: float = CACHE_TTL_S) -> None:
        self.db = db
        self.cache_ttl_s = cache_ttl_s
        self._cache: BoundedCache[str | int, tuple[float, Principal | None]] = BoundedCache(10_000)
        """token hash, or token id for a browser sign-in -> (expiry, principal): one read per token per second
        instead of one per request."""

    async def create(self, name: str, role: str, actor: str = "cli") -> tuple[str, ApiTokenRow]:
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        async with self.db.write() as s:
            row = ApiTokenRow(name=name, role=role, token_hash=hash_token(token))
            s.add(row)
            await s.flush()
            audit.record(s, actor, "create", "api_token", str(row.id), None, token_dict(row))
        return token, row

    async def authenticate(self, token: str) -> Principal | None:
        return await self._cached(hash_token(token), _BY_HASH)

    async def principal(self, token_id: int) -> Principal | None:
        """The token behind a browser session, re-read (at most a second later) so a revoked token ends its
        sessions too."""
        return await self._cached(token_id, _BY_ID)

    async def _cached(self, key: str | int, query: Select[ApiTokenRow]) -> Principal | None:
        now = time.monotonic()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        async with self.db.read() as s:
            row = await s.scalar(query, {"key": key})
        principal = None if row is None or row.revoked_at is not None else Principal(row.id, row.name, row.role)
        self._cache.put(key, (now + self.cache_ttl_s, principal))
        return principal

    async def start_session(self, token_id: int) -> str:
        """A new browser session for ``token_id``: the random id its cookie carries (stored hashed)."""
        session_id = secrets.token_urlsafe(32)
        async with self.db.write() as s:
            await s.execute(delete(BrowserSessionRow).where(BrowserSessionRow.created_at < utcnow() - SESSION_MAX_AGE))
            s.add(BrowserSessionRow(id_hash=hash_token(session_id), token_id=token_id))
        return session_id

    async def session_principal(self, session_id: str) -> Principal | None:
        """Who a browser session is, read every time (not cached), so a sign-out on any replica counts at once;
        None once it has ended or expired, or its token was revoked."""
        async with self.db.read() as s:
            row = await s.get(BrowserSessionRow, hash_token(session_id))
        if row is None:
            return None
        started = row.created_at if row.created_at.tzinfo else row.created_at.replace(tzinfo=UTC)  # SQLite: naive
        if started < utcnow() - SESSION_MAX_AGE:
            return None
        return await self.principal(row.token_id)

    async def end_session(self, session_id: str) -> None:
        async with self.db.write() as s:
            await s.execute(delete(BrowserSessionRow).where(BrowserSessionRow.id_hash == hash_token(session_id)))

    async def end_sessions_of(self, token_id: int) -> int:
        """Sign out everywhere: end every browser session signed in with ``token_id``; returns how many."""
        async with self.db.write() as s:
            return await _end_sessions(s, [token_id])

    async def all(self) -> list[ApiTokenRow]:
        async with self.db.read() as s:
            return list((await s.scalars(select(ApiTokenRow).order_by(ApiTokenRow.id))).all())

    async def revoke(self, token_id: int, actor: str) -> None:
        async with self.db.write() as s:
            row = await s.get(ApiTokenRow, token_id)
            if row is None:
                raise NotFound(f"no API token {token_id}")
            row.revoked_at = row.revoked_at or utcnow()
            await _end_sessions(s, [token_id])  # on every replica at once: their caches may still hold the token
            self._cache.clear()
            audit.record(s, actor, "revoke", "api_token", str(token_id), None, token_dict(row))

    async def revoke_named(self, name: str, actor: str) -> int:
        async with self.db.write() as s:
            rows = (
                await s.scalars(select(ApiTokenRow).where(ApiTokenRow.name == name, ApiTokenRow.revoked_at.is_(None)))
            ).all()
            for row in rows:
                row.revoked_at = utcnow()
                audit.record(s, actor, "revoke", "api_token", str(row.id), None, token_dict(row))
            await _end_sessions(s, [row.id for row in rows])
            self._cache.clear()
        return len(rows)


async def _end_sessions(s: Any, token_ids: list[int]) -> int:
    if not token_ids:
        return 0
    done = await s.execute(delete(BrowserSessionRow).where(BrowserSessionRow.token_id.in_(token_ids)))
    return int(done.rowcount or 0)
