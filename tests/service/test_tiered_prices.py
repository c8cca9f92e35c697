"""A call's dollars at the price tier its prompt falls in (Gemini 2.5 Pro charges every token of a prompt over
200K at its higher rate), with cache reads and writes at theirs. Oracles: ``litellm.completion_cost`` on a
response carrying the usage, and for Gemini 2.5 Pro the tier rule written out here from litellm's cost map."""

from __future__ import annotations

import litellm
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from litellm.types.utils import ModelResponse, PromptTokensDetailsWrapper, Usage

from components.context_window.snapshot import ContextWindowSnapshot, ModuleUsage
from tda.cost import model_call
from tda.llm import Completion

MODELS = ["gemini/gemini-2.5-pro", "gpt-4o", "claude-sonnet-4-5", "gpt-4.1-mini"]


def snapshot(model: str, total: int) -> ContextWindowSnapshot:
    system = ModuleUsage("system_prompt", "ok", 95, 10.0, total // 2, total // 2)
    return ContextWindowSnapshot(
        "balanced", "Balanced", model, 2_000_000, "test", None, None, 2_000_000, 0, 2_000_000, 0, total, [system]
    )


def litellm_cost(model: str, prompt: int, completion: int, read: int, written: int) -> float:
    """The oracle: litellm's completion_cost on a response whose usage reports these tokens."""
    usage = Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        prompt_tokens_details=PromptTokensDetailsWrapper(cached_tokens=read),
        cache_read_input_tokens=read,
        cache_creation_input_tokens=written,
    )
    response = ModelResponse(model=model, usage=usage)
    return float(litellm.completion_cost(completion_response=response, model=model))


def gemini_25_pro(prompt: int, completion: int, read: int) -> float:
    """Gemini 2.5 Pro's rule written out from litellm's cost map: over 200K prompt tokens, every token (input,
    cached input, output) is priced at the higher tier."""
    entry = litellm.model_cost["gemini/gemini-2.5-pro"]
    tier = "_above_200k_tokens" if prompt > 200_000 else ""
    return (
        (prompt - read) * entry[f"input_cost_per_token{tier}"]
        + read * entry[f"cache_read_input_token_cost{tier}"]
        + completion * entry[f"output_cost_per_token{tier}"]
    )


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(MODELS),
    st.integers(1, 1_000_000),
    st.integers(0, 20_000),
    st.floats(0, 1),
    st.floats(0, 1),
)
def test_a_calls_dollars_are_litellms_at_the_prompts_tier(model, prompt, completion, read_share, write_share):
    read = int(prompt * read_share)
    written = int((prompt - read) * write_share) if model.startswith("claude") else 0  # only Anthropic bills writes
    done = Completion("", prompt, completion, [], cache_read_tokens=read, cache_write_tokens=written)
    cost = model_call(model, snapshot(model, prompt), done)["cost"]
    assert cost["total_usd"] == pytest.approx(litellm_cost(model, prompt, completion, read, written), rel=1e-9)
    assert cost["uncached_input_usd"] + cost["cached_input_usd"] == pytest.approx(cost["input_usd"], rel=1e-9)
    assert sum(m["input_usd"] for m in cost["by_module"].values()) == pytest.approx(cost["input_usd"], rel=1e-9)
    if model == "gemini/gemini-2.5-pro":
        assert cost["total_usd"] == pytest.approx(gemini_25_pro(prompt, completion, read), rel=1e-9)


def test_a_300k_gemini_prompt_is_priced_at_the_upper_tier():
    """Round 3's finding: 300K tokens to Gemini 2.5 Pro priced at the lower tier ($0.385 against litellm's $0.765)."""
    done = Completion("", 300_000, 1_000, [])
    cost = model_call("gemini/gemini-2.5-pro", snapshot("gemini/gemini-2.5-pro", 300_000), done)["cost"]
    assert cost["total_usd"] == pytest.approx(0.765)
    assert cost["prices_per_million"]["input"] == pytest.approx(2.5)  # the tier this call paid, not the list's first
