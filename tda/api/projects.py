"""/v1/projects and /v1/tokens: what an operator token manages (`tda projects`, `tda tokens` over HTTP)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint
from quart_schema import tag_blueprint, validate_querystring, validate_request

from ..auth import actor, require
from ..service import service
from ..store.projects import check_name, project_dict
from ..store.tokens import token_dict
from .schemas import ProjectIn, TokenIn, TokenQuery

bp = Blueprint("projects", __name__, url_prefix="/v1")
tag_blueprint(bp, ["projects"])


@bp.get("/projects")
@require("operator")
async def list_projects() -> dict[str, Any]:
    return {"projects": [project_dict(r) for r in await service().store.projects.all()]}


@bp.post("/projects")
@require("operator")
@validate_request(ProjectIn)
async def create_project(data: ProjectIn) -> tuple[dict[str, Any], int]:
    """A new project: its tokens (POST /v1/tokens) see only its own profiles, sessions, knowledge and audit log."""
    return project_dict(await service().store.projects.create(data.name, actor())), 201


@bp.get("/tokens")
@require("operator")
@validate_querystring(TokenQuery)
async def list_tokens(query_args: TokenQuery) -> dict[str, Any]:
    """Every token (never its secret), or one project's."""
    return {"tokens": [token_dict(r) for r in await service().store.tokens.all(query_args.project)]}


@bp.post("/tokens")
@require("operator")
@validate_request(TokenIn)
async def create_token(data: TokenIn) -> tuple[dict[str, Any], int]:
    """A token of ``role`` in ``project``; ``token`` is its secret, shown only in this answer."""
    project = check_name(data.project) if data.project is not None else None
    name = data.name or f"{data.role}-token"
    token, row = await service().store.tokens.create(name, data.role, actor(), project=project)
    return {**token_dict(row), "token": token}, 201


@bp.delete("/tokens/<int(max=2147483647):token_id>")
@require("operator")
async def revoke_token(token_id: int) -> tuple[str, int]:
    """Revoke a token: its requests and browser sign-ins end (on every replica within a second)."""
    await service().store.tokens.revoke(token_id, actor())
    return "", 204
