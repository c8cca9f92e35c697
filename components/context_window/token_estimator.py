"""Token counts by the provider's own accounting, cached by content, and the model's input limit.

Messages follow OpenAI's published accounting (``num_tokens_from_messages`` in the OpenAI cookbook,
checked there against the API's ``prompt_tokens``)::

    3 per message + the tokens of every string field (role included) + 1 per name + 3 reply priming

``tool_calls`` (id, type, function name, arguments) and ``tool_call_id`` are counted too. Tools are
counted from the JSON actually sent (``ToolSchema.json``) and never below the function-definition
format providers render them into (what ``litellm.token_counter`` counts), plus its fixed overhead.

Which tokenizer (``tokenizer_for``):

* OpenAI models: tiktoken's encoding for the model (exact);
* models for which litellm ships a tokenizer offline (Anthropic's pre-Claude-3 models): that tokenizer;
* every other model: cl100k_base plus a ``SAFETY_MARGIN`` — an estimate, and ``method`` says so — or, once the
  application has seen the provider's own prompt counts for the model (``calibrate``), cl100k_base times a learned
  ratio: the largest ratio of the provider's count to cl100k's seen so far, plus ``CALIBRATION_MARGIN``, so the
  estimate is never below what the provider counted on any request seen, nor (the ratio is never taken below 1)
  below what ``litellm.token_counter`` counts;
* no encoding loads at all: UTF-8 bytes, an upper bound (a BPE token covers at least one byte).

Counts are cached per estimator keyed by the text itself (the dict hashes and compares the content),
so an unchanged history is never re-tokenised and no two texts can collide.

Images, files and audio in a message's content parts are counted by the model's own rules
(``content_parts``): the estimator for a model (``estimator_for``) is a view of its tokenizer's shared
estimator carrying the model's ``ImageRules``; text caches stay shared per tokenizer.
"""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from pathlib import Path
from typing import Any

from . import model_map
from .base import Message, ToolSchema
from .content_parts import UNKNOWN_RULES, ImageRules, has_media, image_rules_for, part_tokens
from .session_cache import BoundedCache, ByLiveObject

MESSAGE_OVERHEAD = 3
"""Tokens every chat message costs beyond its fields: ``<|start|>``, the role/content separator, ``<|end|>``."""
NAME_OVERHEAD = 1
REPLY_PRIMING = 3
"""Every reply is primed with ``<|start|>assistant<|message|>``."""
TOOLS_OVERHEAD = 9
"""Fixed tokens of a request's function definitions, beyond their text (what litellm adds)."""
TOOLS_HEADER = "namespace functions {\n\n"
TOOLS_FOOTER = "} // namespace functions"
CHUNK_CHARS = 1024
"""``litellm.token_counter`` (what a LiteLLM proxy checks a request against) encodes a text in chunks of this many
characters, up to a token more per chunk than the provider counts."""
SAFETY_MARGIN = 0.25
"""Added to cl100k counts for models without an offline tokenizer: their tokenizers (Claude 3+, Gemini,
Llama, Mistral) differ from cl100k by up to about a fifth on English prose and code."""
CALIBRATION_MARGIN = 0.05
"""Added to the largest provider/cl100k ratio seen: inputs not yet seen may tokenise a little worse."""
CALIBRATION_MIN_SAMPLES = 3
CALIBRATION_MIN_TEXT = 200
"""cl100k text tokens a request needs to calibrate: a short one is mostly fixed overheads (a provider's hidden tool
prompt, its message framing), which a ratio would spread over every text."""
CALIBRATION_RATIOS = (0.5, 4.0)
"""Ratios outside these are not the same request counted by another tokenizer (a proxy's made-up usage, a count
of something else) and are ignored."""
"""Provider counts seen before a learned ratio may go below ``SAFETY_MARGIN`` (above it, one count suffices)."""
DEFAULT_MODEL_LIMIT = 128_000

_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o", "gpt-oss")
_OPENAI_PREFIXES = ("gpt-", "o1", "o3", "o4", "chatgpt-", "text-", "davinci", "babbage", "ft:gpt")
_OPENAI_PROVIDERS = ("", "openai", "azure", "azure_ai", "text-completion-openai")
_BUNDLED_HF_TOKENIZERS = {("claude-2", "claude-instant"): "anthropic_tokenizer.json"}
"""Model prefixes for which litellm ships the provider's own tokenizer file (offline), and that file."""
_FLOOR_HF_TOKENIZERS = {"claude": "anthropic_tokenizer.json"}
"""Model names (containing the key) whose estimate is never below this bundled tokenizer's count:
``litellm.token_counter`` counts Claude models with it (Anthropic's own pre-Claude-3 tokenizer), and on some
scripts it counts far more than cl100k (Thai: about 1.5 times cl100k + 25%)."""

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
    "gemini-1.5-flash": 1_048_576,
    "gemini-2.0-flash": 1_048_576,  # Google's model card: 1,048,576 input tokens (litellm's bundled map lacks it)
    "gemini-2.0-pro": 2_097_152,
    "llama3": 8_192,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "mistral": 32_768,
    "mistral-large": 131_072,
    "qwen2.5": 32_768,
}


