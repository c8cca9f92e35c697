"""ContextWindowSnapshot: who used what in one assembly, as data and JSON (tda/events.py sends it over SSE)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ModuleStatus = Literal["ok", "failed", "timeout", "skipped"]


@dataclass
class ModuleUsage:
    module_id: str
    status: ModuleStatus
    priority: int = 0
    target_pct: float = 0.0
    allocated: int = 0
    used: int = 0
    condensed: bool = False
    strategy: str = ""
    surplus_received: int = 0
    surplus_donated: int = 0
    reason: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    blocked_ms: float = 0.0
    """Time the module held the event loop in this assembly (nothing else ran meanwhile); varies run to run."""
    waited_ms: float = 0.0
    """Of ``blocked_ms``, the time the loop's thread waited for a CPU other processes had: the machine's load, not
    held against the module's timeout (isolation.py); varies run to run."""

    @property
    def utilisation(self) -> float:
        return round(self.used / self.allocated, 4) if self.allocated else 0.0


@dataclass(frozen=True)
class Condensation:
    module_id: str
    before: int
    """Tokens before condensing; for a rule the module applied while contributing, the allocation it cut."""
    after: int
    strategy: str
    reason: str  # "over budget", "rule (<strategy>)", "rule (<strategy>), applied while contributing", "trim"


@dataclass(frozen=True)
class Reallocation:
    module_id: str
    tokens: int
    """Positive: surplus received; negative: unused allocation donated."""


@dataclass(frozen=True)
class AuxiliaryCall:
    """A model call a module made while the window was assembled (a query rewrite, a summary, a relevance
    filter): the turn pays for it on top of the answer's own call."""

    module_id: str
    purpose: str
    """What it was for: "query_rewrite", "llm_filter", "history_summary", or "summary" when the module did not say."""
    model: str
    tokens_in: int
    tokens_out: int
    max_tokens: int
    """The bound the reply was given."""
    ms: float
    status: str = "ok"
    """"ok", "failed" (no tokens reported) or "cancelled" (the module timed out meanwhile)."""
    estimated: bool = False
    """The summarizer reported no counts (a mock model): they are the assembly's own count of what was sent."""
    ahead: bool = False
    """Made after the session's previous call was answered, for this call's window (``ContextModule.ahead``): this
    window reports it, whether it used it or not."""


@dataclass
class ContextWindowSnapshot:
    window_type_id: str
    window_type_name: str
    model: str
    model_limit: int
    model_limit_source: str
    profile_override: int | None
    session_override: int | None
    effective_limit: int
    output_reserve: int
    available_budget: int
    query_tokens: int
    total_used: int
    modules: list[ModuleUsage]
    condensations: list[Condensation] = field(default_factory=list)
    reallocations: list[Reallocation] = field(default_factory=list)
    auxiliary_calls: list[AuxiliaryCall] = field(default_factory=list)
    """Model calls modules made during this assembly, in the order they ended."""
    adjustments_fired: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    prefix_stable_tokens: int = 0
    token_method: str = ""
    duration_ms: float = 0.0
    session_id: str = ""
    profile_id: str = ""
    turn: int = 0
    created_at: str = ""

    @property
    def utilisation(self) -> float:
        return round(self.total_used / self.available_budget, 4) if self.available_budget else 0.0

    @property
    def auxiliary_tokens(self) -> tuple[int, int]:
        """Tokens in and out of the auxiliary calls, together: what the turn costs beyond the answer's call."""
        return sum(c.tokens_in for c in self.auxiliary_calls), sum(c.tokens_out for c in self.auxiliary_calls)

    def module(self, module_id: str) -> ModuleUsage:
        return next(m for m in self.modules if m.module_id == module_id)

    def to_dict(self) -> dict[str, Any]:
        """As ``dataclasses.asdict`` plus the utilisations, built field by field (asdict's generic deep copy took
        0.7 ms a turn). Every value is plain data; module metadata is each module's own copy already (the
        isolation boundary made it), so one level of copying leaves nothing shared with the snapshot."""
        data = _fields(self)
        data["modules"] = [
            _fields(m) | {"metadata": dict(m.metadata), "utilisation": m.utilisation} for m in self.modules
        ]
        data["condensations"] = [_fields(c) for c in self.condensations]
        data["reallocations"] = [_fields(r) for r in self.reallocations]
        data["auxiliary_calls"] = [_fields(c) for c in self.auxiliary_calls]
        data["adjustments_fired"], data["decisions"] = list(self.adjustments_fired), list(self.decisions)
        data["utilisation"] = self.utilisation
        return data

    def comparable(self) -> dict[str, Any]:
        """The snapshot without what legitimately varies between identical runs (time)."""
        data = self.to_dict()
        for key in ("duration_ms", "created_at"):
            data.pop(key)
        for module in data["modules"]:
            module.pop("blocked_ms")
            module.pop("waited_ms")
        for call in data["auxiliary_calls"]:
            call.pop("ms")
        return data

    def summary(self) -> str:
        condensed = sum(1 for m in self.modules if m.condensed)
        failed = [m.module_id for m in self.modules if m.status in ("failed", "timeout")]
        return (
            f"{self.window_type_name}: {self.total_used:,}/{self.available_budget:,} tokens "
            f"({self.utilisation:.0%}) of {self.effective_limit:,} ({self.model_limit_source}); "
            f"{sum(1 for m in self.modules if m.status == 'ok')} modules, {condensed} condensed"
            + (f", failed: {', '.join(failed)}" if failed else "")
            + (f", rules: {len(self.adjustments_fired)}" if self.adjustments_fired else "")
            + (f", model calls: {len(self.auxiliary_calls)}" if self.auxiliary_calls else "")
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ContextWindowSnapshot:
        data = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        data["modules"] = [
            ModuleUsage(**{k: v for k, v in m.items() if k in ModuleUsage.__dataclass_fields__})
            for m in data["modules"]
        ]
        data["condensations"] = [Condensation(**c) for c in data.get("condensations", [])]
        data["reallocations"] = [Reallocation(**r) for r in data.get("reallocations", [])]
        data["auxiliary_calls"] = [AuxiliaryCall(**c) for c in data.get("auxiliary_calls", [])]
        return cls(**data)


def _fields(obj: Any) -> dict[str, Any]:
    """A dataclass's fields by name (the values themselves, not copies)."""
    return {name: getattr(obj, name) for name in obj.__dataclass_fields__}
