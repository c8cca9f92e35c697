"""What a turn's model call cost: the tokens the provider read from its prompt cache or wrote to it, and dollars
from litellm's own cost function (``litellm.cost_per_token``: its tiers, such as Gemini's price above 200K prompt
tokens, and cache prices), the input split by module in proportion to the tokens each put in the window."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from components.context_window import model_map

if TYPE_CHECKING:
    from components.context_window.snapshot import ContextWindowSnapshot

    from .llm import Completion

QUERY = "query"
"""Where the query, the turn's tool loop and the reply priming are charged (no module contributes them)."""


@cache
def prices(model: str) -> tuple[float, float, float, float] | None:
    """Dollars per token (input, cached input, cache write, output) from litellm's cost map, at its base tier; None
    when unknown (whether a model is priced at all: a call's dollars come from ``dollars``). A provider without a
    cached-input or cache-write price charges them as input."""
    light = model_map.info(model)
    if light is not None:  # OpenAI's models: litellm's map file read without importing litellm
        return _listed_prices(light) if "input_cost_per_token" in light else None
    from .llm import _litellm

    litellm = _litellm()
    try:
        info = litellm.get_model_info(model)
    except Exception:  # litellm raises for models it has no entry for
        return None
    price_in, price_out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    # A litellm Router registers each model it routes, priced or not, with an empty entry that get_model_info
    # fills with zeros: only a price in the cost map itself is known (else a house model would cost "$0").
    listed = litellm.model_cost.get(info.get("key") or model) or {}
    if price_in is None or price_out is None or "input_cost_per_token" not in listed:
        return None
    return _listed_prices(info)


def _listed_prices(info: Mapping[str, Any]) -> tuple[float, float, float, float]:
    price_in = info["input_cost_per_token"]
    read = info.get("cache_read_input_token_cost")
    write = info.get("cache_creation_input_token_cost")
    return (
        float(price_in),
        float(price_in if read is None else read),
        float(price_in if write is None else write),
        float(info.get("output_cost_per_token") or 0),  # litellm's model info reads a missing price as 0
    )


def model_call(model: str, snapshot: ContextWindowSnapshot, done: Completion) -> dict[str, Any]:
    """The turn's model call as the provider reported it, and what it cost (``cost`` None for an unpriced model)."""
    prompt = done.tokens_in or snapshot.total_used
    read, written = done.cache_read_tokens, done.cache_write_tokens
    call: dict[str, Any] = {
        "model": model,
        "prompt_tokens": prompt,
        "cache_read_tokens": read,
        "cache_write_tokens": written,
        "completion_tokens": done.tokens_out,
        "cost": None,
    }
    if snapshot.auxiliary_calls:
        call["auxiliary"] = auxiliary(snapshot)
    if prices(model) is None:
        return call
    try:
        input_usd, output_usd = dollars(model, prompt, done.tokens_out, read=read, written=written)
        uncached_prompt_usd = dollars(model, prompt)[0]  # the same prompt, none of it cached: the same price tier
        per_million = tier_prices(model, prompt)
    except Exception:  # litellm raises for a model it cannot price after all: unknown, never $0
        return call
    fresh = max(0, prompt - read - written)
    uncached_usd = uncached_prompt_usd * fresh / prompt if prompt else 0.0
    cached_usd = input_usd - uncached_usd
    call["cost"] = {
        "input_usd": input_usd,
        "uncached_input_usd": uncached_usd,
        "cached_input_usd": cached_usd,
        "output_usd": output_usd,
        "total_usd": input_usd + output_usd,
        "saved_by_cache_usd": uncached_prompt_usd - input_usd,
        "input_by_module_usd": by_module(snapshot, input_usd),
        "by_module": module_split(snapshot, uncached_usd, cached_usd),
        "prices_per_million": per_million,
    }
    return call


def dollars(model: str, prompt: int, completion: int = 0, *, read: int = 0, written: int = 0) -> tuple[float, float]:
    """(input, output) dollars of one call as litellm prices it: ``prompt`` counts every input token, ``read`` of
    them read from the prompt cache and ``written`` written to it. litellm applies the model's tiers (a price
    above a prompt size applies to the whole prompt) and its cache prices. An OpenAI model with one price per token
    kind is priced here, as litellm's generic cost function does, without importing litellm."""
    light = model_map.info(model)
    if light and not light["tiered"] and "input_cost_per_token" in light:
        price_in, price_read, price_write, price_out = _listed_prices(light)
        fresh = prompt - read - written
        return fresh * price_in + read * price_read + written * price_write, completion * price_out
    from .llm import _litellm

    input_usd, output_usd = _litellm().cost_per_token(
        model=model,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cache_read_input_tokens=read,
        cache_creation_input_tokens=written,
    )
    return float(input_usd), float(output_usd)


def tier_prices(model: str, prompt: int) -> dict[str, float]:
    """Dollars per million tokens at the tier a ``prompt``-token call is priced at (input, cached input, cache write,
    output), each read from litellm's cost function for that prompt size."""
    size = max(prompt, 1)
    return {
        "input": dollars(model, size)[0] / size * 1e6,
        "cached_input": dollars(model, size, read=size)[0] / size * 1e6,
        "cache_write": dollars(model, size, written=size)[0] / size * 1e6,
        "output": dollars(model, size, 1_000_000)[1],
    }


def tokens_by_module(snapshot: ContextWindowSnapshot) -> dict[str, int]:
    """The tokens each module put in the window; the rest (the query, the tool loop, the reply priming) as ``query``."""
    used = {m.module_id: m.used for m in snapshot.modules if m.used > 0}
    used[QUERY] = snapshot.total_used - sum(used.values())
    return used


def by_module(snapshot: ContextWindowSnapshot, dollars: float) -> dict[str, float]:
    """``dollars`` shared by module in proportion to the tokens each used (the query's part to ``query``)."""
    used = tokens_by_module(snapshot)
    total = sum(used.values())
    return {module: dollars * tokens / total for module, tokens in used.items()} if total else {}


def module_split(snapshot: ContextWindowSnapshot, uncached_usd: float, cached_usd: float) -> dict[str, dict[str, Any]]:
    """Each module's tokens and its share of the uncached and the cached input's dollars, in proportion to its
    tokens (a provider reports how much was cached, not which tokens; the output is the answer's, no module's)."""
    used = tokens_by_module(snapshot)
    total = sum(used.values())
    if not total:
        return {}
    return {
        module: {
            "tokens": tokens,
            "uncached_input_usd": uncached_usd * tokens / total,
            "cached_input_usd": cached_usd * tokens / total,
            "input_usd": (uncached_usd + cached_usd) * tokens / total,
        }
        for module, tokens in used.items()
    }


def auxiliary(snapshot: ContextWindowSnapshot) -> dict[str, Any]:
    """The model calls modules made while assembling (summaries, query rewrites): their tokens and dollars at their
    model's list price, by module. ``usd`` None when a model has no price (``unpriced_models``), never $0."""
    calls = snapshot.auxiliary_calls
    by_module: dict[str, float] = {}
    unpriced = sorted({c.model for c in calls if prices(c.model) is None})
    for c in calls:
        if prices(c.model) is not None:
            by_module[c.module_id] = by_module.get(c.module_id, 0.0) + sum(dollars(c.model, c.tokens_in, c.tokens_out))
    return {
        "calls": len(calls),
        "tokens_in": sum(c.tokens_in for c in calls),
        "tokens_out": sum(c.tokens_out for c in calls),
        "usd": None if unpriced else sum(by_module.values()),
        "by_module_usd": by_module,
        "unpriced_models": unpriced,
    }