def _split(model: str) -> tuple[str, str]:
    provider, _, base = model.lower().rpartition("/")
    return provider, base


def _openai_base(model: str) -> str:
    """The model id without its provider prefix (``openai/``, ``azure/``); a fine-tuned model
    (``ft:<base>:<org>:<suffix>:<id>``) is its base model, whose tokenizer it keeps."""
    base = _split(model)[1]
    return base[3:].split(":", 1)[0] if base.startswith("ft:") else base


@lru_cache(maxsize=512)
def encoding_name_for(model: str) -> str:
    """The tiktoken encoding of an OpenAI model: tiktoken's own table (exact names, then prefixes, which cover
    dated snapshots), on the base model of a provider-prefixed or fine-tuned id; our prefixes for models
    newer than the installed tiktoken."""
    base = _openai_base(model)
    try:
        from tiktoken.model import encoding_name_for_model

        name = encoding_name_for_model(base)
    except (ImportError, KeyError):
        name = "o200k_base" if base.startswith(_O200K_PREFIXES) else "cl100k_base"
    # harmony is o200k plus chat special tokens: ordinary text encodes the same, and stored counts share the key
    return "o200k_base" if name == "o200k_harmony" else name


def is_openai_model(model: str) -> bool:
    provider, base = _split(model)
    return provider.split("/")[-1] in _OPENAI_PROVIDERS and base.startswith(_OPENAI_PREFIXES)


@dataclass(frozen=True)
class Tokenizer:
    """How a model's text is counted: an encoding or tokenizer file, and a margin for estimates."""

    kind: str  # "tiktoken" or "huggingface"
    name: str  # the encoding name, or the tokenizer file
    margin: float = 0.0
    model: str = ""
    floor: str = ""
    """A bundled tokenizer file whose count a text never goes below (estimates only; see ``_FLOOR_HF_TOKENIZERS``)."""
    calibrated: int = 0
    """Provider counts the margin was learned from (0: the fixed ``SAFETY_MARGIN``)."""

    @property
    def exact(self) -> bool:
        return self.margin == 0.0 and not self.calibrated


@dataclass(frozen=True)
class Calibration:
    """What a model's provider counted, against cl100k: the largest ratio seen (on the text, overheads aside)."""

    ratio: float
    samples: int

    @property
    def scale(self) -> float:
        """What cl100k text counts are multiplied by: the ratio plus a margin; the fixed margin while few seen.
        Never below 1: litellm counts every calibratable model with cl100k itself (or Anthropic's tokenizer, the
        floor), and no count goes below litellm's. A provider counting less than cl100k only keeps it at 1."""
        learned = self.ratio * (1 + CALIBRATION_MARGIN)
        return max(1.0, learned if self.samples >= CALIBRATION_MIN_SAMPLES else max(learned, 1 + SAFETY_MARGIN))


_calibrations: dict[str, Calibration] = {}


def calibrate(model: str, calibration: Calibration | None) -> None:
    """Count ``model`` by ``calibration`` from now on (None: back to the fixed margin). The application feeds this
    from the provider counts it stores; the shared estimators of the old ratio are let go."""
    key = model.lower()
    if calibration is None:
        _calibrations.pop(key, None)
    else:
        _calibrations[key] = calibration
    for stale in [t for t in _estimators if t.calibrated and t.model == model and t != tokenizer_for(model)]:
        del _estimators[stale]


def calibrations() -> dict[str, Calibration]:
    """Every model's calibration in use (by lower-cased model name)."""
    return dict(_calibrations)


def calibration_for(model: str) -> Calibration | None:
    return _calibrations.get(model.lower())


def calibratable(model: str) -> bool:
    """Whether ``model`` is counted by estimate (no offline tokenizer of its own), so provider counts can tune it."""
    return tokenizer_for(model).model != ""


