"""litellm's packaged model map (``model_prices_and_context_window_backup.json``, what litellm itself reads offline),
read without importing litellm: importing it costs a server ~125 MB and seconds. Answers only what it can answer
as litellm would, for OpenAI's own models (the names tda calls OpenAI-compatible upstreams by); for any other
model ``info`` says "ask litellm" (None). tests/test_model_map.py holds every answer to litellm's own.
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path
from typing import Any

MAP_FILE = "model_prices_and_context_window_backup.json"
FIELDS = (
    "max_input_tokens",
    "max_output_tokens",
    "input_cost_per_token",
    "output_cost_per_token",
    "cache_read_input_token_cost",
    "cache_creation_input_token_cost",
    "litellm_provider",
    "mode",
)
"""The fields tda reads (limits, base prices); an entry with a price tier (``..._above_272k_tokens``) is marked
``tiered`` instead of kept whole: litellm prices those."""


@cache
def _packaged() -> tuple[dict[str, dict[str, Any]], frozenset[str]]:
    """(OpenAI's entries by name, trimmed to ``FIELDS``; every name the map knows, whole and after its last '/')."""
    spec = importlib.util.find_spec("litellm")
    if not spec or not spec.submodule_search_locations:
        return {}, frozenset()
    path = Path(next(iter(spec.submodule_search_locations))) / MAP_FILE
    if not path.is_file():
        return {}, frozenset()
    data = json.loads(path.read_bytes())
    openai = {
        name: {
            **{field: entry[field] for field in FIELDS if field in entry},
            "tiered": any("_above_" in field for field in entry),
        }
        for name, entry in data.items()
        if isinstance(entry, dict) and entry.get("litellm_provider") == "openai" and not name.startswith("ft:")
    }  # a fine-tuned model's name ("ft:...") litellm reads by its base model's: left to litellm
    known = frozenset(data) | frozenset(name.rsplit("/", 1)[-1] for name in data)
    return openai, known


def info(model: str) -> dict[str, Any] | None:
    """What ``litellm.get_model_info(model)`` says of an OpenAI model (the fields in ``FIELDS``), ``{}`` for a name
    the map has no entry for under any provider (litellm raises for it), or None when litellm must answer (another
    provider's model, or a prefixed name whose provider only litellm knows)."""
    openai, known = _packaged()
    name = model.removeprefix("openai/")
    if name in openai:
        return openai[name]
    if "/" not in name and name not in known and known:
        return {}
    return None


@cache
def openai_catalog() -> frozenset[str]:
    """OpenAI's own model names as litellm lists them (``open_ai_chat_completion_models``: not fine-tuned ones)."""
    return frozenset(_packaged()[0])
