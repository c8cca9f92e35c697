"""component_instructions: how to use the components enabled on the profile (charting, tables, ...).

Texts arrive in ``ctx.extras["component_instructions"]``: ``{component: {"full": str, "medium": str,
"light": str}}``; only components listed in ``ctx.profile.components`` are used, in that order. The
starting intensity is the option ``intensity`` (default "full"). A missing intensity falls back to
the next lighter text, else the nearest fuller one. When the budget is short, intensity steps down
one component at a time from the last (full, full -> full, medium -> medium, medium -> ... -> light,
light); below all-light, components are dropped from the end. Placement "system": the texts are
stable within a session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from components.context_window.base import (
    AssemblyContext,
    ContextModule,
    Contribution,
    ModuleManifest,
    TokenCounter,
    joined,
    text_contribution,
)
from components.context_window.fitting import estimator, fit_blocks
from components.context_window.options import option

from .options import INTENSITIES, ComponentOptions

HEADER = "## Component instructions"


class ComponentInstructionsModule(ContextModule):
    options_model = ComponentOptions

    def __init__(self, manifest: ModuleManifest) -> None:
        super().__init__(manifest)
        self._last: dict[str, Any] = {}

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        texts, missing = enabled_texts(ctx)
        start = option(ctx.directives.config, "intensity", "full")
        if start not in INTENSITIES:
            raise ValueError(f"option 'intensity' must be one of {', '.join(INTENSITIES)}, got {start!r}")
        blocks, chosen = fit_intensities(texts, INTENSITIES.index(start), budget, estimator(ctx))
        names = list(texts)
        meta: dict[str, Any] = {
            "intensities": dict(zip(names, chosen, strict=False)),  # dropped components have none
            "dropped": names[len(blocks) :],
            "missing": missing,
        }
        if not blocks:
            meta["reason"] = f"{budget} tokens cannot hold one light instruction"
            if not names:
                meta["reason"] = "no enabled component has instructions"
        strategy = _strategy(start, chosen, len(names))
        self._last = meta | {"budget": budget, "strategy": strategy}
        return text_contribution(
            self.module_id, blocks, placement="system", strategy=strategy, metadata=meta, header=HEADER
        )

    def get_status(self) -> dict[str, Any]:
        return super().get_status() | {"last": dict(self._last)}


def enabled_texts(ctx: AssemblyContext) -> tuple[dict[str, Mapping[str, str]], list[str]]:
    """Instruction texts of the profile's components, in profile order, and the enabled ones without any."""
    catalogue = ctx.extras.get("component_instructions") or {}
    if not isinstance(catalogue, Mapping):
        raise ValueError(
            "extras['component_instructions'] must map component names to {'full', 'medium', 'light'} texts"
        )
    texts: dict[str, Mapping[str, str]] = {}
    missing: list[str] = []
    for name in ctx.profile.components:
        spec = catalogue.get(name)
        if spec is None:
            missing.append(name)
            continue
        has_text = isinstance(spec, Mapping) and any(
            isinstance(spec.get(i), str) and spec[i].strip() for i in INTENSITIES
        )
        if not has_text:
            raise ValueError(
                f"instructions for component {name!r} need at least one of 'full', 'medium', 'light' as text"
            )
        texts[name] = spec
    return texts, missing


def fit_intensities(
    texts: Mapping[str, Mapping[str, str]], start: int, budget: int, tokens: TokenCounter
) -> tuple[list[str], list[str]]:
    """The fullest blocks that fit, and the intensity each got; below all-light, drop from the end."""
    names = list(texts)
    for levels in intensity_steps(len(names), start):
        picked = [text_at(texts[n], level) for n, level in zip(names, levels, strict=True)]
        blocks = [f"### {n}\n{text}" for n, (_, text) in zip(names, picked, strict=True)]
        if tokens.count(joined(HEADER, blocks)) <= budget:
            return blocks, [intensity for intensity, _ in picked]
    blocks = fit_blocks(blocks, budget, tokens, HEADER)  # the last step tried is all-light
    return blocks, [intensity for intensity, _ in picked[: len(blocks)]]


def text_at(spec: Mapping[str, str], level: int) -> tuple[str, str]:
    """(intensity, text) for ``level``: that one, else the next lighter, else the nearest fuller."""
    for i in [*range(level, len(INTENSITIES)), *range(level - 1, -1, -1)]:
        text = spec.get(INTENSITIES[i])
        if isinstance(text, str) and text.strip():
            return INTENSITIES[i], text.strip()
    raise AssertionError("enabled_texts guarantees one text")


def intensity_steps(count: int, start: int) -> Sequence[tuple[int, ...]]:
    """Every component at ``start``, then one component at a time a step lighter, last component first."""
    levels = [start] * count
    steps = [tuple(levels)]
    for level in range(start + 1, len(INTENSITIES)):
        for i in reversed(range(count)):
            levels[i] = level
            steps.append(tuple(levels))
    return steps


def _strategy(start: str, chosen: list[str], enabled: int) -> str:
    if not chosen:
        return "empty"
    if len(chosen) < enabled:
        return "dropped_components"
    return "full" if all(c == start for c in chosen) else "reduced_intensity"
