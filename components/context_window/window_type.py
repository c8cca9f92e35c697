"""Context window types: named compositions of modules, validated at the edge (pydantic v2).

Validation that needs outside knowledge takes it through the validation context (the registry's
``validation_context()`` builds it): ``known_modules`` rejects unknown module ids, and ``non_condensable``
rejects a type that would condense the floor (a non-condensable module in ``condensation_order`` or in a
``condense`` rule). Validated types are frozen.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from .phases import Phase

MODULE_IDS_IN_ORDER: tuple[str, ...] = (
    "system_prompt",
    "tool_definitions",
    "conversation_history",
    "rag_context",
    "knowledge_context",
    "plan_hydration",
    "document_context",
    "component_instructions",
    "workflow_history",
)
"""The nine built-in modules, highest default priority first."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModuleSlot(_Model):
    """One module's place in a type: whether it takes part and what share of the budget it aims for."""

    active: bool = True
    target_pct: float = Field(ge=0, le=100)
    min_pct: float = Field(0, ge=0, le=100)
    max_pct: float = Field(100, ge=0, le=100)
    priority: int = Field(50, ge=0, le=100)
    config: dict[str, Any] = Field(default_factory=dict)
    """Module-specific options, handed to the module as ``ctx.directives.config``."""

    @model_validator(mode="after")
    def _ordered(self) -> ModuleSlot:
        if not self.min_pct <= self.target_pct <= self.max_pct:
            raise ValueError(
                f"need 0 <= min_pct <= target_pct <= max_pct <= 100, got "
                f"min {self.min_pct}, target {self.target_pct}, max {self.max_pct}"
            )
        return self


# --- dynamic adjustments: condition x action ------------------------------------------------------


class FirstTurn(_Model):
    type: Literal["first_turn"]


class NoDocumentsAttached(_Model):
    type: Literal["no_documents_attached"]


class DocumentsAttached(_Model):
    type: Literal["documents_attached"]


class LongConversation(_Model):
    type: Literal["long_conversation"]
    threshold: int = Field(ge=1, description="fires from this many completed turns on")


class HighConfidenceRag(_Model):
    type: Literal["high_confidence_rag"]
    threshold: float = Field(ge=0, le=1, description="fires when the best RAG case scores at least this")


class SmallWindow(_Model):
    type: Literal["small_window"]
    threshold: int = Field(ge=1, description="fires when the effective limit is at most this many tokens")


class PhaseIs(_Model):
    type: Literal["phase_is"]
    phase: Phase


Condition = Annotated[
    FirstTurn | NoDocumentsAttached | DocumentsAttached | LongConversation | HighConfidenceRag | SmallWindow | PhaseIs,
    Field(discriminator="type"),
]


class Reduce(_Model):
    type: Literal["reduce"]
    module: str
    by_pct: float = Field(gt=0, le=100)


class Transfer(_Model):
    type: Literal["transfer"]
    module: str
    to: str


class ForceFull(_Model):
    type: Literal["force_full"]
    module: str


class Condense(_Model):
    type: Literal["condense"]
    module: str
    strategy: str = "summarize"
    to_pct: float = Field(50, gt=0, le=100, description="condense to this share of the module's allocation")


Action = Annotated[Reduce | Transfer | ForceFull | Condense, Field(discriminator="type")]


REFERENCE_DEFAULTS: dict[str, dict[str, Any]] = {
    "long_conversation": {"threshold": 10},  # the reference fires after turn 10
    "high_confidence_rag": {"threshold": 0.85},
}
"""Thresholds the reference's shorthand conditions imply (they name a condition without parameters)."""
_ACTION_KEYS = ("reduce", "transfer", "force_full", "condense")


def normalise_shorthand(rule: Any) -> Any:
    """The reference's rule form -> tda's: ``{"condition": "high_confidence_rag", "action": {"reduce":
    "tool_definitions", "by_pct": 50}}`` becomes ``{"condition": {"type": "high_confidence_rag", "threshold":
    0.85}, "action": {"type": "reduce", "module": "tool_definitions", "by_pct": 50}}``. Anything else is left
    as it is (and validated as tda's form)."""
    if not isinstance(rule, dict):
        return rule
    rule = dict(rule)
    condition = rule.get("condition")
    if isinstance(condition, str):
        rule["condition"] = {"type": condition, **REFERENCE_DEFAULTS.get(condition, {})}
    action = rule.get("action")
    if isinstance(action, dict) and "type" not in action:
        named = [k for k in _ACTION_KEYS if k in action]
        if len(named) != 1:
            raise ValueError(
                "an action needs 'type' (reduce, transfer, force_full or condense) and 'module', "
                "or the reference's form with exactly one of those as key, e.g. {'reduce': 'tool_definitions'}"
            )
        if len(named) == 1:
            kind = named[0]
            rest = {k: v for k, v in action.items() if k != kind}
            rule["action"] = {
                "type": kind,
                "module": action[kind],
                **({"by_pct": 50} if kind == "reduce" else {}),
                **rest,
            }
    return rule