def provider_ratio(messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolSchema], provider_tokens: int) -> float:
    """The factor cl100k's text counts need for this request's estimate to reach ``provider_tokens`` (the
    provider's prompt count of exactly this request): the fixed overheads (per message, per name, the tools block,
    the reply priming) are not scaled, so the factor applies to the rest. 0.0 when it cannot be told (no cl100k,
    images whose tokens follow other rules, under ``CALIBRATION_MIN_TEXT``, a ratio outside
    ``CALIBRATION_RATIOS``)."""
    base = estimator("cl100k_base")
    if not base.exact or any(isinstance(m.get("content"), list | tuple) for m in messages):
        return 0.0
    fixed = REPLY_PRIMING + (TOOLS_OVERHEAD if tools else 0)
    fixed += sum(MESSAGE_OVERHEAD + (NAME_OVERHEAD if m.get("name") is not None else 0) for m in messages)
    text = sum(base.count_chat(m) for m in messages) + base.count_tools(tools) + REPLY_PRIMING - fixed
    if text < CALIBRATION_MIN_TEXT:
        return 0.0
    ratio = (provider_tokens - fixed) / text
    low, high = CALIBRATION_RATIOS
    return ratio if low <= ratio <= high else 0.0


def tokenizer_for(model: str) -> Tokenizer:
    if is_openai_model(model):
        return Tokenizer("tiktoken", encoding_name_for(model))
    base = _split(model)[1]
    for prefixes, file in _BUNDLED_HF_TOKENIZERS.items():
        if base.startswith(prefixes) and _bundled_file(file) is not None:
            return Tokenizer("huggingface", file)
    floor = next((f for key, f in _FLOOR_HF_TOKENIZERS.items() if key in base and _bundled_file(f)), "")
    learned = _calibrations.get(model.lower())
    if learned is not None:
        return Tokenizer("tiktoken", "cl100k_base", learned.scale - 1, model, floor, learned.samples)
    return Tokenizer("tiktoken", "cl100k_base", SAFETY_MARGIN, model, floor)


def bundled_tokenizer_dir() -> Path | None:
    """litellm's folder of tokenizer files (tiktoken encodings, Anthropic's tokenizer), found without importing it.

    The application points ``TIKTOKEN_CACHE_DIR`` here so tiktoken loads offline; this library never
    writes the environment.
    """
    spec = importlib.util.find_spec("litellm")
    if spec and spec.submodule_search_locations:
        folder = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
        if folder.is_dir():
            return folder
    return None


def _bundled_file(name: str) -> Path | None:
    folder = bundled_tokenizer_dir()
    path = folder / name if folder else None
    return path if path is not None and path.is_file() else None


@lru_cache(maxsize=8)
def _load_counter(kind: str, name: str) -> Callable[[str], int] | None:
    """A function counting a text's tokens, or None when nothing loads (no file, no network)."""
    try:
        if kind == "huggingface":
            from tokenizers import Tokenizer as HFTokenizer

            path = _bundled_file(name)
            if path is None:
                return None
            hf = HFTokenizer.from_file(str(path))
            return lambda text: len(hf.encode(text, add_special_tokens=False).ids)
        import tiktoken

        encoding = tiktoken.get_encoding(name)
        # Ordinary text only: a message that *looks like* "<|endoftext|>" is text, as the provider counts it.
        return lambda text: len(encoding.encode_ordinary(text))
    except Exception:
        return None


OFFLOAD_CHARS = 8_192
"""Uncounted text ``warm`` hands to a worker thread at once, at least: ~2,000 tokens, ~1.5 ms of tiktoken that would
hold the event loop (measured 5.4 MB/s); a thread's hop costs ~0.1-1 ms on a busy machine."""

CACHE_SIZE = 8_192
"""Texts, and messages without stored counts, remembered per estimator: a few assemblies' worth (a window at
10,000 messages counts ~500). Stored messages carry their counts and skip the cache. Each turn brings new texts
(its query, answer, summaries), so a larger bound is memory that only grows: 200,000 kept a server growing by
~1 MB per 1,000 turns for 200,000 entries, holding evicted history messages alive all the while."""
TEXT_CACHE_BYTES = 4 * 2**20
"""And at most about this many characters of texts remembered (8,192 tool results of ~10 KB would be 80 MB): eight
128K windows' worth. Most texts counted are a turn's own (its modules' blocks), never counted again."""


LINES_FROM = 512
"""A text this long or longer is counted by its lines (``_lines``), each line's count cached: a turn's long texts
are new texts made mostly of lines seen before (knowledge_context's excerpts, ~18 KB a demo turn: ~2 ms of tiktoken
each time; workflow_history's list of the turns before, on the event loop). Splitting and looking up costs ~1.5 us
per KB against ~185 us per KB of tiktoken."""
LINE_CACHE_SIZE = 16_384
LINE_CACHE_BYTES = 2 * 2**20
_BY_LINES = frozenset({"cl100k_base", "o200k_base"})
"""Encodings whose counts add up over ``_lines``: see there."""


