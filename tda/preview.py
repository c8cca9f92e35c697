"""The what-if preview: the snapshot a context window type would produce for a session and query, under another
profile or a lower limit if asked. Persists nothing. The API layer reads the request and resolves the type."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from components.context_window.window_type import ContextWindowType

from .attribution import attribution
from .sources import build_context
from .turn_pipeline import with_component_instructions

if TYPE_CHECKING:
    from .service import TDAService


async def preview(
    svc: TDAService,
    window_type: ContextWindowType,
    version: int | None,
    session_id: str,
    query: str,
    *,
    profile_id: str | None = None,
    context_limit: int | None = None,
) -> dict[str, Any]:
    """``version``: the saved type's, None for an unsaved body."""
    data = await svc.store.sessions.load(session_id)
    if profile_id:  # what if this session ran under another profile (its prompt, tools, model)?
        data = dataclasses.replace(data, profile=await svc.store.profiles.get(profile_id))
    history = await svc.history.source(data)
    ctx = build_context(data, query, default_model=svc.settings.model, sources=svc.sources, history=history)
    ctx = await with_component_instructions(svc, ctx)
    if context_limit is not None:  # what if the limit were this (like a session override: only lowers)
        ctx = dataclasses.replace(ctx, session=dataclasses.replace(ctx.session, context_limit=context_limit))
    assembled = await svc.scratch_handler.assemble(ctx, window_type)
    return {
        "persisted": False,
        "type_id": window_type.id,
        "type_version": version,
        "session_id": session_id,
        "summary": assembled.snapshot.summary(),
        "snapshot": assembled.snapshot.to_dict(),
        "messages": assembled.messages,  # what the model would be sent, as sent
        "attribution": attribution(assembled, ctx.model),  # per message: its module and tokens
        "tools": assembled.tools,
    }
