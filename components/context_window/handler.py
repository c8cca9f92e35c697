"""ContextWindowHandler: the passes that turn (context, window type) into a window that always fits.

    resolve   -> which modules take part (skipped shares are redistributed)
    signals   -> early facts from the modules (e.g. RAG's top score), gathered concurrently
    adjust    -> dynamic-adjustment rules change targets and directives
    allocate  -> clamp to min/max, contribute concurrently under a per-module timeout
    surplus   -> under-using donors give to condensable recipients near their allocation (asked again with it; one
                 that left content out is asked in the fill instead, with all the room left)
    condense  -> condensation order, then trimming whole units, until the total fits
    fill      -> room no module took goes to the modules that left content out (a long history)

Every figure is counted with one TokenEstimator on the exact text sent, so the guarantee
``total_used <= available_budget`` holds by construction (or ``BudgetExceeded`` explains why not).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Coroutine, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any, Protocol

from . import budget as b
from . import window_type as wt
from .background import Background
from .base import (
    AssemblyContext,
    ContextModule,
    Contribution,
    Directives,
    JoinedMessages,
    Message,
    ToolSchema,
    freeze,
)
from .conditions import Facts, holds
from .content_parts import media_note
from .isolation import BLOCKING_WARN_S, Outcome, checked_contribution, checked_signals, run_calls
from .loop_cut import cut_loop
from .metering import MeteredSummarizer
from .options import usable_options
from .session_cache import BoundedCache, content_key
from .snapshot import AuxiliaryCall, Condensation, ContextWindowSnapshot, ModuleUsage, Reallocation
from .token_estimator import REPLY_PRIMING, TokenEstimator, estimator_for, function_definition, resolve_model_limit

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 2.0
AHEAD_JOBS = 32
"""Work ahead of sessions' next calls (``ContextWindowHandler.ahead``) running at once, at most: past it, what a call
would start is not started (it was only ahead of time)."""
FILL_MIN_TOKENS = 64
"""Room below this is not offered again in the fill pass (a module call to add a line or two is not worth it)."""
FULL_WINDOW_PCT = 80
"""A window that leaves content out is at least this full (of the available budget). When a tool loop may follow,
the fill lets a module keep the rest free for the turn's later steps (``Directives.loop_spare``)."""
SPARE_ASKS = 4
"""How many times the fill asks a module that kept room for a tool loop again with less spare (its rounding left the
window under ``FULL_WINDOW_PCT``) before it asks for the room filled."""
_PLACEMENT_ORDER = {"system": 0, "tools": 1, "history": 2, "context": 3}


@dataclass(frozen=True, slots=True)
class _ToolItem:
    """A tool in the window as compared with the previous window (by the JSON sent), with the schema it is
    counted by."""

    json: str
    schema: ToolSchema = field(compare=False)


def ahead_context(ctx: AssemblyContext, joining: Sequence[Message]) -> AssemblyContext:
    """The context of the first call of ``ctx``'s session's next turn as far as it is known beside ``ctx``'s call: its
    history ``ctx``'s with ``joining`` (the call's query, tool loop and reply) after it, its question not known yet
    (empty)."""
    session = ctx.session
    history = JoinedMessages(session.message_source(), tuple(joining))
    following = replace(session, history=history, current_turn=session.turn_number + 1)
    return replace(ctx, session=following, query="", query_message=None, continuation=(), memo={})


def window_limits(ctx: AssemblyContext, wtype: wt.ContextWindowType) -> b.Limits:
    """The limits of ``ctx``'s window under ``wtype``: the model's input limit (the context's, else looked up), lowered
    by the profile's and the session's limits, less the type's output reserve."""
    model_limit, source = (ctx.model_limit, "context") if ctx.model_limit else resolve_model_limit(ctx.model)
    return b.resolve_limits(
        model_limit, source, ctx.profile.context_limit, ctx.session.context_limit, wtype.output_reserve_pct
    )


def _is_tool(item: Any) -> bool:
    return type(item) is _ToolItem


def prompt_order(items: list[Any], model: str) -> list[Any]:
    """The window's items in the order ``model``'s provider reads its prompt, where its cache prefix runs.
    Anthropic: tools, then system, then messages (its prompt-caching guide); litellm moves every system message
    into the system block. Gemini: litellm moves the system messages into ``system_instruction``, read before the
    tools and the contents (assumed: Google documents no order for implicit caching). Others (OpenAI): as sent,
    the function definitions rendered after the system text (the items themselves: nothing to sort, and every call
    of a long session's window would otherwise sort its ~120 items for nothing)."""
    base = model.lower().rpartition("/")[2]
    claude = "claude" in base
    if not claude and "gemini" not in base:
        return items
    is_system = [isinstance(i, str) or (isinstance(i, Message) and i.role == "system") for i in items]
    system = [i for i, s in zip(items, is_system, strict=True) if s]
    tools = [i for i in items if _is_tool(i)]
    rest = [i for i, s in zip(items, is_system, strict=True) if not s and not _is_tool(i)]
    return [*tools, *system, *rest] if claude else [*system, *tools, *rest]


class ModuleSource(Protocol):
    """What the handler needs from a registry."""

    def get(self, module_id: str) -> ContextModule | None: ...

    def is_active(self, module_id: str) -> bool: ...


@dataclass
class AssembledContext:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    snapshot: ContextWindowSnapshot
    contributions: dict[str, Contribution]
    stable_messages: int = 0
    """How many leading messages are the window's stable part (system text, tools' descriptions, history): where
    per-turn context and the query begin. A provider with explicit prompt caching is told to cache up to here."""


