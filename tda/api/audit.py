"""/v1/audit: who changed what, with the state before and after."""

from __future__ import annotations

from typing import Any

from quart import Blueprint
from quart_schema import tag_blueprint, validate_querystring

from ..auth import require
from ..service import service
from ..store.audit import audit_dict
from .schemas import AuditQuery

bp = Blueprint("audit", __name__, url_prefix="/v1/audit")
tag_blueprint(bp, ["audit"])


@bp.get("")
@require("admin")
@validate_querystring(AuditQuery)
async def list_audit(query_args: AuditQuery) -> dict[str, Any]:
    """Changes, newest first, a page of ``limit`` from ``offset`` (``next_offset``: the next page's, null after the
    last)."""
    q = query_args
    rows = await service().store.audit.all(q.entity, q.entity_id, q.limit + 1, actor=q.actor, offset=q.offset)
    next_offset = q.offset + q.limit if len(rows) > q.limit else None
    return {"entries": [audit_dict(r) for r in rows[: q.limit]], "next_offset": next_offset}
