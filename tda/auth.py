"""Who is calling: a bearer API token, or a browser session cookie (signed in with a token) plus a CSRF header.

Roles: ``viewer`` reads and streams; ``admin`` also changes things.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any, TypeVar

from quart import g, request, session

from .clients import client_address
from .errors import Forbidden, Unauthorized
from .service import service
from .store.tokens import Principal

SESSION_KEY = "tda_auth"
CSRF_HEADER = "X-CSRF-Token"
API_KEY_HEADER = "x-api-key"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
RANK = {"viewer": 0, "admin": 1}
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


async def authenticate(token: str, refusal: str) -> Principal:
    """The principal of an API token; a wrong one counts against the client's limit of failed attempts (429 once
    it is reached). A valid token is never refused by that limit: the failures of another program behind the same
    address (a proxy, a NAT, a misconfigured agent) must not lock its valid tokens out. Guessing gains nothing
    from this: a token is 256 random bits, and past the limit a wrong one is still 429."""
    principal = await service().store.tokens.authenticate(token)
    if principal is None:
        limit, client = service().failed_auth, client_address()
        limit.check(client)
        limit.failed(client)
        raise Unauthorized(refusal)
    return principal


async def _from_bearer(header: str) -> Principal:
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("use 'Authorization: Bearer <token>'")
    return await authenticate(
        token.strip(), "this API token is unknown or revoked; create one with `tda tokens create --role admin`"
    )


async def _from_cookie(data: dict[str, Any]) -> Principal:
    session_id = data.get("id")
    principal = await service().store.tokens.session_principal(session_id) if isinstance(session_id, str) else None
    if principal is None:
        session.pop(SESSION_KEY, None)
        raise Unauthorized("your sign-in ended (signed out, expired, or the token was revoked); sign in again")
    if request.method not in SAFE_METHODS:
        sent = request.headers.get(CSRF_HEADER, "")
        if not sent or not hmac.compare_digest(sent, str(data.get("csrf", ""))):
            raise Forbidden(f"missing or wrong {CSRF_HEADER} header; read csrf_token from GET /v1/auth/session")
    return principal


async def current_principal() -> Principal:
    header = request.headers.get("Authorization")
    if header:
        return await _from_bearer(header)
    if key := request.headers.get(API_KEY_HEADER, "").strip():  # how the Anthropic SDKs send their key
        return await authenticate(
            key, "this API token (x-api-key) is unknown or revoked; create one with `tda tokens create`"
        )
    data = session.get(SESSION_KEY)
    if isinstance(data, dict):
        return await _from_cookie(data)
    raise Unauthorized(
        "authentication required: send 'Authorization: Bearer <token>' or 'x-api-key: <token>' (create one with "
        "`tda tokens create --role admin`) or sign in at POST /v1/auth/session"
    )


def require(role: str) -> Callable[[F], F]:
    """Route decorator: the caller must hold ``role`` or a higher one."""

    def decorate(view: F) -> F:
        @wraps(view)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            principal = await current_principal()
            if RANK[principal.role] < RANK[role]:
                raise Forbidden(f"this needs the {role} role; your token has {principal.role}")
            g.principal = principal
            return await view(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def actor() -> str:
    return g.principal.actor


async def sign_in(principal: Principal) -> str:
    """Start a browser session for ``principal`` (kept server-side: the cookie holds its random id); returns the
    CSRF token the page must echo on writes."""
    csrf = secrets.token_urlsafe(32)
    session[SESSION_KEY] = {"id": await service().store.tokens.start_session(principal.token_id), "csrf": csrf}
    session.permanent = False
    return csrf


def csrf_token() -> str | None:
    data = session.get(SESSION_KEY)
    return data.get("csrf") if isinstance(data, dict) else None


async def sign_out() -> None:
    """End the session on the server too: the same cookie, copied or replayed, signs nobody in afterwards."""
    data = session.pop(SESSION_KEY, None)
    if isinstance(data, dict) and isinstance(data.get("id"), str):
        await service().store.tokens.end_session(data["id"])
