"""Pure budget arithmetic: limits, share redistribution, allocation and surplus. No I/O, no modules."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass

SURPLUS_DONOR_BELOW = 0.30
"""A module using less than this share of its allocation donates the rest."""
SURPLUS_RECIPIENT_ABOVE = 0.80
"""A condensable module using more than this share of its allocation may receive surplus."""


class BudgetExceeded(Exception):
    """The floor — content that may not be condensed or dropped — does not fit in the available budget.

    ``parts`` says what the floor is made of (module ids of non-condensable contributions, ``query``,
    ``reply priming``) and how many tokens each needs; they add up to ``floor_tokens``.
    """

    def __init__(self, floor_tokens: int, available: int, parts: Mapping[str, int] | None = None) -> None:
        self.floor_tokens = floor_tokens
        self.available = available
        self.parts = dict(parts or {})
        detail = ", ".join(f"{name} {tokens:,}" for name, tokens in self.parts.items())
        super().__init__(
            f"the non-condensable floor needs {floor_tokens:,} tokens but only {available:,} are available"
            + (f" ({detail})" if detail else "")
            + "; raise the context limit, lower the output reserve or shorten the system prompt/query"
        )


@dataclass(frozen=True)
class Limits:
    model_limit: int
    model_limit_source: str
    profile_override: int | None
    session_override: int | None
    effective_limit: int
    output_reserve: int
    available: int

    @property
    def limit_source(self) -> str:
        if self.effective_limit == self.model_limit:
            return self.model_limit_source
        return "session_override" if self.effective_limit == self.session_override else "profile_override"


def resolve_limits(
    model_limit: int, source: str, profile_override: int | None, session_override: int | None, reserve_pct: float
) -> Limits:
    """Apply overrides (profile, then session; each may only lower the limit) and the output reserve."""
    effective = model_limit
    for override in (profile_override, session_override):
        if override is not None and 0 < override < effective:
            effective = override
    reserve = math.floor(effective * reserve_pct / 100)
    return Limits(model_limit, source, profile_override, session_override, effective, reserve, effective - reserve)


def redistribute(targets: Mapping[str, float], freed: float, exclude: Collection[str] = ()) -> dict[str, float]:
    """Give ``freed`` percentage points to the targets not in ``exclude``, in proportion to their size."""
    out = dict(targets)
    receivers = {m: t for m, t in targets.items() if m not in exclude and t > 0}
    total = sum(receivers.values())
    if freed <= 0 or total <= 0:
        return out
    for m, t in receivers.items():
        out[m] = t + freed * (t / total)  # ratio first: stays exact for tiny targets
    return out


def cap_total(targets: Mapping[str, float], fixed: Collection[str] = (), cap: float = 100.0) -> dict[str, float]:
    """Scale the non-fixed targets down so that all targets sum to at most ``cap`` percent."""
    total = sum(targets.values())
    if total <= cap:
        return dict(targets)
    fixed_sum = min(cap, sum(t for m, t in targets.items() if m in fixed))
    flexible_sum = total - sum(t for m, t in targets.items() if m in fixed)
    scale = (cap - fixed_sum) / flexible_sum if flexible_sum > 0 else 0.0
    out = {m: (t if m in fixed else t * scale) for m, t in targets.items()}
    fixed_total = sum(t for m, t in out.items() if m in fixed)
    if fixed_total > cap:  # fixed targets alone overflow: scale them too
        out = {m: (t * cap / fixed_total if m in fixed else 0.0) for m, t in out.items()}
    return out


def allocate(targets: Mapping[str, float], bounds: Mapping[str, tuple[float, float]], budget: int) -> dict[str, int]:
    """Tokens per module: each target clamped to its (min, max) percent of ``budget``; the sum never exceeds it."""
    pcts = {m: min(max(t, bounds[m][0]), bounds[m][1]) for m, t in targets.items()}
    tokens = {m: math.floor(p * budget / 100) for m, p in pcts.items()}
    total = sum(tokens.values())
    if total > budget:  # minimums pushed the sum over: shrink everyone proportionally
        tokens = {m: math.floor(t * budget / total) for m, t in tokens.items()}
    return tokens


@dataclass(frozen=True)
class SurplusPlan:
    donations: dict[str, int]
    grants: dict[str, int]


def plan_surplus(
    allocated: Mapping[str, int],
    used: Mapping[str, int],
    recipients_allowed: Collection[str],
    priority: Mapping[str, int],
    max_tokens: Mapping[str, int],
    released: Mapping[str, int] | None = None,
) -> SurplusPlan:
    """Donors under 30% utilisation give what they did not use; recipients over 80% share it by priority.

    Grants are capped at each recipient's maximum; what a cap refuses is offered to the others. ``released``: tokens
    modules already gave up (a condense rule's cut, by module), offered to the other recipients first; what they
    cannot use joins the donors' surplus, shared among all (the cut modules too). Donors give only what is granted
    beyond it.
    """
    unused = {
        m: allocated[m] - used[m]
        for m in allocated
        if allocated[m] > 0 and used[m] < SURPLUS_DONOR_BELOW * allocated[m]
    }
    room = {
        m: max_tokens[m] - allocated[m]
        for m in recipients_allowed
        if m not in unused and allocated[m] > 0 and used[m] > SURPLUS_RECIPIENT_ABOVE * allocated[m]
    }
    cut = released or {}
    first = _share_by_priority(sum(cut.values()), {m: r for m, r in room.items() if m not in cut}, priority)
    left = sum(cut.values()) - sum(first.values())
    then = _share_by_priority(sum(unused.values()) + left, {m: r - first.get(m, 0) for m, r in room.items()}, priority)
    grants = {m: first.get(m, 0) + then.get(m, 0) for m in {*first, *then}}
    return SurplusPlan(_take_proportionally(unused, max(0, sum(then.values()) - left)), grants)


def _share_by_priority(pool: int, room: dict[str, int], priority: Mapping[str, int]) -> dict[str, int]:
    room = {m: r for m, r in room.items() if r > 0}
    grants: dict[str, int] = {}
    while pool > 0 and room:
        weight = sum(priority[m] or 1 for m in room)
        share = {m: min(room[m], pool * (priority[m] or 1) // weight) for m in room}
        if not any(share.values()):  # rounding left less than one token per recipient
            share = {next(iter(room)): min(pool, next(iter(room.values())))}
        for m, tokens in share.items():
            grants[m] = grants.get(m, 0) + tokens
            room[m] -= tokens
            pool -= tokens
        room = {m: r for m, r in room.items() if r > 0}
    return {m: g for m, g in grants.items() if g > 0}


def _take_proportionally(unused: Mapping[str, int], amount: int) -> dict[str, int]:
    """Split ``amount`` over the donors in proportion to what each left unused (exact integer sum)."""
    total = sum(unused.values())
    if amount <= 0 or total <= 0:
        return {}
    taken = {m: u * amount // total for m, u in unused.items()}
    for m in sorted(unused, key=lambda d: unused[d] - taken[d], reverse=True):
        if sum(taken.values()) == amount:
            break
        taken[m] += 1
    return {m: t for m, t in taken.items() if t > 0}
