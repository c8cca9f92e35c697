"""rag_context's options (a window type's slot ``config``)."""

from __future__ import annotations

from pydantic import Field

from components.context_window.options import ModuleOptions


class RagOptions(ModuleOptions):
    min_score: float = Field(0.7, ge=0, le=1, description="Cases scoring below this are left out.")
    k: int = Field(3, ge=1, description="Cases served at most.")