class DynamicAdjustment(_Model):
    condition: Condition
    action: Action

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return normalise_shorthand(data)

    def describe(self) -> str:
        c, a = self.condition, self.action
        cond = c.type + (f"({c.threshold})" if hasattr(c, "threshold") else "")
        cond += f"({c.phase})" if isinstance(c, PhaseIs) else ""
        detail = f" by {a.by_pct:g}%" if isinstance(a, Reduce) else f" -> {a.to}" if isinstance(a, Transfer) else ""
        return f"{cond} -> {a.type} {a.module}{detail}"

    def modules(self) -> set[str]:
        return {self.action.module} | ({self.action.to} if isinstance(self.action, Transfer) else set())


class Distillation(_Model):
    """Thresholds for plan_hydration: results above either become metadata / statistics."""

    max_rows: int = Field(500, ge=1)
    max_chars: int = Field(10_000, ge=100)


# --- the type ----------------------------------------------------------------------------------------


class ContextWindowType(_Model):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$", description="lowercase slug, e.g. 'balanced'")
    name: str = Field(min_length=1, max_length=100)
    description: str = ""
    is_default: bool = False
    output_reserve_pct: float = Field(12, ge=0, le=50)
    modules: dict[str, ModuleSlot]
    condensation_order: list[str] = Field(default_factory=list)
    dynamic_adjustments: list[DynamicAdjustment] = Field(default_factory=list)
    distillation: Distillation = Field(default_factory=Distillation)

    @field_validator("modules")
    @classmethod
    def _known_modules(cls, modules: dict[str, ModuleSlot], info: ValidationInfo) -> dict[str, ModuleSlot]:
        known = (info.context or {}).get("known_modules")
        if known is not None:
            unknown = sorted(set(modules) - set(known))
            if unknown:
                raise ValueError(f"unknown module ids {unknown}; installed: {sorted(known)}")
        if not any(s.active for s in modules.values()):
            raise ValueError("at least one module must be active")
        return modules

    @model_validator(mode="after")
    def _references(self) -> ContextWindowType:
        active = self.active_ids
        order = self.condensation_order
        if len(set(order)) != len(order):
            raise ValueError("condensation_order names a module twice")
        stray = [m for m in order if m not in active]
        if stray:
            raise ValueError(f"condensation_order names modules that are not active: {stray}")
        for i, rule in enumerate(self.dynamic_adjustments):
            missing = sorted(rule.modules() - set(self.modules))
            if missing:
                raise ValueError(f"dynamic_adjustments[{i}] refers to modules not in this type: {missing}")
        return self

    @model_validator(mode="after")
    def _floor_is_never_condensed(self, info: ValidationInfo) -> ContextWindowType:
        floor = set((info.context or {}).get("non_condensable") or ())
        named = [m for m in self.condensation_order if m in floor]
        if named:
            raise ValueError(f"condensation_order names non-condensable modules {named}; remove them")
        for i, rule in enumerate(self.dynamic_adjustments):
            if isinstance(rule.action, Condense) and rule.action.module in floor:
                raise ValueError(
                    f"dynamic_adjustments[{i}] condenses {rule.action.module}, which is not condensable; "
                    "remove the rule"
                )
        return self

    @property
    def active_ids(self) -> list[str]:
        return [m for m, s in self.modules.items() if s.active]


def validate_default_flags(types: Iterable[ContextWindowType]) -> None:
    """At most one type may be the default (the service keeps exactly one)."""
    defaults = [t.id for t in types if t.is_default]
    if len(defaults) > 1:
        raise ValueError(f"only one default context window type is allowed, got {defaults}")


# --- the four shipped types -----------------------------------------------------------------------

_PRIORITY = dict(zip(MODULE_IDS_IN_ORDER, (95, 85, 80, 75, 70, 65, 60, 55, 50), strict=True))
_SHORT = dict(
    sys="system_prompt",
    tools="tool_definitions",
    hist="conversation_history",
    rag="rag_context",
    know="knowledge_context",
    plan="plan_hydration",
    doc="document_context",
    comp="component_instructions",
    wf="workflow_history",
)