def _lines(text: str) -> list[str]:
    """``text`` cut after each line break that a printable ASCII character other than "/" follows: the pieces' token
    counts add up to the text's in cl100k_base and o200k_base. Their pre-tokenizer (a regular expression: tokens never
    cross its pieces) ends a piece at such a break and starts the next one there as at a text's start: a run of
    whitespace ending in a line break, or punctuation followed by line breaks, is one piece that stops at the first
    character neither whitespace nor a line break (o200k also takes "/" after punctuation's line breaks), and no
    pattern looks behind. Exact, not estimated: tests/test_token_estimator.py checks it against tiktoken."""
    parts = text.split("\n")
    out: list[str] = []
    line = parts[0]
    for part in parts[1:]:
        if part and "!" <= part[0] <= "~" and part[0] != "/":
            out.append(line + "\n")
            line = part
        else:
            line += "\n" + part
    out.append(line)
    return out


SPACED_CHARS = 256
"""A line at least twice this long is counted in pieces of about this many characters (``_spaced``), each piece's
count cached with the lines': a tool result of one long line (a JSON table) is cut to a share of tokens by counting
its prefixes (``cut_to_tokens``, two or three a cut) and then the cut with its note, each a new text of ~2,000
characters tokenised whole (~0.15 ms each, ~1 ms a cut); now only each prefix's last piece is."""


def _pieces(text: str) -> list[str]:
    """``text``'s lines (``_lines``), each long one in its ``_spaced`` pieces: their counts add up to the text's."""
    return [piece for line in _lines(text) for piece in (_spaced(line) if len(line) >= 2 * SPACED_CHARS else (line,))]


def _spaced(line: str) -> list[str]:
    """``line`` cut before a space that a printable ASCII character other than a space comes before, the first at
    least ``SPACED_CHARS`` on from the last cut (so a prefix of a line is cut where the line is, but for its last
    piece). The pieces' token counts add up to the line's in cl100k_base and o200k_base: no pattern of their
    pre-tokenizer takes a space after such a character (a space only opens a piece: " word", " {", a run of
    whitespace), none looks behind, and the one that looks ahead matches whitespace alone, so the pieces before the
    cut are the line's and the rest is pre-tokenized as from a text's start. Exact, not estimated:
    tests/test_token_estimator.py checks it against tiktoken."""
    out: list[str] = []
    start = 0
    while (cut := line.find(" ", start + SPACED_CHARS)) != -1:
        while cut != -1 and not "!" <= line[cut - 1] <= "~":
            cut = line.find(" ", cut + 1)
        if cut == -1:
            break
        out.append(line[start:cut])
        start = cut
    out.append(line[start:])
    return out