@dataclass
class _Slot:
    """One module's state during one assembly."""

    module: ContextModule
    spec: wt.ModuleSlot
    condensable: bool
    target_pct: float
    allocated: int = 0
    max_tokens: int = 0
    contribution: Contribution | None = None
    status: str = "ok"
    reason: str = ""
    force_full: bool = False
    condense_rule: wt.Condense | None = None
    rule_target: int | None = None
    """The condense rule's target in tokens (its share of the allocation made in pass 3)."""
    condensed: bool = False
    fell_back: bool = False
    """Its contribute() failed or timed out and what its ``fallback()`` gave is sent (status stays the failure's)."""
    received: int = 0
    donated: int = 0
    blocked_s: float = 0.0
    waited_s: float = 0.0
    filling: bool = False
    """Asked again in the fill pass: no condense rule binds it (its directives carry no condense target)."""
    spare: int = 0
    """What the fill pass lets it leave unused of its ask for a tool loop's later steps (``Directives.loop_spare``)."""
    view: tuple[Any, AssemblyContext] | None = None
    """The context this module was last handed, and the directives it was built for (see ``_module_ctx``)."""
    options: tuple[Mapping[str, Any], Any] | None = None
    """The slot's config as the module gets it, and its options model instance (see ``_options``)."""

    @property
    def module_id(self) -> str:
        return self.module.module_id

    @property
    def priority(self) -> int:
        return self.spec.priority

    @property
    def sent(self) -> bool:
        """Its contribution goes out: contribute() gave it, or its fallback did."""
        return self.status == "ok" or self.fell_back

    @property
    def used(self) -> int:
        return self.contribution.tokens if self.contribution is not None and self.sent else 0


@dataclass
class _Run:
    """The working state of one assembly, passed from pass to pass."""

    ctx: AssemblyContext
    wtype: wt.ContextWindowType
    limits: b.Limits
    tokens: TokenEstimator
    query: Message
    query_tokens: int
    slots: dict[str, _Slot] = field(default_factory=dict)
    skipped: list[ModuleUsage] = field(default_factory=list)
    signals: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    decisions: list[str] = field(default_factory=list)
    fired: list[str] = field(default_factory=list)
    condensations: list[Condensation] = field(default_factory=list)
    reallocations: list[Reallocation] = field(default_factory=list)
    auxiliary: list[AuxiliaryCall] = field(default_factory=list)
    """Every model call the modules made through the summarizer (see metering.py)."""
    memos: dict[str, dict[Hashable, Any]] = field(default_factory=dict)
    distillation: dict[str, Any] | None = None
    """The window type's distillation settings as plain data, read once per assembly (frozen per module)."""
    started: float = 0.0

    @property
    def module_budget(self) -> int:
        """What the modules share: the available budget less the query and the reply priming."""
        return self.limits.available - self.query_tokens - REPLY_PRIMING

    @property
    def total_used(self) -> int:
        return sum(s.used for s in self.slots.values()) + self.query_tokens + REPLY_PRIMING

    def log(self, line: str) -> None:
        self.decisions.append(line)


