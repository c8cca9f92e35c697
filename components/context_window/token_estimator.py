"""Exact token counts with tiktoken, cached by content, and the model's input limit.

Counts are cached per estimator (one per encoding) keyed by the text itself: the dict hashes the
content (CPython caches a str's hash on the object) and compares it exactly, so an unchanged history is
never re-tokenised and no two texts can collide. Message counts are also cached per message object. When no encoding
can load, a ~4 characters/token estimate is used and ``method`` says so.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from .base import Message, ToolSchema

MESSAGE_OVERHEAD = 3
"""Tokens a chat message costs beyond its content (OpenAI's documented accounting)."""
NAME_OVERHEAD = 1
REPLY_PRIMING = 3
"""Every reply is primed with ``<|start|>assistant<|message|>``."""
FALLBACK_CHARS_PER_TOKEN = 4
DEFAULT_MODEL_LIMIT = 128_000

_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")

# Known input limits for models litellm does not map (or maps without max_input_tokens).
FALLBACK_LIMITS: dict[str, int] = {
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "claude-3-5-sonnet": 200_000,
    "claude-sonnet-4": 200_000,
    "gemini-1.5-pro": 2_097_152,
    "llama3": 8_192,
    "mistral": 32_768,
}


def encoding_name_for(model: str) -> str:
    base = model.rsplit("/", 1)[-1].lower()
    return "o200k_base" if base.startswith(_O200K_PREFIXES) else "cl100k_base"


def _point_tiktoken_at_bundled_encodings() -> None:
    """tiktoken downloads encodings on first use; litellm ships the files, so use those (offline)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return
    spec = importlib.util.find_spec("litellm")
    if spec and spec.submodule_search_locations:
        folder = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
        if folder.is_dir():
            os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)


@lru_cache(maxsize=8)
def _load_encoding(name: str) -> Any | None:
    _point_tiktoken_at_bundled_encodings()
    try:
        import tiktoken

        return tiktoken.get_encoding(name)
    except Exception:  # no file, no network: fall back to the character estimate
        return None


class TokenEstimator:
    """Counts tokens for one encoding, caching per text. Share one per encoding across assemblies."""

    def __init__(self, encoding_name: str = "cl100k_base", *, cache_size: int = 200_000) -> None:
        self.encoding_name = encoding_name
        self._encoding = _load_encoding(encoding_name)
        self._texts: dict[str, int] = {}
        self._messages: dict[int, tuple[Message, int]] = {}
        """Per message object (messages are frozen): id -> (the message, its count). Holding the message
        keeps its id from being reused while the entry lives."""
        self._cache_size = cache_size
        self.misses = 0

    @property
    def exact(self) -> bool:
        return self._encoding is not None

    @property
    def method(self) -> str:
        return f"tiktoken:{self.encoding_name}" if self.exact else "chars/4 (fallback: no tiktoken encoding)"

    def count(self, text: str) -> int:
        n = self._texts.get(text)
        if n is not None:
            return n
        if not text:
            return 0
        self.misses += 1
        if self._encoding is not None:
            n = len(self._encoding.encode_ordinary(text))
        else:
            n = -(-len(text) // FALLBACK_CHARS_PER_TOKEN)
        _bounded_put(self._texts, text, n, self._cache_size)
        return n

    def count_message(self, message: Message) -> int:
        """The message's own text (its stored count for this encoding when it has one) plus the overhead."""
        stored = message.tokens.get(self.encoding_name) if message.tokens and self.exact else None
        if stored is not None:
            return message_overhead(message) + stored
        entry = self._messages.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
        n = message_overhead(message) + self.count_fields(message)
        _bounded_put(self._messages, id(message), (message, n), self._cache_size)
        return n

    def count_fields(self, message: Message, count: Any = None) -> int:
        """Tokens of the message's own text (content, name, tool calls): what is stored per encoding."""
        count = count or self.count
        n = count(message.content)
        if message.name:
            n += count(message.name)
        for call in message.tool_calls:
            fn = call.get("function", {})
            n += count(str(fn.get("name", ""))) + count(str(fn.get("arguments", "")))
        if message.tool_call_id:
            n += count(message.tool_call_id)
        return n

    def stored_counts(self, message: Message) -> int | None:
        """``count_fields`` for storing with a new message: uncached (written once, read from the store after);
        ``None`` when this estimator is not exact (a character estimate is not worth keeping)."""
        if self._encoding is None:
            return None
        encode = self._encoding.encode_ordinary
        return self.count_fields(message, lambda text: len(encode(text)) if text else 0)

    def count_tool(self, tool: ToolSchema) -> int:
        return self.count(tool.json)


def message_overhead(message: Message) -> int:
    """What a message costs beyond its own text (OpenAI's documented accounting)."""
    return MESSAGE_OVERHEAD + (NAME_OVERHEAD if message.name else 0)


STORED_ENCODINGS = ("o200k_base", "cl100k_base")
"""The encodings whose counts are stored with each message when it is written."""


def counts_to_store(message: Message) -> dict[str, int]:
    """Per-encoding counts of ``message``'s own text, to store with it (empty when no encoding loads)."""
    counts = {}
    for name in STORED_ENCODINGS:
        n = estimator(name).stored_counts(message)
        if n is not None:
            counts[name] = n
    return counts


def _bounded_put(cache: dict[Any, Any], key: Any, value: Any, limit: int) -> None:
    """Insert, evicting the oldest tenth when full (dicts keep insertion order; cheaper than an LRU per hit)."""
    cache[key] = value
    if len(cache) > limit:
        for old in list(itertools.islice(cache, limit // 10)):
            del cache[old]


_estimators: dict[str, TokenEstimator] = {}


def estimator_for(model: str) -> TokenEstimator:
    """The shared estimator for ``model``'s encoding (one cache per encoding per process)."""
    return estimator(encoding_name_for(model))


def estimator(name: str) -> TokenEstimator:
    """The shared estimator for the encoding ``name``."""
    est = _estimators.get(name)
    if est is None:
        est = _estimators[name] = TokenEstimator(name)
    return est


@lru_cache(maxsize=256)
def resolve_model_limit(model: str) -> tuple[int, str]:
    """The model's *input* limit and where it came from: litellm metadata, the fallback table, or 128K."""
    limit = _litellm_input_limit(model)
    if limit:
        return limit, "litellm"
    base = model.rsplit("/", 1)[-1].lower()
    for prefix in sorted(FALLBACK_LIMITS, key=len, reverse=True):
        if base.startswith(prefix):
            return FALLBACK_LIMITS[prefix], "fallback_table"
    return DEFAULT_MODEL_LIMIT, "default"


def _litellm_input_limit(model: str) -> int | None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm  # imported lazily: it costs seconds

        litellm.suppress_debug_info = True
        info = litellm.get_model_info(model)
    except Exception:  # unmapped model, or litellm missing
        return None
    limit = info.get("max_input_tokens")
    return int(limit) if limit else None
