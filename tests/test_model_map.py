"""litellm's map file read without importing litellm (components/context_window/model_map.py) answers as litellm
does: every OpenAI model's limits, prices and dollars are litellm's own (the oracle: ``litellm.get_model_info``
and ``litellm.cost_per_token``), and a name litellm has no entry for is unknown to both."""

from __future__ import annotations

import math

import litellm
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window import model_map
from components.context_window.token_estimator import _litellm_input_limit
from tda import cost
from tda.llm import output_limit

OPENAI_MODELS = sorted(model_map._packaged()[0])


def _litellm_info(model: str) -> dict:
    try:
        return dict(litellm.get_model_info(model))
    except Exception:  # litellm raises for a name it has no entry for
        return {}


def test_the_map_file_holds_openai_s_models() -> None:
    assert {"gpt-4.1", "gpt-4o", "gpt-4o-mini", "gpt-4"} <= set(OPENAI_MODELS)
    assert len(OPENAI_MODELS) > 50


@pytest.mark.parametrize("prefix", ["", "openai/"])
def test_every_openai_model_s_limits_are_litellm_s(prefix: str) -> None:
    for name in OPENAI_MODELS:
        model = prefix + name
        info = _litellm_info(model)
        assert _litellm_input_limit(model) == (info.get("max_input_tokens") or None), model
        output_limit.cache_clear()
        assert output_limit(model) == (info.get("max_output_tokens") or None), model


@pytest.mark.parametrize("model", ["my-local-model", "openai/my-local-model", "qwen2.5-coder-house"])
def test_a_name_litellm_has_no_entry_for_is_unknown_without_it(model: str) -> None:
    known = _litellm_info(model)  # {} (it raises), or zeros where a litellm Router registered the name
    assert not any(known.get(field) for field in ("max_input_tokens", "max_output_tokens", "input_cost_per_token"))
    assert model_map.info(model) == {}


@pytest.mark.parametrize(
    "model",
    ["anthropic/claude-3-5-sonnet-20240620", "gemini/gemini-1.5-pro", "claude-haiku-4-5", "ft:gpt-4o-mini-2024-07-18"],
)
def test_another_provider_s_model_is_left_to_litellm(model: str) -> None:
    assert model_map.info(model) is None


def _litellm_prices(model: str) -> tuple[float, float, float, float] | None:
    info = _litellm_info(model)
    listed = litellm.model_cost.get(info.get("key") or model) or {}
    if "input_cost_per_token" not in listed or info.get("output_cost_per_token") is None:
        return None
    read, write = info.get("cache_read_input_token_cost"), info.get("cache_creation_input_token_cost")
    price_in = info["input_cost_per_token"]
    return (
        price_in,
        price_in if read is None else read,
        price_in if write is None else write,
        info["output_cost_per_token"],
    )


def test_every_openai_model_s_prices_are_litellm_s() -> None:
    for name in OPENAI_MODELS:
        cost.prices.cache_clear()
        assert cost.prices(name) == _litellm_prices(name), name


PRICED_ONCE = [n for n in OPENAI_MODELS if (i := model_map.info(n)) and not i["tiered"] and cost.prices(n)]


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from(PRICED_ONCE),
    prompt=st.integers(0, 2_000_000),
    completion=st.integers(0, 200_000),
    read_share=st.floats(0, 1),
    written_share=st.floats(0, 1),
)
def test_a_call_s_dollars_are_litellm_s(
    model: str, prompt: int, completion: int, read_share: float, written_share: float
) -> None:
    read = int(prompt * read_share)
    written = int((prompt - read) * written_share)
    expected = litellm.cost_per_token(
        model=model,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cache_read_input_tokens=read,
        cache_creation_input_tokens=written,
    )
    got = cost.dollars(model, prompt, completion, read=read, written=written)
    assert all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) for a, b in zip(got, expected, strict=True))
