"""Server-rendered pages of the admin UI under /ui: thin shells around the /v1 API.

Each page renders the frame (navigation, who is signed in, the CSRF token) and names the ES module that
fills it from the API with the session cookie. Pages need a signed-in browser; viewers see the same
pages with every control disabled, and the API refuses their writes anyway.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any
from urllib.parse import quote

from quart import Blueprint, redirect, render_template, request
from quart_schema import hide

from .auth import csrf_token, current_principal, enter
from .errors import NotFound, ServiceError
from .service import service
from .store.tokens import Principal

bp = Blueprint("ui", __name__, url_prefix="/ui")

SESSION_LIMIT_FLOOR = 4096
"""The context-limit slider starts here: smaller windows cannot hold a system prompt and tools usefully."""

NAV = (
    ("types", "Window types"),
    ("modules", "Modules"),
    ("profiles", "Profiles"),
    ("sessions", "Sessions"),
    ("audit", "Audit log"),
)

View = Callable[..., Awaitable[Any]]


async def _signed_in() -> Principal | None:
    try:
        return await current_principal()
    except ServiceError:
        return None


def page(template: str, section: str) -> Callable[[View], View]:
    """A page for signed-in users: the view returns extra template variables; strangers go to sign-in."""

    def decorate(view: View) -> View:
        @wraps(view)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            principal = await _signed_in()
            if principal is None:
                return redirect(f"/ui/sign-in?next={quote(request.full_path.rstrip('?'))}")
            frame = {"principal": principal, "csrf": csrf_token() or "", "nav": NAV, "section": section}
            if principal.role == "client":  # an agent's token: it chats, it administers nothing
                message = "a client token only chats (the OpenAI routes); sign in with a viewer or admin token"
                return await render_template("error.html", status=403, message=message, **frame), 403
            enter(principal)
            try:
                extra = await view(*args, **kwargs)
            except ServiceError as exc:  # e.g. an unknown session id in the address: say so on a page
                return await render_template("error.html", status=exc.status, message=exc.message, **frame), exc.status
            return await render_template(template, **frame, **extra)

        return hide(wrapper)

    return decorate


@bp.get("/sign-in")
@hide
async def sign_in() -> str:
    target = request.args.get("next", "/ui/types")
    return await render_template("sign_in.html", next=target if target.startswith("/ui") else "/ui/types")


@bp.get("/")
@hide
async def home() -> Any:
    return redirect("/ui/types")


@bp.get("/types")
@page("types.html", "types")
async def types() -> dict[str, Any]:
    return {}


@bp.get("/types/new")
@page("editor.html", "types")
async def new_type() -> dict[str, Any]:
    return {"type_id": "", "copy_of": request.args.get("from", "")}


@bp.get("/types/<type_id>")
@page("editor.html", "types")
async def edit_type(type_id: str) -> dict[str, Any]:
    """The editor of a saved type (an unknown id gets a 404 page, not an empty editor)."""
    await service().store.types.get(type_id)
    return {"type_id": type_id, "copy_of": ""}


@bp.get("/modules")
@page("modules.html", "modules")
async def modules() -> dict[str, Any]:
    return {}


@bp.get("/profiles")
@page("profiles.html", "profiles")
async def profiles() -> dict[str, Any]:
    return {"service_model": service().settings.model}


@bp.get("/sessions")
@page("sessions.html", "sessions")
async def sessions() -> dict[str, Any]:
    return {"service_model": service().settings.model}  # offered in the model filter


@bp.get("/audit")
@page("audit.html", "audit")
async def audit() -> dict[str, Any]:
    return {}


@bp.get("/experiments")
@page("experiments.html", "types")
async def experiments() -> dict[str, Any]:
    return {}


@bp.get("/experiments/<experiment_id>")
@page("experiment.html", "types")
async def experiment(experiment_id: str) -> dict[str, Any]:
    """One experiment: progress, totals, deltas per turn (an unknown id, or another project's, gets a 404 page)."""
    row = await service().store.experiments.get(experiment_id)
    return {"experiment_id": row.id}


@bp.get("/compare")
@page("compare.html", "sessions")
async def compare() -> dict[str, Any]:
    """Two turns' windows side by side (of one session or two); the page reads its picks from the address."""
    return {}


@bp.get("/sessions/<session_id>")
@page("panel.html", "sessions")
async def panel(session_id: str) -> dict[str, Any]:
    """The context panel (an unknown session id gets a 404 page)."""
    session = await service().store.sessions.get(session_id)
    return {"session_id": session.id, "limit_floor": SESSION_LIMIT_FLOOR}


@bp.get("/sessions/<session_id>/turns/<int(max=2147483647):turn>")
@page("trace.html", "sessions")
async def turn_trace(session_id: str, turn: int) -> dict[str, Any]:
    """One turn's trace: the window as sent, module by module (an unknown session or turn gets a 404 page)."""
    store = service().store.sessions
    session = await store.get(session_id)
    row = await store.turn(session_id, turn)
    if row.snapshot_id is None:
        raise NotFound(f"turn {turn} of session {session_id!r} has no recorded snapshot to trace")
    return {
        "session_id": session.id,
        "session_title": session.title or session.id,
        "turn": turn,
        "snapshot_id": row.snapshot_id,
        "previous": await _traced(session_id, turn - 1),
        "next": await _traced(session_id, turn + 1),
    }


async def _traced(session_id: str, turn: int) -> int | None:
    """``turn`` when it exists and has a snapshot to trace (turn numbers are dense), else None."""
    try:
        row = await service().store.sessions.turn(session_id, turn)
    except NotFound:
        return None
    return turn if row.snapshot_id is not None else None