class ContextWindowHandler:
    def __init__(
        self,
        modules: ModuleSource,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        estimator: Callable[[str], TokenEstimator] = estimator_for,
        remember_sessions: int = 1024,
    ) -> None:
        self.modules = modules
        self.timeout_s = timeout_s
        self._estimator = estimator
        self._validated: BoundedCache[tuple[str, Any], tuple[dict[str, Any], Any, list[str]]] = BoundedCache(1024)
        """Per (a slot's config, by content; options model): the config it validated to, the options, what was
        dropped. Validated once per distinct config, not per turn; a config edited in place is validated anew."""
        self._previous: BoundedCache[str, list[Any]] = BoundedCache(max(remember_sessions, 1))
        """Per session, the previous window's model and items in its prompt order: only ``prefix_stable_tokens``
        reads it."""
        self._remember = remember_sessions > 0
        """0: remember no session (previews and replays leave no trace)."""
        self.background = Background("work ahead of a session's next call", AHEAD_JOBS)
        self._made_ahead: BoundedCache[str, list[AuxiliaryCall]] = BoundedCache(max(remember_sessions, 1))
        """Per session, the model calls its modules made ahead that no window has reported yet (the next one does)."""

    async def assemble(self, ctx: AssemblyContext, window_type: wt.ContextWindowType) -> AssembledContext:
        try:
            return await self._assembled(ctx, window_type)
        except b.BudgetExceeded as exc:
            # The turn's own tool loop alone exceeds the room (a 40K-token file read into a 16K window): its results
            # are cut to their beginnings rather than the call refused; nothing older has room beside them.
            excess = exc.floor_tokens - exc.available
            loop = await self._loop_cut(ctx, excess) if ctx.continuation else None
            if loop is None:
                raise
            note = f"the turn's tool loop exceeds the room by {excess:,} tokens: its results cut to their beginnings"
            return await self._assembled(_loop_alone(ctx, loop), window_type, note)

    async def _loop_cut(self, ctx: AssemblyContext, excess: int) -> tuple[Message, ...] | None:
        """``cut_loop`` of the turn's tool loop, off the event loop when the application hands a runner: a loop
        over the window holds thousands of tokens, counted again at each try of the cut (a 40K-token file read: 0.05-0.3
        s with tiktoken, seconds with a Hugging Face tokenizer)."""
        tokens = self._estimator(ctx.model)
        work = partial(cut_loop, ctx.continuation, excess, tokens)
        return await ctx.offload(work) if ctx.offload is not None else work()

    async def _assembled(
        self, ctx: AssemblyContext, window_type: wt.ContextWindowType, note: str | None = None
    ) -> AssembledContext:
        run = self._start(ctx, window_type)
        if note:
            run.log(note)
        self._resolve(run)
        if run.module_budget < 0:
            await self._raise_floor(run)
        await self._gather_signals(run)
        self._adjust(run)
        await self._allocate_and_contribute(run)
        await self._reallocate_surplus(run)
        await self._condense(run)
        await self._fill(run)
        return self._finish(run)

    def ahead(self, ctx: AssemblyContext, window_type: wt.ContextWindowType, joining: Sequence[Message]) -> None:
        """Beside a session's call (``ctx``'s): ``joining`` (its query, tool loop and reply, or the loop so far while
        a step is answered) is history at the session's next turn. Each active module of ``window_type`` is handed
        that turn's context as far as it is known (``ahead_context``) and may start work it will need
        (``ContextModule.ahead``), run in ``background``. Its model calls are reported by the session's next window
        (``auxiliary_calls``, marked ``ahead``)."""
        if not ctx.session.id:
            return
        run = self._start(ahead_context(ctx, joining), window_type)
        made = self._made_ahead.get(ctx.session.id)
        run.auxiliary = made if made is not None else self._made_ahead.put(ctx.session.id, [])
        self._resolve(run)
        for slot in _working_ahead(run.slots.values()):
            try:
                work = slot.module.ahead(self._module_ctx(run, slot))
            except Exception as exc:  # a module's fault: the next call does the work itself
                log.warning("module %s: work ahead not started: %s", slot.module_id, exc)
                continue
            if work is not None:
                self.background.start(work)

    async def close(self) -> None:
        """Stop the work ahead still running (shutdown: before what it uses, the model's client, is closed)."""
        await self.background.close()

    def _reported_ahead(self, session_id: str) -> list[AuxiliaryCall]:
        """The session's model calls made ahead and not reported yet, marked as such (taken: reported once)."""
        made = self._made_ahead.get(session_id) if session_id else None
        if not made:
            return []
        reported = [replace(call, ahead=True) for call in made]
        made.clear()
        return reported

    # -- set-up ----------------------------------------------------------------------------------

    def _start(self, ctx: AssemblyContext, wtype: wt.ContextWindowType) -> _Run:
        ctx = ctx.read_only()
        limits = window_limits(ctx, wtype)
        started = time.perf_counter()  # after the limit lookup: litellm's one-off import is not assembly time
        tokens = self._estimator(ctx.model)
        query = ctx.query_message or Message("user", ctx.query, turn=ctx.session.turn_number)
        # The turn's own tool loop is part of the query: the model answers the whole of it.
        query_tokens = tokens.count_message(query) + sum(tokens.count_message(m) for m in ctx.continuation)
        if ctx.tools_as_sent:  # the client's own tools go with its query: the floor, as sent
            query_tokens += tokens.count_tools(ctx.tools)
        run = _Run(ctx, wtype, limits, tokens, query, query_tokens, started=started)
        run.log(
            f"limit {limits.effective_limit:,} ({limits.limit_source}); reserve {limits.output_reserve:,}; "
            f"available {limits.available:,}; query {run.query_tokens:,}"
            + (f" (with {len(ctx.continuation)} tool-loop messages)" if ctx.continuation else "")
        )
        return run

    async def _raise_floor(self, run: _Run) -> None:
        """The query alone does not fit: ask only the floor's modules (non-condensable: the system prompt, ...) and
        report the whole floor, so a caller who raises the limit to it is not refused again."""
        floor = {m: 0 for m, s in run.slots.items() if not s.condensable}
        run.log(f"the query ({run.query_tokens:,}) does not fit; measuring the floor only ({', '.join(floor)})")
        await self._contribute(run, floor)
        parts = self._floor_parts(run)
        raise b.BudgetExceeded(sum(parts.values()), run.limits.available, parts)

    # -- pass 1: resolve -------------------------------------------------------------------------

    def _resolve(self, run: _Run) -> None:
        freed = 0.0
        for module_id, spec in run.wtype.modules.items():
            module = self.modules.get(module_id)
            reason = self._skip_reason(spec, module, module_id, run.ctx.profile.type)
            if reason:
                freed += spec.target_pct  # inactive, not installed, switched off or not applicable alike
                run.skipped.append(ModuleUsage(module_id, "skipped", spec.priority, 0.0, reason=reason))
                run.log(f"pass 1: skip {module_id}: {reason}")
                continue
            assert module is not None
            run.slots[module_id] = _Slot(module, spec, module.manifest.capabilities.condensable, spec.target_pct)
        targets = b.redistribute({m: s.target_pct for m, s in run.slots.items()}, freed)
        for module_id, target in targets.items():
            run.slots[module_id].target_pct = target
        if freed:
            run.log(f"pass 1: redistributed {freed:g}% from skipped modules proportionally")

    def _skip_reason(self, spec: wt.ModuleSlot, module: ContextModule | None, module_id: str, profile_type: str) -> str:
        if not spec.active:
            return "inactive in this window type"
        if module is None:
            return "not installed"
        if not self.modules.is_active(module_id):
            return "deactivated"
        if not module.applies_to(profile_type):
            return f"not applicable to {profile_type} profiles"
        return ""

    # -- signals ---------------------------------------------------------------------------------

    async def _gather_signals(self, run: _Run) -> None:
        slots = {m: s for m, s in run.slots.items() if type(s.module).signals is not ContextModule.signals}
        outcomes = await self._call(run, {m: s.module.signals(self._module_ctx(run, s)) for m, s in slots.items()})
        for module_id, outcome in outcomes.items():
            if outcome.status != "ok":
                run.log(f"signals: {module_id} {outcome.status} ({outcome.reason}); ignored")
                continue
            good, bad = checked_signals(outcome.value)
            for problem in bad:
                run.log(f"signals: {module_id}: {problem}; ignored")
                log.warning("module %s: %s; ignored", module_id, problem)
            if good:
                run.signals[module_id] = good

    # -- pass 2: adjust --------------------------------------------------------------------------

    def _adjust(self, run: _Run) -> None:
        ctx = run.ctx
        facts = Facts(
            turn_number=ctx.session.turn_number,
            documents_attached=len(ctx.session.documents),
            effective_limit=run.limits.effective_limit,
            phase=ctx.session.phase,
            signals=run.signals,
        )
        for rule in run.wtype.dynamic_adjustments:
            if not holds(rule.condition, facts):
                continue
            if rule.action.module not in run.slots:
                run.log(f"pass 2: {rule.describe()} fired, but {rule.action.module} is not taking part")
                continue
            self._apply(run, rule.action)
            run.fired.append(rule.describe())
            run.log(f"pass 2: {rule.describe()}")
        forced = [m for m, s in run.slots.items() if s.force_full]
        capped = b.cap_total({m: s.target_pct for m, s in run.slots.items()}, fixed=forced)
        for module_id, target in capped.items():
            run.slots[module_id].target_pct = target

    def _apply(self, run: _Run, action: Any) -> None:
        slot = run.slots[action.module]
        targets = {m: s.target_pct for m, s in run.slots.items()}
        if isinstance(action, wt.Reduce):
            freed = slot.target_pct * action.by_pct / 100
            targets[action.module] -= freed
            targets = b.redistribute(targets, freed, exclude={action.module})
        elif isinstance(action, wt.Transfer):
            moved, targets[action.module] = targets[action.module], 0.0
            if action.to in targets:
                targets[action.to] += moved
            else:
                targets = b.redistribute(targets, moved, exclude={action.module})
        elif isinstance(action, wt.ForceFull):
            slot.force_full = True
            targets[action.module] = max(slot.target_pct, slot.spec.max_pct)
        elif isinstance(action, wt.Condense):
            slot.condense_rule = action
        for module_id, target in targets.items():
            run.slots[module_id].target_pct = target

    # -- pass 3: allocate and contribute ---------------------------------------------------------

    async def _allocate_and_contribute(self, run: _Run) -> None:
        budget = run.module_budget
        allocation = b.allocate(
            {m: s.target_pct for m, s in run.slots.items()},
            {m: (s.spec.min_pct, s.spec.max_pct) for m, s in run.slots.items()},
            budget,
        )
        for module_id, slot in run.slots.items():
            slot.allocated = allocation[module_id]
            slot.max_tokens = max(slot.allocated, math.floor(slot.spec.max_pct * budget / 100))
            if slot.condense_rule is not None:
                slot.rule_target = math.floor(slot.allocated * slot.condense_rule.to_pct / 100)
        ordered = sorted(run.slots.values(), key=lambda s: (-s.priority, s.module_id))
        await self._contribute(run, {s.module_id: s.allocated for s in ordered})
        for slot in ordered:
            if slot.status == "ok" and slot.used > slot.allocated:
                run.log(f"pass 3: {slot.module_id} used {slot.used:,} of its {slot.allocated:,} allocation")
        for slot in ordered:
            if slot.condense_rule is not None and slot.status == "ok":
                await self._condense_by_rule(run, slot, slot.condense_rule)

    async def _contribute(self, run: _Run, budgets: dict[str, int]) -> None:
        """Call contribute() on these slots under the timeout; a failure is recorded, never raised.

        A non-condensable module is always asked, even with no allocation: what it sends is the floor,
        sent whole or reported by ``BudgetExceeded``, never silently left out.
        """
        calls: dict[str, Coroutine[Any, Any, Any]] = {}
        for module_id, budget in budgets.items():
            slot = run.slots[module_id]
            if budget <= 0 and slot.condensable:
                slot.status, slot.reason = "skipped", "no budget allocated"
                continue
            calls[module_id] = slot.module.contribute(max(budget, 0), self._module_ctx(run, slot))
        failed: dict[str, int] = {}
        for module_id, outcome in (await self._call(run, calls)).items():
            slot = run.slots[module_id]
            contribution = self._accepted(run, slot, outcome)
            if contribution is not None:
                slot.contribution, slot.status, slot.reason = contribution, "ok", ""
            else:
                slot.contribution, slot.status, slot.reason = None, outcome.status, outcome.reason
                failed[module_id] = max(budgets[module_id], 0)
        await self._fall_back(run, failed)

    async def _fall_back(self, run: _Run, budgets: dict[str, int]) -> None:
        """What the modules whose contribute() failed send in its place (``ContextModule.fallback``), under the same
        timeout, each with a fresh memo (surplus and the fill pass ask it again: ``_ask``). A module without one
        sends nothing, and its budget returns to the pool."""
        calls = {module_id: self._fallback(run, run.slots[module_id], budget) for module_id, budget in budgets.items()}
        for module_id, outcome in (await self._call(run, calls)).items():
            slot = run.slots[module_id]
            fallback = None if outcome.status == "ok" and outcome.value is None else self._accepted(run, slot, outcome)
            if fallback is not None:
                slot.contribution, slot.fell_back = fallback, True
                slot.reason += f"; its fallback was sent ({fallback.strategy})"
            elif outcome.status != "ok":
                slot.reason += f"; its fallback {outcome.status} too: {outcome.reason}"
            budget = "the rest of its budget" if slot.fell_back else "its budget"
            run.log(f"pass 3: {module_id} {slot.status}: {slot.reason}; {budget} returns to the pool")

    def _accepted(self, run: _Run, slot: _Slot, outcome: Outcome) -> Contribution | None:
        """The outcome's contribution, checked at the boundary and measured; None (outcome updated) if bad."""
        if outcome.status != "ok":
            return None
        try:
            return self._measured(run, checked_contribution(outcome.value, slot.module_id), slot.module_id)
        except (ValueError, TypeError) as exc:
            outcome.status, outcome.reason = "failed", f"invalid contribution: {exc}"
            return None

    async def _call(self, run: _Run, calls: Mapping[str, Coroutine[Any, Any, Any]]) -> dict[str, Outcome]:
        """Run module calls isolated (see isolation.py), adding up each module's time on the event loop."""
        if not calls:
            return {}
        outcomes = await run_calls(calls, self.timeout_s)
        for module_id, outcome in outcomes.items():
            slot = run.slots[module_id]
            slot.blocked_s += outcome.blocked_s
            slot.waited_s += outcome.waited_s
            if outcome.blocked_s > BLOCKING_WARN_S:
                log.warning(
                    "module %s held the event loop for %.3f s (%.3f s of it waiting for a CPU)",
                    module_id,
                    outcome.blocked_s,
                    outcome.waited_s,
                )
        return outcomes

    async def _condense_by_rule(self, run: _Run, slot: _Slot, rule: wt.Condense) -> None:
        target = slot.rule_target
        assert target is not None and slot.contribution is not None
        if slot.condensable and slot.contribution.condensed and slot.used <= target:  # condensed while contributing
            slot.condensed = True
            why = f"rule ({rule.strategy}), applied while contributing"
            c = slot.contribution
            run.condensations.append(Condensation(slot.module_id, slot.allocated, c.tokens, c.strategy, why))
            run.log(f"condense {slot.module_id} ({why}): {slot.allocated:,} allocated -> {c.tokens:,} [{c.strategy}]")
        elif slot.used > target:
            await self._condense_slot(run, slot, target, f"rule ({rule.strategy})")

    # -- pass 3b: surplus ------------------------------------------------------------------------

    async def _reallocate_surplus(self, run: _Run) -> None:
        if run.total_used > run.limits.available:
            run.log("pass 3b: over budget; no surplus is handed out")
            return
        slots = run.slots
        # A condense rule shifts a share to the others; what they leave unused comes back to it like any surplus (a
        # halved history must not leave the window mostly empty while it is cut). Until then it holds its target.
        released = {
            m: s.allocated - s.rule_target
            for m, s in slots.items()
            if s.condensed and s.rule_target is not None and s.allocated > s.rule_target
        }
        for module_id, tokens in released.items():
            slots[module_id].allocated -= tokens
        plan = b.plan_surplus(
            allocated={m: s.allocated for m, s in slots.items()},
            used={m: s.used + (s.contribution.held_back if s.contribution else 0) for m, s in slots.items()},
            recipients_allowed=[m for m, s in slots.items() if s.condensable and s.sent],
            priority={m: s.priority for m, s in slots.items()},
            max_tokens={m: s.max_tokens for m, s in slots.items()},
            released=released,
        )
        for module_id in sorted({*released, *plan.donations}):
            given = plan.donations.get(module_id, 0)
            slots[module_id].allocated -= given
            slots[module_id].donated = given + released.get(module_id, 0)
            run.reallocations.append(Reallocation(module_id, -slots[module_id].donated))
        recipients = [slots[m] for m in sorted(plan.grants)]
        for slot in recipients:
            slot.received = plan.grants[slot.module_id]
            slot.allocated += slot.received
            if slot.rule_target is not None:  # its rule's cut is undone by what it receives
                slot.rule_target = slot.allocated
            run.reallocations.append(Reallocation(slot.module_id, slot.received))
        if plan.grants:
            run.log(f"pass 3b: {sum(plan.grants.values()):,} surplus tokens to {', '.join(sorted(plan.grants))}")
        # One that left content out is asked in the fill, with all the room left (its grant included): a window asked
        # for here would be replaced there (an old session's history: a whole recall, ranked and packed, for nothing).
        left_out = [s.module_id for s in recipients if s.contribution is not None and s.contribution.left_out]
        if left_out:
            run.log(f"pass 3b: {', '.join(left_out)} left content out: asked in the fill")
        recipients = [s for s in recipients if s.module_id not in left_out]
        before = {s.module_id: (s.contribution, s.status, s.reason) for s in recipients}
        await self._contribute(run, {s.module_id: s.allocated for s in recipients if not s.fell_back})
        for slot in recipients:
            if slot.fell_back and (fuller := await self._ask(run, slot, slot.allocated)) is not None:
                slot.contribution = fuller
        for slot in recipients:  # keep the earlier result if the new one is no better
            earlier = before[slot.module_id]
            again = slot.contribution if slot.sent else None
            if again is None or again.tokens > slot.allocated or earlier[0] is None or again.tokens < earlier[0].tokens:
                slot.contribution, slot.status, slot.reason = earlier

    # -- pass 4: condense, then trim -------------------------------------------------------------

    async def _condense(self, run: _Run) -> None:
        for module_id in run.wtype.condensation_order:
            excess = run.total_used - run.limits.available
            if excess <= 0:
                return
            slot = run.slots.get(module_id)
            if slot is not None and slot.used > 0:
                await self._condense_slot(run, slot, max(0, slot.used - excess), "over budget")
        self._trim(run)

    async def _condense_slot(self, run: _Run, slot: _Slot, target: int, why: str) -> None:
        before = slot.contribution
        assert before is not None
        if not slot.condensable:  # a type saved before validation knew the module: never condense the floor
            run.log(f"condense {slot.module_id}: not condensable; sent whole")
            return
        if slot.fell_back:  # its condense() would fail as its contribute() did: trimmed instead
            run.log(f"condense {slot.module_id}: its fallback is trimmed, not condensed")
            return
        outcomes = await self._call(
            run, {slot.module_id: slot.module.condense(before, target, self._module_ctx(run, slot))}
        )
        outcome = outcomes[slot.module_id]
        smaller = self._accepted(run, slot, outcome)
        if smaller is None:
            run.log(f"condense {slot.module_id}: {outcome.status} ({outcome.reason}); kept as it was")
            return
        if smaller.tokens >= before.tokens:
            run.log(f"condense {slot.module_id}: no smaller result ({smaller.tokens:,} tokens); kept")
            return
        slot.contribution, slot.condensed = smaller, True
        run.condensations.append(Condensation(slot.module_id, before.tokens, smaller.tokens, smaller.strategy, why))
        run.log(f"condense {slot.module_id} ({why}): {before.tokens:,} -> {smaller.tokens:,} [{smaller.strategy}]")

    def _trim(self, run: _Run) -> None:
        """Drop whole units from the lowest-priority condensable contributions until the total fits."""
        trimmable = sorted(
            (s for s in run.slots.values() if s.condensable and s.used > 0), key=lambda s: (s.priority, s.module_id)
        )
        for slot in trimmable:
            excess = run.total_used - run.limits.available
            if excess <= 0:
                return
            assert slot.contribution is not None
            before = slot.contribution
            slot.contribution = self._drop_units(run, before, before.tokens - excess)
            slot.condensed = True
            run.condensations.append(Condensation(slot.module_id, before.tokens, slot.used, "trim", "over budget"))
            run.log(f"trim {slot.module_id}: {before.tokens:,} -> {slot.used:,} tokens, whole units dropped")
        if run.total_used > run.limits.available:  # only the floor is left, and it does not fit
            parts = self._floor_parts(run)
            assert sum(parts.values()) == run.total_used
            raise b.BudgetExceeded(run.total_used, run.limits.available, parts)

    @staticmethod
    def _floor_parts(run: _Run) -> dict[str, int]:
        """What the floor is made of: non-condensable contributions, the query and the reply priming."""
        parts = {s.module_id: s.used for s in run.slots.values() if not s.condensable and s.used}
        query = " ".join(filter(None, ("query", media_note(run.query.parts))))  # "query [1 image]": what to shrink
        query += ", the client's tools" if run.ctx.tools_as_sent and run.ctx.tools else ""
        query += " and the turn's tool results" if run.ctx.continuation else ""
        return parts | {query: run.query_tokens, "reply priming": REPLY_PRIMING}

    def _drop_units(self, run: _Run, c: Contribution, target: int) -> Contribution:
        """The largest run of units (kept from the protected end) whose measured size fits ``target``."""
        units = c.units

        def keep(n: int) -> Contribution:
            kept = units[len(units) - n :] if c.trim_from == "start" else units[:n]
            tail = min(c.volatile_tail, n) if c.trim_from == "start" else max(0, c.volatile_tail - (len(units) - n))
            trimmed = c.replace(units=kept, strategy=f"{c.strategy}+trim", volatile_tail=tail)
            return self._measured(run, trimmed, c.module_id)

        lo, hi = 0, len(units)  # keep(lo) fits (empty always does); find the largest n that fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if keep(mid).tokens <= target:
                lo = mid
            else:
                hi = mid - 1
        return keep(lo)

    # -- pass 5: fill ----------------------------------------------------------------------------

    async def _fill(self, run: _Run) -> None:
        """Room that no module took goes to the modules that left content out, highest priority first, past their
        ``max_pct`` and any condense rule: those bound a module's share while the modules compete for the budget,
        and a window sent half empty while older history is dropped serves no one.

        A step of a turn's tool loop is offered what the turn's first step was (its loop aside), cut back from the
        end of the module's per-turn tail (``Contribution.volatile_tail``) to the room left; asked again within
        that room when the tail is not enough. So every step of a turn sends the history part the first step
        sent, or its beginning: the provider's prompt cache holds within the turn. The first step's ask may leave
        room free for the loop (``_first_step_fill``): then the later steps send that part whole."""
        loop = sum(run.tokens.count_message(m) for m in run.ctx.continuation)
        may_loop = bool(run.ctx.tools or run.ctx.continuation)
        for slot in sorted(run.slots.values(), key=lambda s: (-s.priority, s.module_id)):
            before = slot.contribution
            if not slot.sent or not slot.condensable or before is None or not before.left_out:
                continue
            fits = slot.used + run.limits.available - run.total_used
            offered = fits + loop  # the turn's first step had the loop's room too
            if fits < slot.used + FILL_MIN_TOKENS and not may_loop:  # a loop's steps all take the fill's window
                continue
            slot.filling = True
            fuller = await self._first_step_fill(run, slot, offered, may_loop)
            if fuller is not None and fuller.tokens > fits:
                # the first step's window less the end of its tail, else a window for the room left
                fuller = self._tail_cut(run, fuller, fits) or await self._ask(run, slot, fits)
            if fuller is None or fuller.tokens > fits or (fuller.tokens <= before.tokens and not may_loop):
                run.log(f"fill {slot.module_id}: nothing more within {fits:,} tokens; kept as it was")
                continue
            slot.contribution, filled = fuller, fuller.tokens - slot.allocated
            if filled > 0:  # beyond its allocation: received (allocated = pass 3's - donated + received)
                slot.allocated += filled
                slot.received += filled
                run.reallocations.append(Reallocation(slot.module_id, filled))
            run.log(f"fill {slot.module_id}: {before.tokens:,} -> {fuller.tokens:,} tokens (room no module took)")

    async def _first_step_fill(self, run: _Run, slot: _Slot, offered: int, may_loop: bool) -> Contribution | None:
        """The slot asked to fill ``offered``, the room it had on the turn's first step. When a tool loop may follow,
        it may leave free what the window need not use (above ``FULL_WINDOW_PCT``); a window its own rounding left
        under that is asked again with less spare (``SPARE_ASKS`` times at most), then with none. Every
        step asks the same things in the same order, so each gets the first step's answer."""
        above = run.limits.available - math.ceil(run.limits.available * FULL_WINDOW_PCT / 100)
        spare = above if may_loop else 0
        for attempt in range(SPARE_ASKS):
            if spare <= 0:
                break
            slot.spare = spare
            fuller = await self._ask(run, slot, offered)
            slot.spare = 0
            if fuller is None or offered - fuller.tokens <= above or not fuller.left_out:
                return fuller
            spare -= (offered - fuller.tokens - above) * (attempt + 1)  # cut ends move in steps
        return await self._ask(run, slot, offered)

    async def _ask(self, run: _Run, slot: _Slot, budget: int) -> Contribution | None:
        """The slot's module asked to contribute within ``budget`` (isolated and measured; None if it failed): its
        fallback, when its contribute() failed this turn."""
        asked = (
            self._fallback(run, slot, budget)
            if slot.fell_back
            else slot.module.contribute(budget, self._module_ctx(run, slot))
        )
        return self._accepted(run, slot, (await self._call(run, {slot.module_id: asked}))[slot.module_id])

    def _fallback(self, run: _Run, slot: _Slot, budget: int) -> Coroutine[Any, Any, Contribution | None]:
        view = self._module_ctx(run, slot)
        return slot.module.fallback(budget, view.for_module(view.directives, run.tokens))  # a fresh memo

    def _tail_cut(self, run: _Run, c: Contribution, target: int) -> Contribution | None:
        """``c`` within ``target`` by dropping units from the end of its per-turn tail (what comes before is sent
        as it was), or None when the tail is not enough. When whole units leave the window under
        ``FULL_WINDOW_PCT``, the first unit dropped goes too with its results cut to the room left: the part before
        it is still the first step's, and the window full."""
        others = run.total_used - (run.slots[c.module_id].used if c.module_id in run.slots else 0)
        for tail in range(c.volatile_tail - 1, -1, -1):
            units = c.units[: len(c.units) - c.volatile_tail + tail]
            opens = tail and _opens(units[-1])  # a question whose answer is cut off, or a marker of nothing
            cut = self._measured(run, c.replace(units=units), c.module_id)
            if cut.tokens > target:
                continue
            if opens or (others + cut.tokens) * 100 < run.limits.available * FULL_WINDOW_PCT:
                fuller = self._with_next_cut(run, c, cut, len(units), target)
                if fuller is not None:
                    return fuller.replace(volatile_tail=tail + len(fuller.units) - len(units))
            if not opens:
                return cut.replace(volatile_tail=tail)
        return None

    def _with_next_cut(
        self, run: _Run, c: Contribution, kept: Contribution, n: int, target: int
    ) -> Contribution | None:
        """``kept`` (``c``'s first ``n`` units) and what follows it up to a call with its results (the marker or
        question that opens it), the call's results cut to fit ``target``; None when no call follows, or not even
        its call and notes fit."""
        end = n
        while end < len(c.units) and _opens(c.units[end]):
            end += 1
        following = c.units[end] if end < len(c.units) else ()
        if len(following) < 2 or not isinstance(following[0], Message) or not following[0].tool_calls:
            return None
        unit = tuple(m for m in following if isinstance(m, Message))
        head = self._measured(run, c.replace(units=c.units[:end]), c.module_id)
        excess = head.tokens + sum(run.tokens.count_message(m) for m in unit) - target
        for attempt in range(3):  # the measured unit may count a token or two more than its messages apart
            cut = cut_loop(unit, excess + 8 * attempt, run.tokens) if excess > 0 else unit
            if cut is None:
                return None
            fuller = self._measured(run, c.replace(units=(*c.units[:end], cut)), c.module_id)
            if fuller.tokens <= target:
                return fuller
        return None

    # -- output ----------------------------------------------------------------------------------

    def _finish(self, run: _Run) -> AssembledContext:
        total = run.total_used
        if total > run.limits.available:  # unreachable by construction; fail loudly rather than overflow
            raise AssertionError(f"assembled {total} tokens into {run.limits.available}")
        run.auxiliary[:0] = self._reported_ahead(run.ctx.session.id)
        messages, tools, items, stable_messages = self._render(run)
        stable = self._stable_prefix_tokens(run, items)
        snapshot = self._snapshot(run, total, stable)
        contributions = {m: s.contribution for m, s in run.slots.items() if s.contribution is not None and s.used}
        return AssembledContext(messages, tools, snapshot, contributions, stable_messages)

    def _render(self, run: _Run) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[Any], int]:
        """Stable first: system prompt and other system text, tools, history, per-turn context, query.

        Also returns the window as a list of comparable items (messages, texts, tools by their JSON) in order, and
        how many leading messages come before the per-turn context and the query (the stable part).
        """
        parts = sorted(
            (s.contribution for s in run.slots.values() if s.used > 0 and s.contribution is not None),
            key=lambda c: (_PLACEMENT_ORDER[c.placement], -run.slots[c.module_id].priority, c.module_id),
        )
        messages: list[dict[str, Any]] = []
        tools: list[dict[str, Any]] = []
        items: list[Any] = []
        client_tools = list(run.ctx.tools) if run.ctx.tools_as_sent else []
        stable: int | None = None
        for c in parts:
            if stable is None and c.placement == "context":
                stable = len(messages)
            if client_tools and c.placement != "system":  # the client's tools come right after the system text
                tools, client_tools = self._tools_as_sent(client_tools, items), []
            volatile_from = len(c.units) - c.volatile_tail if c.volatile_tail else None
            for n, unit in enumerate(c.units):
                if n == volatile_from and stable is None:  # recalled history changes per turn: not cached
                    stable = len(messages)
                for item in unit:
                    if isinstance(item, Message):
                        messages.append(item.to_chat())
                        items.append(item)
                    elif not isinstance(item, str):
                        tools.append(item.to_openai())
                        items.append(_ToolItem(item.json, item))
            text = c.text()
            if text:
                messages.append({"role": "system", "content": text})
                items.append(text)
        if client_tools:
            tools = self._tools_as_sent(client_tools, items)
        stable = len(messages) if stable is None else stable
        for message in (run.query, *run.ctx.continuation):
            messages.append(message.to_chat())
            items.append(message)
        return messages, tools, items, stable

    @staticmethod
    def _tools_as_sent(tools: list[ToolSchema], items: list[Any]) -> list[dict[str, Any]]:
        items.extend(_ToolItem(t.json, t) for t in tools)
        return [t.to_openai() for t in tools]

    def _stable_prefix_tokens(self, run: _Run, items: list[Any]) -> int:
        """Tokens of the items the window shares, from its start, with the session's previous window: the prefix a
        provider's prompt cache can reuse, measured in the order the provider reads the prompt (``prompt_order``)
        and counted by the model's tokenizer (a tool as the definition it is rendered into, not the larger figure
        it is charged). The tools block's fixed overhead counts once every tool sent is in the prefix. A cache is
        the model's own: nothing matches on a session's first window, nor after the model (or its tokenizer)
        changed: 0."""
        model = run.ctx.model
        ordered = prompt_order(items, model)
        previous = self._previous.get(run.ctx.session.id)
        if self._remember:
            self._previous.put(run.ctx.session.id, [model, ordered])
        if previous is None or previous[0] != model:
            return 0
        same = 0
        for now, before in zip(ordered, previous[1], strict=False):  # the windows may differ in length
            if now is not before and now != before:  # a cached history hands back the very same messages
                break
            same += 1
        tokens = run.tokens
        stable = sum(self._item_tokens(tokens, item) for item in ordered[:same])
        # Whether a tool is sent, and one past the prefix: each item's type looked for in C, not a call per item.
        if _ToolItem in map(type, ordered) and _ToolItem not in map(type, ordered[same:]):
            stable += tokens.tools_overhead
        return stable

    @staticmethod
    def _item_tokens(tokens: TokenEstimator, item: Any) -> int:
        if isinstance(item, Message):
            return tokens.count_message(item)
        if _is_tool(item):
            return tokens.count(function_definition(item.schema))  # what the provider tokenizes (litellm's count)
        return tokens.count_text_message(item)

    def _snapshot(self, run: _Run, total: int, stable: int) -> ContextWindowSnapshot:
        ctx, limits = run.ctx, run.limits
        usages = [
            ModuleUsage(
                module_id=s.module_id,
                status=s.status,  # type: ignore[arg-type]
                priority=s.priority,
                target_pct=round(s.target_pct, 2),
                allocated=s.allocated,
                used=s.used,
                condensed=s.condensed,
                strategy=s.contribution.strategy if s.contribution is not None else "",
                surplus_received=s.received,
                surplus_donated=s.donated,
                reason=s.reason,
                metadata=dict(s.contribution.metadata) if s.contribution is not None else {},
                blocked_ms=round(s.blocked_s * 1000, 3),
                waited_ms=round(s.waited_s * 1000, 3),
            )
            for s in sorted(run.slots.values(), key=lambda s: (-s.priority, s.module_id))
        ]
        return ContextWindowSnapshot(
            window_type_id=run.wtype.id,
            window_type_name=run.wtype.name,
            model=ctx.model,
            model_limit=limits.model_limit,
            model_limit_source=limits.model_limit_source,
            profile_override=limits.profile_override,
            session_override=limits.session_override,
            effective_limit=limits.effective_limit,
            output_reserve=limits.output_reserve,
            available_budget=limits.available,
            query_tokens=run.query_tokens,
            total_used=total,
            modules=usages + run.skipped,
            condensations=run.condensations,
            reallocations=run.reallocations,
            auxiliary_calls=list(run.auxiliary),  # a copy: an abandoned module's late call changes nothing
            adjustments_fired=run.fired,
            decisions=run.decisions,
            prefix_stable_tokens=stable,
            token_method=run.tokens.method,
            duration_ms=round((time.perf_counter() - run.started) * 1000, 3),
            session_id=ctx.session.id,
            profile_id=ctx.profile.id,
            turn=ctx.session.turn_number,
            created_at=datetime.now(UTC).isoformat(timespec="milliseconds"),
        )

    # -- helpers ---------------------------------------------------------------------------------

    def _module_ctx(self, run: _Run, slot: _Slot) -> AssemblyContext:
        """The read-only context a module call gets: built once per module and assembly, and again only if
        pass 2 changed its directives (a module is called up to four times a turn)."""
        settled = (slot.force_full, slot.condense_rule, slot.rule_target, slot.filling, slot.spare)
        if slot.view is not None and slot.view[0] == settled:
            return slot.view[1]
        if run.distillation is None:
            run.distillation = run.wtype.distillation.model_dump()
        config, options = self._options(run, slot)
        directives = Directives(
            force_full=slot.force_full,
            condense_strategy=slot.condense_rule.strategy if slot.condense_rule else None,
            condense_to=slot.rule_target if slot.condensable and not slot.filling else None,  # never the floor
            config=config,
            options=options,
            loop_spare=slot.spare,
        )
        inner = run.ctx.summarizer
        metered = MeteredSummarizer(inner, run.auxiliary, slot.module_id, run.tokens) if inner is not None else None
        view = run.ctx.for_module(directives, run.tokens, run.memos.setdefault(slot.module_id, {}), metered)
        slot.view = (settled, view)
        return view

    def _options(self, run: _Run, slot: _Slot) -> tuple[Mapping[str, Any], Any]:
        """The slot's config validated by the module's options model, once per assembly. Saving checks options;
        a type stored before that may hold a bad one: it is dropped (its default applies) and logged."""
        if slot.options is None:
            model = type(slot.module).options_model
            config: Mapping[str, Any] = slot.spec.config
            options, dropped = None, list[str]()
            if model is not None:
                key = (content_key(config), model)
                known = self._validated.get(key)
                if known is None:
                    options, dropped = usable_options(model, config)
                    known = self._validated.put(key, (options.model_dump(exclude_unset=True), options, dropped))
                config, options, dropped = known
            if dropped:
                run.log(f"{slot.module_id}: ignored invalid options {dropped} (the defaults apply); fix the type")
            slot.options = (freeze({**config, "distillation": run.distillation}), options)
        return slot.options

    def _measured(self, run: _Run, c: Contribution, module_id: str) -> Contribution:
        """The contribution with ``tokens`` counted here, on exactly what will be rendered."""
        if not isinstance(c, Contribution):
            raise TypeError(f"{module_id} returned {type(c).__name__}, not a Contribution")
        tokens = run.tokens
        n = 0
        has_text = False
        tools: list[ToolSchema] = []
        for unit in c.units:
            for item in unit:
                kind = type(item)
                if kind is Message:
                    n += tokens.count_message(item)
                elif kind is str:
                    has_text = True
                elif kind is ToolSchema:
                    tools.append(item)
                else:
                    raise TypeError(f"a unit holds a {kind.__name__}; use str, Message or ToolSchema")
        n += tokens.count_tools(tools)
        if has_text:
            n += tokens.count_text_message(c.text())
        return c.replace(tokens=n, module_id=module_id)


def _working_ahead(slots: Iterable[_Slot]) -> list[_Slot]:
    """The slots whose module does work ahead (overrides ``ContextModule.ahead``): only these get a context made
    (their options, directives and metered summarizer), the others' would be made for a ``None``."""
    return [slot for slot in slots if type(slot.module).ahead is not ContextModule.ahead]


def _loop_alone(ctx: AssemblyContext, loop: tuple[Message, ...]) -> AssemblyContext:
    """``ctx`` with its tool loop cut (``cut_loop``) and no older history: the turn alone exceeds the room, so
    nothing older goes beside it (what room the cut leaves is the spare litellm's count needs, not history's)."""
    session = replace(ctx.session, history=None, messages=(), current_turn=ctx.session.turn_number)
    return replace(ctx, session=session, continuation=loop)


def _opens(unit: Sequence[Any]) -> bool:
    """Whether a contribution's unit is a user or system message alone: a turn's question (or a marker of what
    follows) that a tail cut would leave without what follows it, right before the turn's own question. Claude's
    API gets the two as one user message (litellm merges them; a mid-conversation system message is a user one)."""
    return len(unit) == 1 and isinstance(unit[0], Message) and unit[0].role in ("user", "system")
