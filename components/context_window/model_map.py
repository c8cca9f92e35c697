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
"""The fields tda reads (limits, base prices), the rest of an entry dropped (the whole map parsed is ~10 MB); an entry
with a price tier (``..._above_272k_tokens``) is marked ``tiered``: litellm prices those."""


@cache
def _packaged() -> tuple[dict[str, dict[str, Any]], frozenset[str], frozenset[str]]:
    """(OpenAI's chat models by name, trimmed to ``FIELDS``; all of OpenAI's names, the catalog litellm lists; every
    name the map knows, whole and after its last '/')."""
    spec = importlib.util.find_spec("litellm")
    if not spec or not spec.submodule_search_locations:
        return {}, frozenset(), frozenset()
    path = Path(next(iter(spec.submodule_search_locations))) / MAP_FILE
    if not path.is_file():
        return {}, frozenset(), frozenset()
    data = json.loads(path.read_bytes())
    # a fine-tuned model's name ("ft:...") litellm reads by its base model's: left to litellm
    catalog = {
        name: entry
        for name, entry in data.items()
        if isinstance(entry, dict) and entry.get("litellm_provider") == "openai" and not name.startswith("ft:")
    }
    chat = {
        name: {
            **{field: entry[field] for field in FIELDS if field in entry},
            "tiered": any("_above_" in field for field in entry),
        }
        for name, entry in catalog.items()
        if entry.get("mode") == "chat"  # an image or audio model's output is priced otherwise: litellm's
    }
    known = frozenset(data) | frozenset(name.rsplit("/", 1)[-1] for name in data)
    return chat, frozenset(catalog), known


def info(model: str) -> dict[str, Any] | None:
    """What ``litellm.get_model_info(model)`` says of an OpenAI chat model (the fields in ``FIELDS``), ``{}`` for a
    name the map has no entry for under any provider (litellm raises for it), or None when litellm must answer
    (another provider's model, another kind of model, or a name only litellm can place)."""
    chat, _, known = _packaged()
    name = model.removeprefix("openai/")
    if name in chat:
        return chat[name]
    if "/" not in name and name not in known and known:
        return {}
    return None


def openai_catalog() -> frozenset[str]:
    """OpenAI's own model names as litellm lists them (``open_ai_chat_completion_models``: not fine-tuned ones)."""
    return _packaged()[1]
