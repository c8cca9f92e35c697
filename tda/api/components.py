"""/v1/component-instructions: how to use each UI component, sent to the model for the profile's components."""

from __future__ import annotations

import re
from typing import Any

from quart import Blueprint
from quart_schema import tag_blueprint, validate_request

from ..auth import actor, require
from ..errors import Invalid
from ..service import service
from ..store.components import instruction_dict
from .schemas import ComponentInstructionsIn

bp = Blueprint("components", __name__, url_prefix="/v1/component-instructions")
tag_blueprint(bp, ["component instructions"])


_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def _checked_id(component_id: str) -> str:
    if not _ID.match(component_id):
        msg = "use 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
        raise Invalid(f"{component_id!r} is not a component id: {msg}", errors=[{"loc": "component_id", "msg": msg}])
    return component_id


@bp.get("")
@require("viewer")
async def list_instructions() -> dict[str, Any]:
    """Every component's instructions; a profile's ``components`` name which of them a turn sends."""
    return {"components": [instruction_dict(r) for r in await service().store.components.all()]}


@bp.get("/<component_id>")
@require("viewer")
async def get_instructions(component_id: str) -> dict[str, Any]:
    return instruction_dict(await service().store.components.get(component_id))


@bp.put("/<component_id>")
@require("admin", shared="the component instructions")
@validate_request(ComponentInstructionsIn)
async def put_instructions(component_id: str, data: ComponentInstructionsIn) -> tuple[dict[str, Any], int]:
    """Create or replace a component's texts (``full``, ``medium``, ``light``; at least one). When the budget
    is short, component_instructions steps down from full to medium to light, last component first."""
    row, created = await service().store.components.put(_checked_id(component_id), data.model_dump(), actor())
    return instruction_dict(row), 201 if created else 200


@bp.delete("/<component_id>")
@require("admin", shared="the component instructions")
async def delete_instructions(component_id: str) -> tuple[str, int]:
    await service().store.components.delete(component_id, actor())
    return "", 204
