"""Tokens of a message's non-text content parts (images, files), by the provider's documented rules.

Provisional rule until per-model tables land: an image is OpenAI's high-detail worst case unless it asks for
``detail: low`` (85); any other part is counted as the JSON text sent, an upper bound.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

LOW_DETAIL_IMAGE = 85
HIGH_DETAIL_WORST_CASE = 85 + 170 * 8
"""OpenAI's tile rule at its largest: a 768 x 2048 image is 2 x 4 tiles of 512 px, 170 tokens each, plus 85."""
TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})


def part_tokens(part: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """Tokens one content part adds to its message (``count`` counts text)."""
    kind = part.get("type")
    if kind in TEXT_PART_TYPES:
        return count(str(part.get("text", "")))
    if kind == "image_url":
        image = part.get("image_url")
        detail = image.get("detail", "auto") if isinstance(image, Mapping) else "auto"
        return LOW_DETAIL_IMAGE if detail == "low" else HIGH_DETAIL_WORST_CASE
    return count(json.dumps(_plain(part), ensure_ascii=False, separators=(",", ":")))


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
