"""The body fields each wire format defines: only those reach the model.

litellm's ``completion()`` takes far more keyword arguments than OpenAI's API: where to call (``api_base``,
``base_url``), with which credentials (``api_key``, ``extra_headers``), through which provider. Passing a client's
unknown fields on would let any chat client send the server's key to a host it names. So a body field outside the
wire format is refused with a 422 naming it, before anything is created or stored; a routing or credential field says
why it can never be sent. (Fields a format defines but tda does not act on are accepted as they always were.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import Invalid

CHAT_FIELDS = frozenset(
    {
        "audio",
        "frequency_penalty",
        "function_call",
        "functions",
        "logit_bias",
        "logprobs",
        "max_completion_tokens",
        "max_tokens",
        "messages",
        "metadata",
        "modalities",
        "model",
        "moderation",
        "n",
        "parallel_tool_calls",
        "prediction",
        "presence_penalty",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "reasoning_effort",
        "response_format",
        "safety_identifier",
        "seed",
        "service_tier",
        "stop",
        "store",
        "stream",
        "stream_options",
        "temperature",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "user",
        "verbosity",
        "web_search_options",
    }
)
"""OpenAI's chat-completions request (``POST /v1/chat/completions``)."""

RESPONSES_FIELDS = frozenset(
    {
        "background",
        "context_management",
        "conversation",
        "include",
        "input",
        "instructions",
        "max_output_tokens",
        "max_tool_calls",
        "metadata",
        "model",
        "moderation",
        "parallel_tool_calls",
        "previous_response_id",
        "prompt",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "reasoning",
        "safety_identifier",
        "service_tier",
        "store",
        "stream",
        "stream_options",
        "temperature",
        "text",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "truncation",
        "user",
    }
)
"""OpenAI's Responses request (``POST /v1/responses``)."""

COMPACT_FIELDS = frozenset(
    {
        "input",
        "instructions",
        "model",
        "previous_response_id",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "service_tier",
    }
)
"""OpenAI's compaction request (``POST /v1/responses/compact``)."""

ROUTING_FIELDS = frozenset(
    {
        "api_base",
        "base_url",
        "api_key",
        "api_version",
        "api_type",
        "organization",
        "project",
        "extra_headers",
        "headers",
        "extra_body",
        "extra_query",
        "custom_llm_provider",
        "deployment_id",
        "model_list",
        "fallbacks",
        "num_retries",
        "timeout",
        "mock_response",
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_session_token",
        "aws_region_name",
        "vertex_credentials",
        "vertex_project",
        "vertex_location",
        "azure_ad_token",
    }
)
"""Fields litellm (or an SDK's options) reads as where to call and with what: never a client's to set."""


def refuse_unknown_fields(body: Mapping[str, Any], defined: Iterable[str], wire: str) -> None:
    """A 422 naming every field of ``body`` that ``wire`` does not define (routing and credential fields first)."""
    unknown = sorted(set(body) - set(defined), key=lambda name: (name not in ROUTING_FIELDS, name))
    if not unknown:
        return
    errors = [{"loc": name, "msg": _why(name, wire), "type": "extra_forbidden"} for name in unknown]
    raise Invalid(f"{unknown[0]} {errors[0]['msg']}", errors=errors)


def _why(name: str, wire: str) -> str:
    if name in ROUTING_FIELDS or name.startswith(("litellm", "aws_", "vertex_", "azure_")):
        return (
            "chooses where the model is called or with which credentials, which only the server's operator sets "
            "(a profile's upstream); remove it"
        )
    return f"is not a field of {wire}; remove it (tda forwards only the fields the API defines)"
