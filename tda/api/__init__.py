"""The REST API under /v1: one blueprint per resource."""

from __future__ import annotations

from quart import Quart

from . import (
    audit,
    chat,
    components,
    events,
    experiments,
    knowledge,
    messages,
    model_list,
    modules,
    profiles,
    projects,
    responses,
    responses_compact,
    sessions,
    signin,
    snapshots,
    types,
)
from .errors import register_error_handlers
from .openapi import OtherThan

BLUEPRINTS = (
    types.bp,
    modules.bp,
    profiles.bp,
    sessions.bp,
    snapshots.bp,
    events.bp,
    signin.bp,
    audit.bp,
    chat.bp,
    responses.bp,
    responses_compact.bp,
    messages.bp,
    model_list.bp,
    components.bp,
    knowledge.bp,
    projects.bp,
    experiments.bp,
)


def register_api(app: Quart) -> None:
    app.url_map.converters["other_than"] = OtherThan
    for bp in BLUEPRINTS:
        app.register_blueprint(bp)
    register_error_handlers(app)
