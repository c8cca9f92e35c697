"""Context window types: named compositions of modules, validated at the edge (pydantic v2).

Validation that needs outside knowledge takes it through the validation context (the registry's
``validation_context()`` builds it): ``known_modules`` rejects unknown module ids, and ``non_condensable``
rejects a type that would condense the floor (a non-condensable module in ``condensation_order`` or in a
``condense`` rule). Validated types are frozen.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from .options import option_problems
from .phases import Phase


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


CONDENSE_STRATEGIES = ("summarize", "truncate")
"""What a condense rule may ask for: summarise what is dropped, or keep the newest and drop the rest."""


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
        models = (info.context or {}).get("module_options") or {}
        problems = [p for m, slot in modules.items() if m in models for p in option_problems(m, models[m], slot.config)]
        if problems:
            raise ValidationError.from_exception_data("module options", problems)
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

    @model_validator(mode="after")
    def _sensible_when_saved(self, info: ValidationInfo) -> ContextWindowType:
        """Checked when a type is saved (the registry's validation context), not when a stored one is read: the
        active modules' shares fit in one budget, and condense rules name a strategy that exists."""
        if not (info.context or {}).get("on_save"):
            return self
        problems = []
        for figure in ("target_pct", "min_pct"):
            total = sum(getattr(s, figure) for s in self.modules.values() if s.active)
            if total > 100 + 1e-9:
                problems.append(
                    _problem(
                        ("modules",),
                        f"the active modules' {figure} add up to {total:g}%; they share one budget, so lower them "
                        "to 100% in total or less",
                    )
                )
        for i, rule in enumerate(self.dynamic_adjustments):
            if isinstance(rule.action, Condense) and rule.action.strategy not in CONDENSE_STRATEGIES:
                problems.append(
                    _problem(
                        ("dynamic_adjustments", i, "action", "strategy"),
                        f"{rule.action.strategy!r} is not a strategy; use one of {', '.join(CONDENSE_STRATEGIES)}",
                    )
                )
        if problems:
            raise ValidationError.from_exception_data("context window type", problems)
        return self

    @property
    def active_ids(self) -> list[str]:
        return [m for m, s in self.modules.items() if s.active]


def _problem(loc: tuple[str | int, ...], text: str) -> InitErrorDetails:
    return InitErrorDetails(type=PydanticCustomError("value_error", "{text}", {"text": text}), loc=loc, input=None)


def validate_default_flags(types: Iterable[ContextWindowType]) -> None:
    """At most one type may be the default (the service keeps exactly one)."""
    defaults = [t.id for t in types if t.is_default]
    if len(defaults) > 1:
        raise ValueError(f"only one default context window type is allowed, got {defaults}")
