"""Exact counts, the content cache, the fallback, and model-limit resolution."""

from __future__ import annotations

import pytest
import tiktoken

from components.context_window.base import Message, ToolSchema
from components.context_window.token_estimator import (
    TokenEstimator,
    encoding_name_for,
    estimator_for,
    resolve_model_limit,
)


def test_encoding_follows_the_model():
    assert encoding_name_for("gpt-4o-mini") == "o200k_base"
    assert encoding_name_for("openai/o3-mini") == "o200k_base"
    assert encoding_name_for("gpt-4") == "cl100k_base"
    assert encoding_name_for("claude-3-5-sonnet") == "cl100k_base"


def test_counts_are_exact_tiktoken_counts_and_cached_by_content():
    est = TokenEstimator("cl100k_base")
    text = "The quick brown fox jumps over the lazy dog. " * 20
    assert est.exact and est.method == "tiktoken:cl100k_base"
    assert est.count(text) == len(tiktoken.get_encoding("cl100k_base").encode(text))
    misses = est.misses
    assert est.count("".join(list(text))) == est.count(text)  # an equal string built anew: a cache hit
    assert est.misses == misses


def test_cache_is_bounded():
    est = TokenEstimator("cl100k_base", cache_size=100)
    for i in range(1_000):
        est.count(f"text number {i}")
    assert len(est._texts) <= 100
    assert est.count("text number 999") == TokenEstimator("cl100k_base").count("text number 999")


def test_message_and_tool_overheads():
    est = estimator_for("gpt-4o")
    message = Message("assistant", "hi", name="bot")
    assert est.count_message(message) == 3 + est.count("hi") + 1 + est.count("bot")
    tool = ToolSchema("f", "does f", {"type": "object", "properties": {}})
    assert est.count_tool(tool) == est.count(tool.json)


def test_fallback_when_no_encoding_loads_is_flagged():
    est = TokenEstimator("no_such_encoding")
    assert not est.exact and "fallback" in est.method
    assert est.count("abcdefgh") == 2 and est.count("abcdefghi") == 3


def test_model_limit_comes_from_litellm_then_table_then_default():
    assert resolve_model_limit("gpt-4o") == (128_000, "litellm")
    assert resolve_model_limit("gpt-4") == (8_192, "litellm")
    assert resolve_model_limit("my-gateway/llama3-custom") == (8_192, "fallback_table")
    assert resolve_model_limit("something-unmapped") == (128_000, "default")


@pytest.mark.parametrize(
    ("model", "limit"),
    [
        ("gemini-2.0-flash", 1_048_576),  # Google's model card; litellm's bundled map does not have it
        ("gemini/gemini-2.0-flash", 1_048_576),
        ("ollama/llama3.1:8b", 131_072),  # Llama 3.1 reads 128K, not Llama 3's 8K
    ],
)
def test_models_missing_from_litellm_resolve_from_the_table(model, limit):
    assert resolve_model_limit(model) == (limit, "fallback_table")
