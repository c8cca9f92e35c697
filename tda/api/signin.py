"""/v1/auth: browser sign-in with a token (then a session cookie + CSRF header), and who am I."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, g
from quart_schema import security_scheme, tag_blueprint, validate_request

from ..auth import authenticate, csrf_token, require, sign_in, sign_out
from ..service import service
from .schemas import SignInIn

bp = Blueprint("auth", __name__, url_prefix="/v1/auth")
tag_blueprint(bp, ["auth"])


@bp.post("/session")
@security_scheme([])  # the token is in the body: no credentials needed to present it
@validate_request(SignInIn)
async def create_session(data: SignInIn) -> dict[str, Any]:
    """Sign in with an API token: sets an HttpOnly session cookie; echo ``csrf_token`` as X-CSRF-Token on writes."""
    principal = await authenticate(data.token.strip(), "this API token is unknown or revoked")
    return {"name": principal.name, "role": principal.role, "csrf_token": await sign_in(principal)}


@bp.get("/session")
@require("viewer", "client")
async def whoami() -> dict[str, Any]:
    principal = g.principal
    return {"name": principal.name, "role": principal.role, "project": principal.project, "csrf_token": csrf_token()}


@bp.delete("/session")
@security_scheme([])  # signing out needs no credentials: holding the cookie is enough to end its session
async def delete_session() -> tuple[str, int]:
    """Sign out: the session ends on the server, so a copy of the cookie no longer works either."""
    await sign_out()
    return "", 204


@bp.delete("/sessions")
@require("viewer")
async def delete_all_sessions() -> dict[str, Any]:
    """Sign out everywhere: ends every browser session signed in with the caller's token (this one included), on
    every replica; copied cookies stop working too. The token itself stays valid (revoke it to end that)."""
    ended = await service().store.tokens.end_sessions_of(g.principal.token_id)
    await sign_out()
    return {"ended": ended}
