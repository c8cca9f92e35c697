"""GET /v1/models: what an OpenAI client may send as ``model``, in OpenAI's list shape.

``tda`` is the default profile (its model); ``tda/<profile_id>`` selects that profile (``profile_of_model``);
the plain names are the models the profiles call (each profile's, else the service's ``TDA_MODEL``), which a
chat request may also name to call that model under its session's profile.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from quart import Blueprint
from quart_schema import tag_blueprint

from .. import scope
from ..auth import require
from ..errors import NotFound, ServiceError
from ..llm import provider_of
from ..service import TDAService, service
from ..sources import aware_utc
from .errors import openai_error
from .openapi import openai_json

bp = Blueprint("models", __name__, url_prefix="/v1/models")
tag_blueprint(bp, ["chat"])

DEFAULT_MODEL_ID = "tda"
PROFILE_PREFIX = "tda/"
DEFAULT_PROFILE = "default"
"""The profile ``tda`` means in the default project (chat.py creates it on first use)."""


def default_profile() -> str:
    """The profile ``tda`` means in the caller's project: ``default``, or ``<project>.default`` (profile ids are
    unique across projects)."""
    project = scope.owner()
    return DEFAULT_PROFILE if project == scope.DEFAULT_PROJECT else f"{project}.{DEFAULT_PROFILE}"


def profile_of_model(name: str) -> str | None:
    """The profile a chat request's ``model`` selects: ``<profile_id>`` for ``tda/<profile_id>``, else None."""
    if name.startswith(PROFILE_PREFIX) and len(name) > len(PROFILE_PREFIX):
        return name[len(PROFILE_PREFIX) :]
    return None


@bp.errorhandler(ServiceError)
async def as_openai_error(exc: ServiceError) -> tuple[dict[str, Any], int]:
    return openai_error(exc.status, exc.message, exc.code)


@bp.get("")
@openai_json
@require("viewer", "client")
async def list_models() -> dict[str, Any]:
    """The models a chat request may name: ``tda``, ``tda/<profile_id>`` for each profile, and the models the
    profiles call."""
    return {"object": "list", "data": await _entries(service())}


@bp.get("/<path:model_id>")
@openai_json
@require("viewer", "client")
async def get_model(model_id: str) -> dict[str, Any]:
    """One entry of ``GET /v1/models``."""
    for entry in await _entries(service()):
        if entry["id"] == model_id:
            return entry
    raise ModelNotFound(
        f"the model {model_id!r} does not exist here; GET /v1/models lists the names to send "
        "('tda', 'tda/<profile_id>' or a model a profile calls)"
    )


class ModelNotFound(NotFound):
    code = "model_not_found"


async def _entries(svc: TDAService) -> list[dict[str, Any]]:
    profiles = await svc.store.profiles.all()
    default = next((p for p in profiles if p.id == default_profile()), None)
    entries = [_entry(DEFAULT_MODEL_ID, default.created_at if default else None, "tda")]
    entries += [_entry(f"{PROFILE_PREFIX}{p.id}", p.created_at, "tda") for p in profiles]
    first_use: dict[str, datetime | None] = {svc.settings.model: None}
    for p in sorted(profiles, key=lambda p: p.created_at, reverse=True):  # the earliest profile's time stays
        first_use[p.model or svc.settings.model] = p.created_at
    for name in sorted(first_use):
        entries.append(_entry(name, first_use[name], await provider_of(name) or "upstream"))
    return entries


def _entry(model_id: str, created: datetime | None, owner: str) -> dict[str, Any]:
    return {
        "id": model_id,
        "object": "model",
        "created": int(aware_utc(created).timestamp()) if created else 0,
        "owned_by": owner,
    }
