"""/v1/context-window-types: CRUD with ETags, versions and rollback, and the what-if preview."""

from __future__ import annotations

import json
import re
import weakref
from typing import Any

from quart import Blueprint, Response, request
from quart_schema import document_request, tag_blueprint, validate_request

from components.context_window.window_type import ContextWindowType

from ..auth import actor, require
from ..errors import Invalid
from ..preview import preview
from ..service import service
from ..store import StoredType
from ..store.types import TypeList
from ..type_metrics import version_metrics
from .common import if_match_version, json_object
from .openapi import if_match
from .profiles import check_limit_lowers
from .schemas import SLUG, LabelIn, PreviewIn, RollbackIn

bp = Blueprint("types", __name__, url_prefix="/v1/context-window-types")
tag_blueprint(bp, ["context-window-types"])
COMPUTED = ("etag", "version", "updated_at")
"""What GET adds to a type: a body GET returned can be sent back (read-modify-write); these are ignored
(the version a write applies to is the one in If-Match)."""


async def _type_body() -> dict[str, Any]:
    body = await json_object()
    for name in COMPUTED:
        body.pop(name, None)
    return body


def _out(stored: StoredType, status: int = 200) -> tuple[dict[str, Any], int, dict[str, str]]:
    return {**stored.to_dict(), "etag": stored.etag}, status, {"ETag": stored.etag}


_BODIES: weakref.WeakKeyDictionary[TypeList, bytes] = weakref.WeakKeyDictionary()
"""The list's JSON per generation of the current types: built once, not per request."""


@bp.get("")
@require("viewer")
async def list_types() -> Response:
    """All context window types, the default first."""
    current = await service().store.types.current()
    body = _BODIES.get(current)
    if body is None:
        default = next((t.id for t in current.types if t.type.is_default), None)
        types = [{**t.to_dict(), "etag": t.etag} for t in current.types]
        body = _BODIES[current] = json.dumps({"types": types, "default": default}, separators=(",", ":")).encode()
    return Response(body, mimetype="application/json")


@bp.post("")
@require("admin")
@document_request(ContextWindowType)
async def create_type() -> Any:
    """Create a type; ``is_default: true`` makes it the default (the previous default is demoted)."""
    svc = service()
    t = svc.validate_type(await _type_body())
    if t.id == "preview":  # POST /v1/context-window-types/preview is the what-if preview, not a type
        raise Invalid(
            "'preview' is reserved; choose another id",
            errors=[{"loc": "id", "msg": "'preview' is reserved", "type": "value_error"}],
        )
    return _out(await svc.store.types.create(t, actor()), 201)


@bp.post("/preview")
@require("viewer")
@validate_request(PreviewIn)
async def preview_type(data: PreviewIn) -> dict[str, Any]:
    """The snapshot a type (saved or unsaved) would produce for a session and query. Persists nothing."""
    svc = service()
    if data.context_limit is not None:  # like any override, a what-if limit can only lower the model's
        session = await svc.store.sessions.get(data.session_id)
        profile = await svc.store.profiles.get(data.profile_id or session.profile_id)
        check_limit_lowers(data.context_limit, profile.model or svc.settings.model)
    if data.type is not None:
        window_type: ContextWindowType = svc.validate_type(data.type, loc=("type",))
        version = None
    else:
        stored = await svc.store.types.get(data.type_id or "")
        window_type, version = stored.type, stored.version
    return await preview(
        svc,
        window_type,
        version,
        data.session_id,
        data.query,
        profile_id=data.profile_id,
        context_limit=data.context_limit,
    )


@bp.get("/<other_than(preview):type_id>")
@require("viewer")
async def get_type(type_id: str) -> Any:
    return _out(await service().store.types.get(type_id))


@bp.put("/<other_than(preview):type_id>")
@require("admin")
@if_match(required=True)
@document_request(ContextWindowType)
async def put_type(type_id: str) -> Any:
    """Replace a type. Needs ``If-Match: <ETag>`` (428 without, 412 if someone saved first)."""
    svc = service()
    body = await _type_body()
    if body.setdefault("id", type_id) != type_id:
        raise Invalid(
            "a type's id cannot change; create a new type instead",
            errors=[{"loc": "id", "msg": f"must be {type_id!r} (the id in the URL)", "type": "value_error"}],
        )
    t = svc.validate_type(body)  # a body that cannot be saved is 422 whatever the ETag
    expected = if_match_version(type_id)
    return _out(await svc.store.types.update(t, expected, actor()))


@bp.delete("/<other_than(preview):type_id>")
@require("admin")
@if_match(required=True)
async def delete_type(type_id: str) -> tuple[str, int]:
    """Delete a type. Needs ``If-Match``; 409 for the default type or one bound to profiles."""
    expected = if_match_version(type_id)
    await service().store.types.delete(type_id, expected, actor())
    return "", 204


@bp.get("/<type_id>/versions")
@require("viewer")
async def type_versions(type_id: str) -> dict[str, Any]:
    """Every version of the type, newest first."""
    return {"type_id": type_id, "versions": await service().store.types.versions(type_id)}


@bp.post("/<type_id>/rollback")
@require("admin")
@if_match(required=False)
@validate_request(RollbackIn)
async def rollback_type(type_id: str, data: RollbackIn) -> Any:
    """Make an old version current again, as a new version (If-Match optional; checked when sent)."""
    svc = service()
    expected = if_match_version(type_id) if "If-Match" in request.headers else None  # an empty one is refused
    old = await svc.store.types.version(type_id, data.version)
    svc.validate_type(old.model_dump(mode="json"))  # still valid against the installed modules?
    return _out(await svc.store.types.rollback(type_id, data.version, expected, actor()))


@bp.get("/<type_id>/metrics")
@require("viewer")
async def type_metrics(type_id: str) -> dict[str, Any]:
    """What each version of the type did to the traffic it served: turns, windows, tokens, cost, cache reuse,
    utilisation and condensations, per version and per day (from the recorded snapshots)."""
    svc = service()
    await svc.store.types.get(type_id)  # 404 for an unknown type
    return {"type_id": type_id, **version_metrics(await svc.store.sessions.type_figures(type_id))}


@bp.get("/<type_id>/labels")
@require("viewer")
async def type_labels(type_id: str) -> dict[str, Any]:
    """The type's labels (``production``, ``staging``, ...): the version each is on, who put it there and why."""
    return {"type_id": type_id, "labels": await service().store.types.labels(type_id)}


@bp.put("/<type_id>/labels/<label>")
@require("admin")
@validate_request(LabelIn)
async def move_label(type_id: str, label: str, data: LabelIn) -> dict[str, Any]:
    """Put a label on a version, from wherever it was: profiles bound by the label run that version from their next
    turn (the rollout; moving it back is the rollback). Audited with its reason and
    the experiment that justified it, if one did."""
    if not re.fullmatch(SLUG, label):
        msg = "a label is 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
        raise Invalid(f"{label!r} is not a label: {msg}", errors=[{"loc": "label", "msg": msg, "type": "value_error"}])
    types = service().store.types
    return await types.move_label(type_id, label, data.version, data.reason, actor(), data.experiment_id)


@bp.delete("/<type_id>/labels/<label>")
@require("admin")
async def remove_label(type_id: str, label: str) -> tuple[str, int]:
    """Take a label off the type; 409 while profiles are bound by it."""
    await service().store.types.remove_label(type_id, label, actor())
    return "", 204