def _slots(**figures: tuple[float, float, float]) -> dict[str, dict[str, Any]]:
    """Build module slots from ``short=(target, min, max)``; unnamed modules are inactive."""
    slots: dict[str, dict[str, Any]] = {}
    for short, module_id in _SHORT.items():
        target, lo, hi = figures.get(short, (0, 0, 0))
        slots[module_id] = dict(
            active=short in figures, target_pct=target, min_pct=lo, max_pct=hi, priority=_PRIORITY[module_id]
        )
    return slots


def _order(*shorts: str) -> list[str]:
    return [_SHORT[s] for s in shorts]


def _rule(condition: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    return {"condition": condition, "action": action}


_FIRST_TURN_FULL_TOOLS = _rule({"type": "first_turn"}, {"type": "force_full", "module": "tool_definitions"})


def _long_conversation(turns: int, to_pct: float = 50) -> dict[str, Any]:
    return _rule(
        {"type": "long_conversation", "threshold": turns},
        {"type": "condense", "module": "conversation_history", "strategy": "summarize", "to_pct": to_pct},
    )


_DEFAULT_TYPE_DATA: list[dict[str, Any]] = [
    dict(
        id="balanced",
        name="Balanced",
        description="General purpose: every module takes part, tools and history get the largest shares.",
        is_default=True,
        output_reserve_pct=12,
        modules=_slots(
            sys=(10, 5, 15),
            tools=(22, 0, 40),
            hist=(22, 10, 60),
            rag=(15, 0, 30),
            know=(10, 0, 25),
            plan=(8, 0, 15),
            doc=(5, 0, 15),
            comp=(4, 0, 10),
            wf=(4, 0, 10),
        ),
        condensation_order=_order("wf", "comp", "doc", "plan", "know", "rag", "hist", "tools"),
        dynamic_adjustments=[
            _FIRST_TURN_FULL_TOOLS,
            _rule(
                {"type": "no_documents_attached"},
                {"type": "transfer", "module": "document_context", "to": "conversation_history"},
            ),
            _long_conversation(10),
            _rule(
                {"type": "high_confidence_rag", "threshold": 0.85},
                {"type": "reduce", "module": "tool_definitions", "by_pct": 50},
            ),
        ],
    ),
    dict(
        id="knowledge_heavy",
        name="Knowledge Heavy",
        description="Document Q&A: knowledge and RAG cases dominate; no tools.",
        output_reserve_pct=12,
        modules=_slots(
            sys=(8, 5, 12), hist=(15, 10, 30), rag=(20, 5, 40), know=(40, 10, 60), doc=(10, 0, 20), comp=(3, 0, 8)
        ),
        condensation_order=_order("comp", "doc", "rag", "hist", "know"),
    ),
    dict(
        id="conversation_first",
        name="Conversation First",
        description="Long chats: half the window keeps the conversation verbatim.",
        output_reserve_pct=12,
        modules=_slots(sys=(8, 5, 12), hist=(50, 20, 70), know=(15, 0, 25), doc=(15, 0, 25), comp=(5, 0, 10)),
        condensation_order=_order("comp", "doc", "know", "hist"),
        # No condense rule once long: the history fills its share, the newest turns in cache blocks (a stable
        # prefix) and the rest recalled by relevance (see _HISTORY_RECALL).
    ),
    dict(
        id="token_efficient",
        name="Token Efficient",
        description="Cost-sensitive agents: lean tools and history, a larger output reserve.",
        output_reserve_pct=15,
        modules=_slots(
            sys=(12, 8, 18), tools=(20, 0, 30), hist=(40, 15, 55), rag=(15, 0, 25), plan=(8, 0, 12), wf=(5, 0, 8)
        ),
        condensation_order=_order("wf", "plan", "rag", "hist", "tools"),
        dynamic_adjustments=[_FIRST_TURN_FULL_TOOLS, _long_conversation(5)],
    ),
]


_HISTORY_RECALL = {"recall_pct": 60}
"""Every shipped type recalls older history: conversation_history keeps the newest turns in 40% of its budget and
fills the rest with earlier messages recalled by relevance to the query (docs/knowledge.md, "History recall")."""
for _data in _DEFAULT_TYPE_DATA:
    _data["modules"]["conversation_history"]["config"] = dict(_HISTORY_RECALL)


def default_types() -> list[ContextWindowType]:
    """Fresh copies of the four shipped types (frozen: derive a changed one with ``model_copy(update=...)``)."""
    return [ContextWindowType.model_validate(d) for d in _DEFAULT_TYPE_DATA]


DEFAULT_TYPES: dict[str, ContextWindowType] = {t.id: t for t in default_types()}
