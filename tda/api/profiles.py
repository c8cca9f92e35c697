"""/v1/profiles: agent configurations that bind a context window type."""

from __future__ import annotations

from typing import Any

from quart import Blueprint
from quart_schema import tag_blueprint, validate_request

from components.context_window.token_estimator import resolve_model_limit

from ..analytics import cost_totals
from ..auth import actor, require
from ..errors import Invalid
from ..service import service
from ..store.profiles import profile_dict
from ..upstream_policy import UpstreamRefused
from .common import check_same_as_stored
from .schemas import ProfileIn, ProfilePatch

bp = Blueprint("profiles", __name__, url_prefix="/v1/profiles")
tag_blueprint(bp, ["profiles"])


def check_limit_lowers(limit: int | None, model: str, loc: str = "context_limit") -> None:
    """An override may only lower the model's limit: a larger one would promise tokens the model lacks."""
    if limit is None:
        return
    model_limit, _ = resolve_model_limit(model)
    if limit > model_limit:
        raise Invalid(
            f"{loc} {limit:,} is above {model}'s limit of {model_limit:,}; overrides can only lower it",
            errors=[
                {"loc": loc, "msg": f"must be at most {model_limit} (the model's limit)", "type": "less_than_equal"}
            ],
        )


def check_upstream_allowed(upstream: dict[str, Any] | None) -> None:
    """The operator's policy (tda/upstream_policy.py) on the key variable and host a profile names."""
    try:
        service().llm.check_profile_upstream(upstream or {})
    except UpstreamRefused as exc:
        loc = f"upstream.{exc.field}"
        raise Invalid(f"{loc}: {exc}", errors=[{"loc": loc, "msg": str(exc), "type": "value_error"}]) from None


NULLABLE = frozenset({"context_window_type_id", "context_window_type_label", "context_limit", "model"})


def _patch_fields(data: ProfilePatch) -> dict[str, Any]:
    """Fields the caller sent; null means "clear" only where clearing makes sense (it is ignored elsewhere)."""
    return {k: v for k, v in data.changes().items() if v is not None or k in NULLABLE}


@bp.get("")
@require("viewer")
async def list_profiles() -> dict[str, Any]:
    return {"profiles": [profile_dict(p) for p in await service().store.profiles.all()]}


@bp.post("")
@require("admin")
@validate_request(ProfileIn)
async def create_profile(data: ProfileIn) -> tuple[dict[str, Any], int]:
    svc = service()
    check_limit_lowers(data.context_limit, data.model or svc.settings.model)
    check_upstream_allowed(data.upstream.model_dump())
    row = await svc.store.profiles.create(data.id, data.model_dump(exclude={"id"}), actor())
    return profile_dict(row), 201


@bp.get("/<profile_id>")
@require("viewer")
async def get_profile(profile_id: str) -> dict[str, Any]:
    return profile_dict(await service().store.profiles.get(profile_id))


@bp.get("/<profile_id>/analytics")
@require("viewer")
async def profile_analytics(profile_id: str) -> dict[str, Any]:
    """What the profile's model calls cost: tokens and dollars over all its sessions, and per session (most
    expensive first). Calls to a model without a known price are counted apart, never as $0."""
    svc = service()
    await svc.store.profiles.get(profile_id)  # 404 for an unknown profile
    calls = await svc.store.sessions.model_calls_of_profile(profile_id)
    per_session: dict[str, list[dict[str, Any] | None]] = {}
    for session_id, call in calls:
        per_session.setdefault(session_id, []).append(call)
    sessions = [{"session_id": sid, **cost_totals(session_calls)} for sid, session_calls in per_session.items()]
    sessions.sort(key=lambda s: -(s["total_usd"] or 0.0))
    return {"profile_id": profile_id, "summary": cost_totals(c for _, c in calls), "sessions": sessions}


@bp.patch("/<profile_id>")
@require("admin")
@validate_request(ProfilePatch)
async def update_profile(profile_id: str, data: ProfilePatch) -> dict[str, Any]:
    """Change some fields (null clears context_window_type_id, context_window_type_label, context_limit and
    model). A label must be on the bound type (422 otherwise)."""
    svc = service()
    current = await svc.store.profiles.get(profile_id)
    check_same_as_stored(data, profile_dict(current))
    fields = _patch_fields(data)
    limit = fields.get("context_limit", current.context_limit)
    check_limit_lowers(limit, fields.get("model", current.model) or svc.settings.model)
    check_upstream_allowed(fields.get("upstream"))
    return profile_dict(await svc.store.profiles.update(profile_id, fields, actor()))


@bp.delete("/<profile_id>")
@require("admin")
async def delete_profile(profile_id: str) -> tuple[str, int]:
    """409 while sessions use the profile."""
    await service().store.profiles.delete(profile_id, actor())
    return "", 204