class TokenEstimator:
    """Counts tokens for one tokenizer, caching per text. Share one per tokenizer across assemblies.

    ``images`` are the rules its messages' images and files are counted by (the largest of OpenAI's and
    Anthropic's unless made for a model: ``for_model``)."""

    def __init__(
        self,
        encoding_name: str = "cl100k_base",
        *,
        cache_size: int = CACHE_SIZE,
        tokenizer: Tokenizer | None = None,
        images: ImageRules = UNKNOWN_RULES,
    ) -> None:
        self.tokenizer = tokenizer or Tokenizer("tiktoken", encoding_name)
        self.images = images
        self._cache_size = cache_size
        self._views: dict[ImageRules, TokenEstimator] = {images: self}
        self.encoding_name = self.tokenizer.name
        self._counter = _load_counter(self.tokenizer.kind, self.tokenizer.name)
        self._scale = 1.0 + self.tokenizer.margin
        self._floor = _load_counter("huggingface", self.tokenizer.floor) if self.tokenizer.floor else None
        self._texts: BoundedCache[str, int] = BoundedCache(cache_size, max_bytes=TEXT_CACHE_BYTES)
        exact = self.tokenizer.kind == "tiktoken" and self.tokenizer.exact and not self.tokenizer.floor
        self._line_counts: BoundedCache[str, int] | None = (
            BoundedCache(LINE_CACHE_SIZE, max_bytes=LINE_CACHE_BYTES)
            if exact and self.tokenizer.name in _BY_LINES and cache_size
            else None
        )
        """Each line's count (``_lines``), for long texts: None where counts do not add up over lines (another
        tokenizer, a scaled estimate)."""
        self._lock = threading.Lock()
        """Held while a count is put in the text cache (a put may evict; reads are the dict's own, safe as they are)."""
        self._messages: ByLiveObject[int] = ByLiveObject(cache_size)
        """Per message object (messages are frozen), its count, held weakly: the cache does not keep short-lived
        messages (summaries, recall blocks) alive, and forgets each as it goes."""
        self._tools: BoundedCache[str, int] = BoundedCache(4096)
        self._tool_sets: BoundedCache[tuple[str, ...], int] = BoundedCache(1024)
        self.misses = 0
        self.tools_overhead = TOOLS_OVERHEAD + self.count(TOOLS_HEADER) + self.count(TOOLS_FOOTER)
        self._stored_key = self.encoding_name if self.stored_exact else None
        """The key of this estimator's figure among a message's stored counts (None: stored counts do not apply)."""

    def for_model(self, model: str) -> TokenEstimator:
        """This estimator counting images and files by ``model``'s rules (``with_images``)."""
        return self.with_images(image_rules_for(model))

    def with_images(self, images: ImageRules) -> TokenEstimator:
        """A view sharing this estimator's tokenizer and text caches, counting images by ``images``. Its message
        cache is its own: the same message with an image costs differently per model. One view per rules."""
        view = self._views.get(images)
        if view is None:
            view = copy.copy(self)
            view.images = images
            view._messages = ByLiveObject(self._cache_size)
            self._views[images] = view
        return view

    @property
    def exact(self) -> bool:
        return self._counter is not None and self.tokenizer.exact

    @property
    def method(self) -> str:
        t = self.tokenizer
        if self._counter is None:
            return f"utf-8 bytes (upper bound: the {t.name} tokenizer did not load)"
        if t.kind == "huggingface":
            return f"huggingface:{t.name} (litellm's offline tokenizer)"
        if t.calibrated:
            floor = f", at least huggingface:{t.floor}" if self._floor is not None else ""
            return (
                f"tiktoken:{t.name} x{1 + t.margin:.3f}{floor} (calibrated on {t.calibrated} provider counts for "
                f"{t.model}: never below the largest provider/estimate ratio seen, +{CALIBRATION_MARGIN:.0%})"
            )
        if t.margin:
            floor = f", at least huggingface:{t.floor} (litellm's count)" if self._floor is not None else ""
            return f"tiktoken:{t.name} +{t.margin:.0%}{floor} (estimate: no offline tokenizer for {t.model})"
        return f"tiktoken:{t.name}"

    def count(self, text: str) -> int:
        """Tokens of ``text`` as sent (special-token look-alikes count as the plain text they are)."""
        n = self._texts.get(text)
        if n is not None:
            return n
        if not text:
            return 0
        self.misses += 1
        return self._remember(text, self._measure(text))

    def at_most(self, text: str) -> int | None:
        """A figure ``count(text)`` never exceeds, found without tokenising: its UTF-8 bytes where every token is at
        least one byte (tiktoken unscaled, or the bytes counted when no tokenizer loaded); None for a scaled
        estimate or another tokenizer."""
        scaled = self._scale != 1.0 or self._floor is not None
        if self._counter is not None and (self.tokenizer.kind != "tiktoken" or scaled):
            return None
        return len(text.encode("utf-8", "surrogatepass"))

    def _remember(self, text: str, n: int) -> int:
        """``text``'s count kept, under the lock: counts are made in worker threads too (``uncached_count``)."""
        with self._lock:
            return self._texts.put(text, n)

    def _measure(self, text: str) -> int:
        """``count`` without the text cache, so a worker thread may run it (``warm``); a long text's lines (and a long
        line's pieces: ``_pieces``) go through the line cache (under the lock)."""
        if self._counter is None:
            return len(text.encode("utf-8", "surrogatepass"))
        if (pieces := self._lines_of(text)) is not None:
            return sum(map(self._line_count, pieces))
        n = self._counter(text)
        if self._scale != 1.0:
            n = math.ceil(n * self._scale)
        if self._floor is not None:
            n = max(n, self._floor(text))
        return n

    def _lines_of(self, text: str) -> list[str] | None:
        """The pieces a long text is counted by, through the line cache (None: counted whole)."""
        if self._line_counts is None or len(text) < LINES_FROM:
            return None
        pieces = _pieces(text)
        return pieces if len(pieces) > 1 else None

    def count_line(self, line: str) -> int:
        """``count(line)`` for a line of a longer text, kept where that text's own count looks for it (the line
        cache, where counts add up over lines): a text priced line by line, then counted whole, is tokenised once."""
        if self._line_counts is None:
            return self.count(line)
        return self._line_count(line) if len(line) < 2 * SPACED_CHARS else sum(map(self._line_count, _spaced(line)))

    def _line_count(self, line: str) -> int:
        assert self._line_counts is not None and self._counter is not None
        n = self._line_counts.get(line)
        if n is None:
            n = self._counter(line)
            with self._lock:
                self._line_counts.put(line, n)
        return n

    async def warm(self, texts: Iterable[str]) -> None:
        """Counts the ``texts`` not counted yet, in a worker thread when they are long together (``OFFLOAD_CHARS``),
        so that ``count`` then answers from the cache: tiktoken lets go of the GIL while it encodes, and the event
        loop serves others meanwhile. Less is left to ``count`` (a thread's hop costs more than it saves)."""
        missing = [t for t in dict.fromkeys(texts) if t and self._texts.get(t) is None]
        if sum(map(len, missing)) < OFFLOAD_CHARS:
            return
        counts = await asyncio.to_thread(lambda: [self._measure(t) for t in missing])
        self.misses += len(missing)
        for text, n in zip(missing, counts, strict=True):
            self._remember(text, n)

    def count_message(self, message: Message) -> int:
        """A chat message's tokens by the cookbook accounting: what a provider bills for it in a prompt.

        This is the one per-message figure: the orchestrator budgets with it, and stores keep it per
        message and encoding at write time (``counts_to_store``), so a stored history is never re-tokenised.
        Content parts are counted as sent (``part_tokens``); a message with images or files is counted by this
        estimator's model rules, never from stored counts (those are per encoding, not per model).
        """
        media = message.parts is not None and has_media(message.parts)  # most messages are text: no call for them
        if message.tokens and self._stored_key is not None and not media:
            stored = message.tokens.get(self._stored_key)
            if stored is not None:
                return stored
        cached = self._messages.get(message)
        if cached is not None:
            return cached
        n = self.count_fields(message.role, message.content, message.name, message.tool_calls, message.tool_call_id)
        if message.parts is not None:  # the parts are sent instead of the content text
            n += sum(part_tokens(p, self.count, self.images) for p in message.parts) - self.count(message.content)
        self._messages.put(message, n)
        return n

    def counted(self, messages: Sequence[Message]) -> list[Message]:
        """``messages``, each carrying its ``count_message`` figure as a stored count (``Message.tokens``), as a
        stored history does: a long conversation a client sends is then counted once (in a worker thread), not
        again by each module that walks it, past what the text cache holds. Unchanged when stored counts do not
        apply (an estimate, or a message with images or files: counted per model when used)."""
        key = self._stored_key
        if key is None:
            return list(messages)
        todo = [m for m in messages if _uncounted(m, key)]
        counts = self._counts_of([text for m in todo if m.parts is None for text in _field_texts(self, m)])
        count = counts.__getitem__  # each text counted once above (the caches may not hold them all: a long chat)
        return [_with_count(m, key, self, count) if _uncounted(m, key) else m for m in messages]

    def _counts_of(self, texts: Sequence[str]) -> dict[str, int]:
        """``count`` of each of ``texts``, those not counted yet measured together (``_measure_all``) and kept in
        the text cache with one write."""
        counts: dict[str, int] = {}
        missing: list[str] = []
        cached = self._texts.get
        for text in dict.fromkeys(texts):
            n = cached(text) if text else 0
            if n is None:
                missing.append(text)
            else:
                counts[text] = n
        measured = self._measure_all(missing)
        counts.update(zip(missing, measured, strict=True))
        self.misses += len(missing)
        with self._lock:
            self._texts.put_all(zip(missing, measured, strict=True))
        return counts

    def _measure_all(self, texts: Sequence[str]) -> list[int]:
        """``_measure`` of each of ``texts``: the long ones' pieces that the line cache lacks tokenised in one pass
        and kept there with one write, so that a conversation met cold (400 messages, ~3,300 lines) costs its
        tokenizer's time and little more (a call and two cache writes a line before: ~40% more)."""
        lines = self._line_counts
        counter = self._counter
        if lines is None or counter is None:
            return [self._measure(t) for t in texts]
        cut = [self._lines_of(t) for t in texts]
        known = lines.get
        pieces = dict.fromkeys(chain.from_iterable(p for p in cut if p is not None))
        held = {p: known(p) for p in pieces}
        new = [p for p, n in held.items() if n is None]
        measured = list(map(counter, new))
        with self._lock:
            lines.put_all(zip(new, measured, strict=True))
        counts = {p: n for p, n in held.items() if n is not None}
        counts.update(zip(new, measured, strict=True))
        count = counts.__getitem__
        return [self._measure(t) if p is None else sum(map(count, p)) for t, p in zip(texts, cut, strict=True)]

    @property
    def stored_exact(self) -> bool:
        """Whether counts stored per encoding name are this estimator's counts (exact tiktoken, no margin)."""
        return self.exact and self.tokenizer.kind == "tiktoken"

    def count_chat(self, message: Mapping[str, Any]) -> int:
        """``count_message`` for an OpenAI-style dict (``role``, ``content``, ``name``, ``tool_calls``, ...)."""
        if isinstance(message.get("content"), list | tuple):
            return self.count_message(Message.from_chat(message))
        return self.count_fields(
            str(message.get("role", "")),
            message.get("content") or "",
            message.get("name"),
            message.get("tool_calls") or (),
            message.get("tool_call_id"),
        )

    def count_fields(
        self,
        role: str,
        content: str,
        name: str | None = None,
        tool_calls: Iterable[Mapping[str, Any]] = (),
        tool_call_id: str | None = None,
        count: Callable[[str], int] | None = None,
    ) -> int:
        count = count or self.count
        n = MESSAGE_OVERHEAD + count(role) + count(content)
        if name is not None:
            n += NAME_OVERHEAD + count(name)
        for call in tool_calls:
            n += _count_call(call, count)
        if tool_call_id is not None:
            n += count(tool_call_id)
        return n

    def uncached_count(self, message: Message) -> int:
        """``count_message`` without the per-message cache: for counts stored once with a new message (in a worker
        thread when many). Its texts go through the text cache, so that a text is tokenised once: the counts a call's
        new messages carry, the same messages' stored counts when they are recorded, and a client that sends the
        conversation again under a key not seen (a stateless call going on from a session)."""
        if message.parts is not None:
            return self.count_message(message)
        return self.count_fields(message.role, message.content, message.name, message.tool_calls, message.tool_call_id)

    def count_text_message(self, text: str, role: str = "system") -> int:
        """Tokens of one message carrying ``text`` (how a text contribution is sent)."""
        return MESSAGE_OVERHEAD + self.count(role) + self.count(text)

    def count_tool(self, tool: ToolSchema) -> int:
        """One tool: the JSON sent, or its function-definition rendering if that is larger (cached by the JSON)."""
        sent = tool.json
        n = self._tools.get(sent)
        if n is None:
            n = self._tools.put(sent, max(self.count(sent), self.count(function_definition(tool))))
        return n

    def count_tools(self, tools: Sequence[ToolSchema]) -> int:
        """A request's tools: each tool, plus the fixed overhead of the definitions block (0 for none); never below
        litellm's count of the definitions rendered as one text (in chunks, and merging differently across the
        tools' boundaries: it can be a token or two more)."""
        if not tools:
            return 0
        each = self.tools_overhead + sum(self.count_tool(t) for t in tools)
        whole = self._tool_sets.get_or_compute(
            tuple(t.json for t in tools), lambda: self.count_chunked(definitions(tools))
        )
        return max(each, TOOLS_OVERHEAD + whole)

    def count_chunked(self, text: str) -> int:
        """``text`` counted as ``litellm.token_counter`` counts it: in chunks of CHUNK_CHARS characters."""
        return sum(self.count(text[i : i + CHUNK_CHARS]) for i in range(0, len(text), CHUNK_CHARS))

    def count_request(self, messages: Iterable[Message], tools: Sequence[ToolSchema] = ()) -> int:
        """A whole prompt: its messages, its tools, and the reply priming."""
        return sum(self.count_message(m) for m in messages) + self.count_tools(tools) + REPLY_PRIMING


