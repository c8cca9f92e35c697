"""/v1/snapshots: one stored snapshot, and its replay."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint
from quart_schema import tag_blueprint, validate_querystring

from ..auth import require
from ..replay import replay
from ..service import service
from ..store.sessions import snapshot_dict
from ..trace import trace

bp = Blueprint("snapshots", __name__, url_prefix="/v1/snapshots")


class TraceQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type_id: str | None = Field(
        None, min_length=1, max_length=64, description="assemble the turn under this saved type"
    )


tag_blueprint(bp, ["snapshots"])


@bp.get("/<int(max=2147483647):snapshot_id>")
@require("viewer")
async def get_snapshot(snapshot_id: int) -> dict[str, Any]:
    row = await service().store.sessions.snapshot(snapshot_id)
    return {**snapshot_dict(row), "inputs": row.inputs}


@bp.post("/<int(max=2147483647):snapshot_id>/replay")
@require("viewer")
async def replay_snapshot(snapshot_id: int) -> dict[str, Any]:
    """Assemble the stored inputs again (same type version, model, limits, history before the turn):
    ``identical`` or the ``differences``, with ``inputs_changed`` naming what changed since (e.g. history validity)."""
    return await replay(service(), snapshot_id)


@bp.get("/<int(max=2147483647):snapshot_id>/trace")
@require("viewer")
@validate_querystring(TraceQuery)
async def trace_snapshot(snapshot_id: int, query_args: TraceQuery) -> dict[str, Any]:
    """The window of a snapshot's turn as sent: every message and tool with the module that contributed it and its
    token count, assembled again from the stored inputs; ``identical`` says the result matches the recorded snapshot.
    With ``type_id``, the same turn under that saved type (its current version): compare a turn under two types."""
    return await trace(service(), snapshot_id, query_args.type_id)
