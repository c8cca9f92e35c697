"""tda's context-window component: a pure library (no web, database or vector-store imports)."""

from .base import (
    AssemblyContext,
    ChampionCase,
    ContextModule,
    Contribution,
    Directives,
    Document,
    Message,
    ModuleManifest,
    Passage,
    Profile,
    Session,
    ToolSchema,
    TurnRecord,
    text_contribution,
)
from .budget import BudgetExceeded
from .handler import AssembledContext, ContextWindowHandler
from .module_registry import ModuleRegistry
from .snapshot import ContextWindowSnapshot
from .window_type import ContextWindowType

__all__ = [
    "AssembledContext",
    "AssemblyContext",
    "BudgetExceeded",
    "ChampionCase",
    "ContextModule",
    "ContextWindowHandler",
    "ContextWindowSnapshot",
    "ContextWindowType",
    "Contribution",
    "Directives",
    "Document",
    "Message",
    "ModuleManifest",
    "ModuleRegistry",
    "Passage",
    "Profile",
    "Session",
    "ToolSchema",
    "TurnRecord",
    "text_contribution",
]