def _uncounted(m: Message, key: str) -> bool:
    return not has_media(m.parts) and not (m.tokens and key in m.tokens)


def _with_count(m: Message, key: str, tokens: TokenEstimator, count: Callable[[str], int] | None = None) -> Message:
    """``m`` carrying its count under ``key`` (its texts' counts read by ``count`` when given)."""
    n = tokens.uncached_count(m) if count is None or m.parts is not None else _fields_count(tokens, m, count)
    counts = {**(m.tokens or {}), key: n}
    return Message(m.role, m.content, m.turn, m.valid, m.tool_calls, m.tool_call_id, m.name, m.phase, counts, m.parts)


def _fields_count(tokens: TokenEstimator, m: Message, count: Callable[[str], int]) -> int:
    return tokens.count_fields(m.role, m.content, m.name, m.tool_calls, m.tool_call_id, count)


def _field_texts(tokens: TokenEstimator, m: Message) -> list[str]:
    """The texts ``count_fields`` counts of ``m``, noted as it counts them (one list of fields, its own)."""
    texts: list[str] = []

    def noted(text: str) -> int:
        texts.append(text)
        return 0

    _fields_count(tokens, m, noted)
    return texts


def _count_call(call: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """A tool call's id, type, function name and arguments."""
    n = sum(count(str(call[key])) for key in ("id", "type") if call.get(key) is not None)
    fn = call.get("function")
    if isinstance(fn, Mapping):
        n += sum(count(str(fn[key])) for key in ("name", "arguments") if fn.get(key) is not None)
    return n


STORED_ENCODINGS = ("o200k_base", "cl100k_base")
"""The encodings whose per-message counts are stored with each message when it is written."""


def counts_to_store(message: Message) -> dict[str, int]:
    """Per-encoding ``count_message`` figures to store with ``message`` (empty when no encoding loads, and for a
    message with images or files: their tokens depend on the model, so it is counted per model when used)."""
    if has_media(message.parts):
        return {}
    counts = {}
    for name in STORED_ENCODINGS:
        est = estimator(name)
        if est.stored_exact:
            counts[name] = est.uncached_count(message)
    return counts


# --- the function-definition rendering providers count tools in -------------------------------------


def definitions(tools: Sequence[ToolSchema]) -> str:
    """A request's tools as the one namespace of function definitions ``litellm.token_counter`` counts."""
    return TOOLS_HEADER + "".join(map(function_definition, tools)) + TOOLS_FOOTER


def function_definition(tool: ToolSchema) -> str:
    """``tool`` as one entry of the TypeScript-like namespace OpenAI renders function definitions into,
    with the blank line that separates it from the next (the format ``litellm.token_counter`` counts)."""
    lines = [f"// {tool.description}"] if tool.description else []
    params = tool.parameters if isinstance(tool.parameters, Mapping) else {}
    properties = params.get("properties")
    if isinstance(properties, Mapping) and properties:
        lines += [f"type {tool.name} = (_: {{", _ts_object(params, 0), "}) => any;"]
    else:
        lines.append(f"type {tool.name} = () => any;")
    return "\n".join(lines) + "\n\n"


def _ts_object(schema: Mapping[str, Any], indent: int) -> str:
    properties = schema.get("properties") or {}
    required = schema.get("required") or []
    lines: list[str] = []
    for key, prop in properties.items():
        prop = prop if isinstance(prop, Mapping) else {}
        if prop.get("description"):
            lines.append(f"// {prop['description']}")
        lines.append(f"{key}{'' if key in required else '?'}: {_ts_type(prop, indent)},")
    return "\n".join(" " * indent + line for line in lines)


def _ts_type(prop: Mapping[str, Any], indent: int) -> str:
    kind = prop.get("type")
    if kind in ("string", "integer", "number") and "enum" in prop:
        return " | ".join(f'"{item}"' for item in prop["enum"])
    if kind == "array":
        items = prop.get("items")
        return f"{_ts_type(items if isinstance(items, Mapping) else {}, indent)}[]"
    if kind == "object":
        return f"{{\n{_ts_object(prop, indent + 2)}\n}}"
    return {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}.get(
        kind if isinstance(kind, str) else "", "any"
    )


# --- shared estimators and model limits -------------------------------------------------------------

_estimators: dict[Tokenizer, TokenEstimator] = {}


def estimator_for(model: str) -> TokenEstimator:
    """The shared estimator for ``model``'s tokenizer (one text cache per tokenizer per process), counting
    images and files by ``model``'s rules."""
    return _shared(tokenizer_for(model)).for_model(model)


def estimator(name: str) -> TokenEstimator:
    """The shared estimator for the tiktoken encoding ``name``."""
    return _shared(Tokenizer("tiktoken", name))


def _shared(tokenizer: Tokenizer) -> TokenEstimator:
    est = _estimators.get(tokenizer)
    if est is None:
        est = _estimators[tokenizer] = TokenEstimator(tokenizer=tokenizer)
    return est


@lru_cache(maxsize=256)
def resolve_model_limit(model: str) -> tuple[int, str]:
    """The model's *input* limit and where it came from: litellm metadata, the fallback table, or 128K."""
    limit = _litellm_input_limit(model)
    if limit:
        return limit, "litellm"
    base = _split(model)[1]
    for prefix in sorted(FALLBACK_LIMITS, key=len, reverse=True):
        if base.startswith(prefix):
            return FALLBACK_LIMITS[prefix], "fallback_table"
    return DEFAULT_MODEL_LIMIT, "default"


def _litellm_input_limit(model: str) -> int | None:
    light = model_map.info(model)  # OpenAI's models from litellm's map file, without importing litellm
    if light is not None:
        return int(light["max_input_tokens"]) if light.get("max_input_tokens") else None
    try:
        import litellm  # imported lazily: it costs seconds

        litellm.suppress_debug_info = True
        info = litellm.get_model_info(model)
    except Exception:  # unmapped model, or litellm missing
        return None
    limit = info.get("max_input_tokens")
    return int(limit) if limit else None
