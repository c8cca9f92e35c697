"""/v1/context-window: installed modules and their lifecycle, and the type a profile resolves to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quart import Blueprint
from quart_schema import tag_blueprint, validate_request

from ..auth import actor, require
from ..errors import Conflict, Invalid, NotFound
from ..security import check_install_source
from ..service import TDAService, service
from ..turn_pipeline import resolve_type
from .schemas import InstallIn, PurgeIn

bp = Blueprint("modules", __name__, url_prefix="/v1/context-window")
tag_blueprint(bp, ["modules"])


def _modules(svc: TDAService) -> dict[str, Any]:
    return {
        "modules": [i.to_dict() for i in svc.registry.infos()],
        "load_errors": [e.to_dict() for e in svc.registry.load_errors],
    }


def _info(svc: TDAService, module_id: str) -> dict[str, Any]:
    try:
        return svc.registry.info(module_id).to_dict()
    except KeyError as exc:
        raise NotFound(str(exc.args[0])) from None


@bp.get("/modules")
@require("viewer")
async def list_modules() -> dict[str, Any]:
    """Installed modules (source builtin/pack/user, version, capabilities, status) and load errors."""
    return _modules(service())


@bp.post("/modules/install")
@require("admin", shared="the installed modules")
@validate_request(InstallIn)
async def install_module(data: InstallIn) -> tuple[dict[str, Any], int]:
    """Install a module folder from the server's file system into the user module folder. Only folders under
    TDA_MODULES_DIR or TDA_MODULE_ROOTS qualify (403 otherwise): a module is code the server runs."""
    svc = service()
    path = check_install_source(Path(data.path), svc.settings)
    if not (path / "manifest.json").is_file():
        raise Invalid(
            f"{data.path} is not a module folder (no manifest.json)",
            errors=[{"loc": "path", "msg": "no manifest.json in this folder", "type": "value_error"}],
        )
    try:
        info = svc.registry.install(path)
    except ValueError as exc:
        raise Invalid(str(exc), errors=[{"loc": "path", "msg": str(exc), "type": "value_error"}]) from None
    await svc.apply_module_state()
    svc.bus.publish_control("modules")
    return info.to_dict(), 201


@bp.delete("/modules/<other_than(install,reload):module_id>")
@require("admin", shared="the installed modules")
async def uninstall_module(module_id: str) -> tuple[str, int]:
    """Uninstall a user-installed module (built-ins: deactivate instead; packs: pip uninstall)."""
    svc = service()
    _info(svc, module_id)
    try:
        svc.registry.uninstall(module_id)
    except ValueError as exc:
        raise Conflict(str(exc)) from None
    await svc.store.modules.forget(module_id, actor())
    await svc.apply_module_state()
    svc.bus.publish_control("modules")
    return "", 204


async def _set_active(module_id: str, active: bool) -> dict[str, Any]:
    svc = service()
    _info(svc, module_id)
    try:
        (svc.registry.activate if active else svc.registry.deactivate)(module_id)
    except ValueError as exc:
        raise Conflict(str(exc)) from None
    await svc.store.modules.set(module_id, active, actor())
    svc.bus.publish_control("modules")
    return _info(svc, module_id)


@bp.post("/modules/<module_id>/activate")
@require("admin", shared="the installed modules")
async def activate_module(module_id: str) -> dict[str, Any]:
    return await _set_active(module_id, True)


@bp.post("/modules/<module_id>/deactivate")
@require("admin", shared="the installed modules")
async def deactivate_module(module_id: str) -> dict[str, Any]:
    """Deactivated modules are skipped by every type; their share goes to the others."""
    return await _set_active(module_id, False)


@bp.post("/modules/<module_id>/purge")
@require("admin", shared="the installed modules")
@validate_request(PurgeIn)
async def purge_module(module_id: str, data: PurgeIn) -> dict[str, Any]:
    """Forget what a purgeable module cached for one session."""
    svc = service()
    _info(svc, module_id)
    session = await svc.store.sessions.get(data.session_id)
    try:
        result = await svc.registry.purge(module_id, session.id, session.user_id)
    except ValueError as exc:
        raise Conflict(str(exc)) from None
    return {"module_id": module_id, "session_id": session.id, "result": result}


@bp.post("/modules/reload")
@require("admin", shared="the installed modules")
async def reload_modules() -> dict[str, Any]:
    """Discover modules again (after installing a pack or editing a user module)."""
    svc = service()
    svc.registry.reload()
    await svc.apply_module_state()
    svc.bus.publish_control("modules")
    return _modules(svc)


@bp.get("/active/<profile_id>")
@require("viewer")
async def active_for_profile(profile_id: str) -> dict[str, Any]:
    """The type a profile resolves to (the version its label is on, when it binds by label), its profile type and
    the installed modules."""
    svc = service()
    profile = await svc.store.profiles.get(profile_id)
    stored = await resolve_type(svc, profile)
    return {
        "profile_id": profile.id,
        "profile_type": profile.type,
        "bound_type_id": profile.context_window_type_id,
        "bound_label": profile.context_window_type_label,  # the type's version is the label's
        "context_window_type": {**stored.to_dict(), "etag": stored.etag},
        "modules": [i.to_dict() for i in svc.registry.infos()],
    }
