"""Independent token counting for tests: never the handler's estimator.

``cookbook_tokens`` is OpenAI's published ``num_tokens_from_messages`` (OpenAI cookbook, "How to count
tokens with tiktoken"), written here from the formula over tiktoken directly: 3 tokens per message, the
tokens of every string field (role included), 1 more per ``name``, 3 for the reply priming. Tool calls
count their id, type, function name and arguments; a tool result its ``tool_call_id``.

``litellm_tokens`` is ``litellm.token_counter`` on the same request (messages and tools).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import tiktoken


@cache
def _encoding(model: str) -> tiktoken.Encoding:
    return tiktoken.encoding_for_model(model.rsplit("/", 1)[-1])


def text_tokens(text: str, model: str = "gpt-4o") -> int:
    # Special-token look-alikes ("<|endoftext|>") in user text are plain text to the provider.
    return len(_encoding(model).encode(text, disallowed_special=()))


def cookbook_message_tokens(message: Mapping[str, Any], model: str = "gpt-4o") -> int:
    n = 3
    for key, value in message.items():
        if isinstance(value, str):
            n += text_tokens(value, model)
            if key == "name":
                n += 1
        elif key == "tool_calls":
            for call in value:
                n += sum(text_tokens(call[k], model) for k in ("id", "type") if k in call)
                fn = call.get("function", {})
                n += sum(text_tokens(fn[k], model) for k in ("name", "arguments") if k in fn)
    return n


def cookbook_tokens(messages: Sequence[Mapping[str, Any]], model: str = "gpt-4o") -> int:
    """The prompt tokens of ``messages`` (no tools) by the cookbook formula, reply priming included."""
    return sum(cookbook_message_tokens(m, model) for m in messages) + 3


def litellm_tokens(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = (), model: str = "gpt-4o"
) -> int:
    import litellm

    return litellm.token_counter(model=model, messages=list(messages), tools=list(tools) or None)


def litellm_tools_tokens(tools: Sequence[Mapping[str, Any]], model: str = "gpt-4o") -> int:
    """What litellm adds to a request for its tools (the request without a system message: no discount)."""
    probe = [{"role": "user", "content": "x"}]
    return litellm_tokens(probe, tools, model) - litellm_tokens(probe, (), model) if tools else 0
