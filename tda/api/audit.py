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
    rows = await service().store.audit.all(query_args.entity, query_args.entity_id, query_args.limit)
    return {"entries": [audit_dict(r) for r in rows]}
