"""document_context's options (a window type's slot ``config``)."""

from __future__ import annotations

from pydantic import Field

from components.context_window.options import ModuleOptions


class DocumentOptions(ModuleOptions):
    per_file_chars: int = Field(20_000, ge=1, description="Characters of one document kept before the cut marker.")
    total_chars: int = Field(50_000, ge=1, description="Characters of all documents together.")
