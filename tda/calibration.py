"""Calibrated token counts: for a model without an offline tokenizer, the provider's own prompt counts tune the
estimate. Every model call's reported ``prompt_tokens`` is set against cl100k's count of exactly what was sent; the
largest ratio seen is stored (shared by replicas) and the component counts the model by it, plus a margin
(``components.context_window.token_estimator.calibrate``): never below what the provider counted on a request seen.

A store write happens only when the ratio grows or while few counts are in; other replicas re-read the table at
most every ``REFRESH_S``."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from components.context_window.base import ToolSchema
from components.context_window.token_estimator import (
    CALIBRATION_MIN_SAMPLES,
    Calibration,
    calibratable,
    calibrate,
    calibration_for,
    calibrations,
    provider_ratio,
)

if TYPE_CHECKING:
    from .store.calibrations import CalibrationStore

REFRESH_S = 30.0


class Calibrations:
    def __init__(self, store: CalibrationStore) -> None:
        self.store = store
        self._read_at = 0.0

    async def load(self) -> None:
        """The stored ratios replace those in memory (at start-up, and every ``REFRESH_S`` while turns run)."""
        stored = await self.store.all()
        self._read_at = time.monotonic()
        for model in set(calibrations()) - {m.lower() for m in stored}:
            calibrate(model, None)
        for model, (ratio, samples) in stored.items():
            calibrate(model, Calibration(ratio, samples))

    async def observe(
        self, model: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], prompt: int
    ) -> None:
        """The provider counted ``prompt`` tokens for ``messages`` and ``tools`` as sent to ``model``."""
        if prompt <= 0 or not calibratable(model):
            return
        ratio = provider_ratio(messages, [ToolSchema.from_openai(t) for t in tools], prompt)
        if ratio <= 0:
            return
        known = calibration_for(model)
        if known is None or known.samples < CALIBRATION_MIN_SAMPLES or ratio > known.ratio:
            calibrate(model, Calibration(*await self.store.record(model, ratio)))
        elif time.monotonic() - self._read_at > REFRESH_S:
            await self.load()
