"""Tokens of a message's content parts (text, images, files, audio), by the provider's documented rules.

An image's size is read from its data URL's header (PNG, JPEG, GIF, WEBP; no pixels decoded). A part that
cannot be read offline (an http(s) URL, a file id, an unknown format) counts the model's worst case, so
nothing is ever counted as free. Every figure is also kept at or above what ``litellm.token_counter``
counts for the same part (docs/architecture.md, "Invariants the tests hold", 1), whichever provider's rule applies.

Where the rules come from (the formulas are in each function's docstring):

* OpenAI, "Images and vision" guide, "Calculating costs" (tile models and patch models, per-model tables);
* Anthropic, "Vision" guide, "Evaluate image size" and "Calculate image costs";
* Google, Gemini API "Understand and count tokens" (images, audio);
* Anthropic, "PDF support", "Estimate your costs" (PDF pages; read by pypdf: its page tree and content streams).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import math
import re
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .session_cache import BoundedCache

TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})
IMAGE_PART_TYPES = frozenset({"image_url", "input_image"})
FILE_PART_TYPES = frozenset({"file", "input_file"})
AUDIO_PART_TYPES = frozenset({"input_audio"})

LITELLM_BASE, LITELLM_TILE = 85, 170
"""What ``litellm.token_counter`` counts an image as, for every model: OpenAI's gpt-4o tile rule (its long side
capped at 2,000 px, within ``openai_tiles``'s 2,048), and 85 for ``detail`` "low" or "auto" (litellm 1.106)."""

ANTHROPIC_LONG_EDGE = 1568
ANTHROPIC_PIXELS_PER_TOKEN = 750
ANTHROPIC_MAX_TOKENS = 1600
"""Anthropic: an image larger than a 1,568 px long edge or "about 1,600 tokens" is scaled down first; its
table's largest figure is 1,590 (1092 x 1092). 1,600 bounds both that and litellm's 1.15 MP (1,534)."""

GEMINI_TOKENS = 258
GEMINI_SMALL_SIDE, GEMINI_TILE = 384, 768
GEMINI_ASSUMED_SIDE = 3072
"""Google documents no largest image size: one of unknown size counts as 3072 x 3072 (16 tiles of 768 px), an
assumption; an image whose header is read counts its own tiles, however many."""
GEMINI_3_MINIMUM = 1120
"""Gemini 3 counts an image by its ``media_resolution``, 1,120 tokens at "high": never less is counted."""

PDF_TEXT_TOKENS_PER_PAGE = 3000
"""Anthropic: a PDF page's text "typically uses 1,500-3,000 tokens"; its page is also sent as an image."""
PDF_LAYOUT_MARGIN = 1.1
"""Text extracted from a page carries line breaks and spacing its shown strings lack (pypdf's, for one, counts
0.2% more on a dense page): 10% more than the strings' own count."""
OPAQUE_FILE_MINIMUM = 85
"""litellm counts a file it cannot read (not a PDF) as one low-detail image: 85."""
FILE_ID_PAGES = 1
"""A file sent by id cannot be read offline and has no size bound: it counts as one PDF page (never free; an
estimate, not a bound: the provider's usage figures say what it cost)."""
AUDIO_TOKENS_PER_SECOND = 32
"""Gemini: 32 tokens per second of audio; OpenAI's realtime guide counts user audio at 1 token per 100 ms.
The larger of the two."""
AUDIO_MIN_BYTES_PER_SECOND = 1000
"""An encoded (not WAV) clip's length is unknown offline: bytes / 1,000 seconds bounds it for any codec at
8 kbit/s or more (MP3's lowest rate)."""
INFLATED_LIMIT = 32 << 20
"""At most this many bytes of a PDF's page contents are decoded for their text (pypdf bounds each stream at
75 MB): a zip bomb stops here; the pages beyond count ``PDF_TEXT_TOKENS_PER_PAGE`` each."""


# --- per-model rules -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImageRules:
    """How one model family counts an image. ``family``: "openai_tiles", "openai_patches", "anthropic",
    "gemini" or "unknown" (the largest of OpenAI's tile rule and Anthropic's)."""

    family: str
    base: int = LITELLM_BASE
    tile: int = LITELLM_TILE
    multiplier: float = 1.0
    minimum: int = 0

    def image(self, size: tuple[int, int] | None, detail: str = "auto") -> int:
        """Tokens of one image of ``size`` (width, height; None: unknown, the worst case) at ``detail``."""
        return max(self._own(size, detail), litellm_image_tokens(size, detail), self.minimum)

    def _own(self, size: tuple[int, int] | None, detail: str) -> int:
        if self.family == "openai_tiles":
            if detail == "low":
                return self.base
            return self.base + self.tile * (openai_tiles(*size) if size else OPENAI_MAX_TILES)
        if self.family == "openai_patches":  # no low-detail figure is documented: counted in full
            return math.ceil((openai_patches(*size) if size else OPENAI_MAX_PATCHES) * self.multiplier)
        if self.family == "anthropic":
            return anthropic_image_tokens(*size) if size else ANTHROPIC_MAX_TOKENS
        if self.family == "gemini":
            return gemini_image_tokens(*(size or (GEMINI_ASSUMED_SIDE, GEMINI_ASSUMED_SIDE)))
        return max(OPENAI_RULES._own(size, detail), ANTHROPIC_RULES._own(size, detail))


OPENAI_RULES = ImageRules("openai_tiles")
ANTHROPIC_RULES = ImageRules("anthropic")
GEMINI_RULES = ImageRules("gemini")
UNKNOWN_RULES = ImageRules("unknown")

_OPENAI_IMAGE_RULES: dict[str, ImageRules] = {
    # OpenAI, "Calculating costs", patch models: 32 px patches x the model's multiplier.
    "gpt-4.1-mini": ImageRules("openai_patches", multiplier=1.62),
    "gpt-4.1-nano": ImageRules("openai_patches", multiplier=2.46),
    "gpt-5-mini": ImageRules("openai_patches", multiplier=1.62),
    "gpt-5-nano": ImageRules("openai_patches", multiplier=2.46),
    "o4-mini": ImageRules("openai_patches", multiplier=1.72),
    # Tile models: base + tile tokens per 512 px tile.
    "gpt-4o-mini": ImageRules("openai_tiles", base=2833, tile=5667),
    "gpt-5": ImageRules("openai_tiles", base=70, tile=140),
    "o1": ImageRules("openai_tiles", base=75, tile=150),
    "o3": ImageRules("openai_tiles", base=75, tile=150),
    "computer-use-preview": ImageRules("openai_tiles", base=65, tile=129),
}
_OPENAI_PREFIXES = ("gpt-", "o1", "o3", "o4", "chatgpt-", "computer-use")


@lru_cache(maxsize=256)
def image_rules_for(model: str) -> ImageRules:
    """The image rules of ``model`` (any provider prefix, e.g. ``azure/``, ``openrouter/openai/``, is ignored)."""
    base = model.lower().rpartition("/")[2].removeprefix("ft:")
    for prefix in sorted(_OPENAI_IMAGE_RULES, key=len, reverse=True):
        if base.startswith(prefix):
            return _OPENAI_IMAGE_RULES[prefix]
    if base.startswith(_OPENAI_PREFIXES):
        return OPENAI_RULES
    if "claude" in base:
        return ANTHROPIC_RULES
    if "gemini-3" in base:
        return ImageRules("gemini", minimum=GEMINI_3_MINIMUM)
    if "gemini" in base:
        return GEMINI_RULES
    return UNKNOWN_RULES


# --- the formulas ----------------------------------------------------------------------------------


def openai_tiles(width: int, height: int) -> int:
    """512 px tiles of an image at high detail (OpenAI, tile models).

    OpenAI: the image is scaled to fit in 2048 x 2048, then so its shortest side is 768 px; each 512 px tile
    costs ``tile`` tokens, plus ``base``. Examples: 1024 x 1024 -> 768 x 768, 4 tiles, 85 + 4 x 170 = 765;
    2048 x 4096 -> 768 x 1536, 6 tiles, 1,105. OpenAI does not say whether a smaller image is scaled *up*:
    one larger than 768 px on a side is (litellm's reading, and the larger count), within 2048 px.
    """
    w, h = _fit(width, height, 2048)
    short, long = min(w, h), max(w, h)
    if long > 768:
        scale = min(768 / short, 2048 / long)
        w, h = w * scale, h * scale
    return _ceil_div(w, 512) * _ceil_div(h, 512)


OPENAI_MAX_TILES = 8
"""768 x 2048: the most tiles ``openai_tiles`` can give (2 x 4)."""


def openai_patches(width: int, height: int) -> int:
    """32 px patches of an image, at most 1,536 (OpenAI, patch models; times the model's multiplier).

    OpenAI: patches = ceil(w/32) x ceil(h/32); above 1,536 the image is scaled by
    r = sqrt(32^2 x 1536 / (w x h)), then r x min(floor(w r/32)/(w r/32), floor(h r/32)/(h r/32)) so whole
    patches fit, and the patches of the scaled image are counted, capped at 1,536. Examples: 1024 x 1024 -> 1,024;
    1800 x 2400 -> 1,452.
    """
    raw = _ceil_div(width, 32) * _ceil_div(height, 32)
    if raw <= OPENAI_MAX_PATCHES:
        return raw
    r = math.sqrt(32 * 32 * OPENAI_MAX_PATCHES / (width * height))
    r *= min(math.floor(width * r / 32) / (width * r / 32), math.floor(height * r / 32) / (height * r / 32))
    if r <= 0:  # a side thinner than one patch once scaled: the formula breaks down, count the cap
        return OPENAI_MAX_PATCHES
    return min(OPENAI_MAX_PATCHES, _ceil_div(width * r, 32) * _ceil_div(height * r, 32))


OPENAI_MAX_PATCHES = 1536


def anthropic_image_tokens(width: int, height: int) -> int:
    """Anthropic: tokens = width x height / 750, after scaling the long edge to at most 1,568 px and the image to
    at most about 1,600 tokens. Examples from its table: 1000 x 1000 -> 1,334; 200 x 200 -> 54."""
    w, h = _fit(width, height, ANTHROPIC_LONG_EDGE)
    return min(ANTHROPIC_MAX_TOKENS, math.ceil(w * h / ANTHROPIC_PIXELS_PER_TOKEN))


def gemini_image_tokens(width: int, height: int) -> int:
    """Gemini: 258 tokens when both sides are at most 384 px; a larger image is cropped and scaled into tiles of
    768 x 768, 258 tokens each. Google does not say how the tiles are cut: the crop unit here is the shorter side
    / 1.5 within 256..768 px (as reported of Gemini 2's counts, an assumption), which never gives fewer tiles
    than 768 px tiles would."""
    if width <= GEMINI_SMALL_SIDE and height <= GEMINI_SMALL_SIDE:
        return GEMINI_TOKENS
    unit = max(256.0, min(float(GEMINI_TILE), min(width, height) / 1.5))
    return GEMINI_TOKENS * _ceil_div(width, unit) * _ceil_div(height, unit)


def litellm_image_tokens(size: tuple[int, int] | None, detail: str) -> int:
    """What ``litellm.token_counter`` counts (the floor every rule keeps): 85 at "low"/"auto", else OpenAI's tile
    rule with the long side capped at 2,000 px, which ``openai_tiles`` (2,048 px) never counts fewer tiles than."""
    if detail != "high":
        return LITELLM_BASE
    return LITELLM_BASE + LITELLM_TILE * (openai_tiles(*size) if size else OPENAI_MAX_TILES)


def _fit(width: float, height: float, side: int) -> tuple[float, float]:
    scale = min(1.0, side / max(width, height))
    return width * scale, height * scale


def _ceil_div(length: float, unit: float) -> int:
    return max(1, math.ceil(length / unit - 1e-9))


# --- one content part ------------------------------------------------------------------------------


def has_media(parts: tuple[Mapping[str, Any], ...] | None) -> bool:
    """Whether any part is not text (its count then depends on the model, not only on the encoding)."""
    return parts is not None and any(p.get("type") not in TEXT_PART_TYPES for p in parts)


def media_note(parts: tuple[Mapping[str, Any], ...] | None) -> str:
    """What a message carries besides text, for a line that stands in for it ("[2 images, 1 file]"; "" if none):
    a summary of dropped messages then says what was not shown instead of losing it silently."""
    kinds = [
        _MEDIA_NOUNS.get(str(p.get("type")), "attachment") for p in parts or () if p.get("type") not in TEXT_PART_TYPES
    ]
    counts = {noun: kinds.count(noun) for noun in dict.fromkeys(kinds)}
    return "[" + ", ".join(f"{n} {noun}{'s' if n > 1 else ''}" for noun, n in counts.items()) + "]" if counts else ""


_MEDIA_NOUNS = {
    "image_url": "image",
    "input_image": "image",
    "file": "file",
    "input_file": "file",
    "input_audio": "audio clip",
}


def part_tokens(part: Mapping[str, Any], count: Callable[[str], int], rules: ImageRules = UNKNOWN_RULES) -> int:
    """Tokens one content part adds to its message (``count`` counts text; ``rules``: the model's images)."""
    kind = part.get("type")
    if kind in TEXT_PART_TYPES:
        return count(str(part.get("text", "")))
    if kind in IMAGE_PART_TYPES:
        url, detail = _image_url(part)
        return rules.image(image_size(url), detail)
    if kind in FILE_PART_TYPES:
        return file_tokens(part.get("file") if kind == "file" else part, count, rules)
    if kind in AUDIO_PART_TYPES:
        audio = part.get("input_audio")
        return audio_tokens(audio.get("data") if isinstance(audio, Mapping) else None)
    return count(json.dumps(_plain(part), ensure_ascii=False, separators=(",", ":")))


def _image_url(part: Mapping[str, Any]) -> tuple[str, str]:
    """An image part's URL and detail, in chat-completions (``image_url: {url, detail}``) or Responses form."""
    image = part.get("image_url", "")
    detail = part.get("detail", "auto")
    if isinstance(image, Mapping):
        detail = image.get("detail", detail)
        image = image.get("url", "")
    return str(image or part.get("file_id") or ""), str(detail or "auto")


def file_tokens(file: Any, count: Callable[[str], int], rules: ImageRules) -> int:
    """A file part: its name, plus its data by type. Image data counts as an image; a PDF as its pages (each
    page's text and its image, per ``pdf_tokens``); text as its text; anything else as bytes / 4. A file
    sent by id counts ``FILE_ID_PAGES`` PDF pages. Never below litellm's 85 for an opaque document."""
    file = file if isinstance(file, Mapping) else {}
    name = file.get("filename")
    n = count(name) if isinstance(name, str) else 0
    data = file.get("file_data")
    if not isinstance(data, str) or not data:
        return n + FILE_ID_PAGES * pdf_page_tokens(rules)
    media_type, payload = _data_url(data)
    if media_type.startswith("image/"):
        return n + rules.image(image_size(data), "auto")
    raw = _decode(data if payload is None else payload)
    if media_type == "application/pdf" or raw[:5] == b"%PDF-":
        body = pdf_tokens(raw, rules, count)
    elif media_type.startswith("text/") or media_type in ("application/json", "application/xml"):
        body = count(raw.decode("utf-8", "replace"))
    else:
        body = math.ceil(len(raw) / 4)
    return n + max(OPAQUE_FILE_MINIMUM, body)


def pdf_page_tokens(rules: ImageRules) -> int:
    """One PDF page: its text (Anthropic's upper typical figure) and its image."""
    return PDF_TEXT_TOKENS_PER_PAGE + pdf_page_image(rules)


def pdf_page_image(rules: ImageRules) -> int:
    """A page is also sent as an image of unknown resolution: the model's worst case, and never below the
    page image litellm counts (Anthropic's largest)."""
    return max(rules.image(None, "high"), ANTHROPIC_MAX_TOKENS)


def pdf_tokens(raw: bytes, rules: ImageRules, count: Callable[[str], int]) -> int:
    """A PDF: ``pdf_page_tokens`` per page, and more text when its pages show more: the strings its content
    streams show, counted as text (a hex string, a 2-byte font's, at a token a byte). An estimate: what a
    provider counts depends on the text it extracts and the resolution it renders pages at."""
    pages, shown, hex_bytes = pdf_layout(raw)
    text = math.ceil(count(shown) * PDF_LAYOUT_MARGIN) + hex_bytes
    return max(pages * PDF_TEXT_TOKENS_PER_PAGE, text) + pages * pdf_page_image(rules)


def pdf_layout(raw: bytes) -> tuple[int, str, int]:
    """(pages, the literal strings its pages show, the bytes of the hex strings they show), read by pypdf: its
    page tree however it is stored (object streams, any filter chain) and, when it is encrypted with an empty
    user password (it opens without one), decrypted. Cached by the bytes' SHA-256 (not the bytes). A PDF pypdf
    cannot read counts the page objects its bytes show (none, when they sit in an encrypted object stream);
    every PDF counts at least one page."""
    digest = hashlib.sha256(raw).digest()
    known = _PDF_LAYOUTS.get(digest)
    return known if known is not None else _PDF_LAYOUTS.put(digest, _layout(raw))


_PDF_LAYOUTS: BoundedCache[bytes, tuple[int, str, int]] = BoundedCache(64)


def _layout(raw: bytes) -> tuple[int, str, int]:
    read = _read_pdf(raw)
    if read is None:
        return max(1, len(_PAGE_OBJECT.findall(raw))), "", 0
    pages, contents = read
    shown, hex_bytes = [], 0
    for stream in contents:
        if b"BT" in stream and b"Tf" in stream:  # a content stream showing text
            shown += [m[1:-1].decode("latin-1") for m in _LITERAL.findall(stream)]
            hex_bytes += sum(len(m) // 2 for m in _HEX.findall(stream))
    return max(1, pages), " ".join(shown), hex_bytes


def _read_pdf(raw: bytes) -> tuple[int, list[bytes]] | None:
    """The page count and the pages' decoded content streams (at most ``INFLATED_LIMIT`` bytes in all), or None
    when pypdf cannot read the page tree: a damaged file, or one that needs a password (a provider cannot
    read it either)."""
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(raw))
        if reader.is_encrypted and not reader.decrypt(""):
            return None
        pages = len(reader.pages)
    except Exception:  # pypdf raises many kinds (PdfReadError, KeyError, ValueError, ...) on damaged files
        return None
    contents: list[bytes] = []
    room = INFLATED_LIMIT
    for page in reader.pages:
        contents.append(_page_content(page))
        room -= len(contents[-1])
        if room <= 0:
            break
    return pages, contents


def _page_content(page: Any) -> bytes:
    try:
        stream = page.get_contents()
        return bytes(stream.get_data()) if stream is not None else b""
    except Exception:  # one damaged page shows no text; the others still count theirs
        return b""


_PAGE_OBJECT = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
_LITERAL = re.compile(rb"\((?:\\.|[^\\)])*\)")
_HEX = re.compile(rb"<[0-9A-Fa-f\s]+>")


def audio_tokens(data: Any) -> int:
    """An ``input_audio`` clip: ``AUDIO_TOKENS_PER_SECOND`` x its length, from a WAV header's byte rate and data
    size; for other formats the length bound ``AUDIO_MIN_BYTES_PER_SECOND`` gives. Never 0."""
    raw = _decode(data) if isinstance(data, str) else b""
    seconds = _wav_seconds(raw)
    if seconds is None:
        seconds = len(raw) / AUDIO_MIN_BYTES_PER_SECOND
    return max(1, math.ceil(seconds * AUDIO_TOKENS_PER_SECOND))


def _wav_seconds(raw: bytes) -> float | None:
    if raw[:4] != b"RIFF" or raw[8:12] != b"WAVE":
        return None
    byte_rate, offset = 0, 12
    while offset + 8 <= len(raw):
        chunk, size = raw[offset : offset + 4], struct.unpack_from("<I", raw, offset + 4)[0]
        if chunk == b"fmt " and size >= 12:
            byte_rate = struct.unpack_from("<I", raw, offset + 16)[0]
        elif chunk == b"data" and byte_rate:
            return min(size, len(raw) - offset - 8) / byte_rate
        offset += 8 + size + (size & 1)
    return None


# --- image headers ---------------------------------------------------------------------------------


def image_size(url: str) -> tuple[int, int] | None:
    """(width, height) of a base64 data-URL image (PNG, JPEG, GIF, WEBP), read from its header; None when it
    cannot be read offline (an http(s) URL, a file id, another format, bad data)."""
    payload = _data_url(url)[1]
    if payload is None:
        return None
    try:
        size = _header_size(_Base64Bytes(payload))
    except (ValueError, binascii.Error, struct.error, IndexError):
        return None
    return size if size and size[0] > 0 and size[1] > 0 else None


def _header_size(data: _Base64Bytes) -> tuple[int, int] | None:
    head = data.read(0, 32)
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return struct.unpack(">II", head[16:24])
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return struct.unpack("<HH", head[6:10])
    if head[:3] == b"\xff\xd8\xff":
        return _jpeg_size(data)
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return _webp_size(head)
    return None


_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
"""Start-of-frame markers (baseline, progressive, lossless, arithmetic); C4, C8, CC are not frames."""


def _jpeg_size(data: _Base64Bytes) -> tuple[int, int] | None:
    """Walks the JPEG's marker segments (reading only their headers) to the first start-of-frame."""
    offset = 2
    while offset + 4 <= data.size:
        marker = data.read(offset, 2)
        if marker[0] != 0xFF:
            return None
        if marker[1] == 0xFF:  # fill byte
            offset += 1
            continue
        if marker[1] in _JPEG_SOF:
            height, width = struct.unpack(">HH", data.read(offset + 5, 4))
            return width, height
        if 0xD0 <= marker[1] <= 0xD9 or marker[1] == 0x01:  # standalone markers carry no length
            offset += 2
            continue
        offset += 2 + struct.unpack(">H", data.read(offset + 2, 2))[0]
    return None


def _webp_size(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8X":
        return int.from_bytes(head[24:27], "little") + 1, int.from_bytes(head[27:30], "little") + 1
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", head[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L":
        bits = struct.unpack("<I", head[21:25])[0]
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


class _Base64Bytes:
    """Bytes of a base64 payload, decoded only where read (a JPEG's frame header may sit megabytes in)."""

    def __init__(self, payload: str) -> None:
        if any(c in payload for c in "\r\n\t "):
            payload = re.sub(r"\s+", "", payload)
        self.payload = payload
        self.size = len(payload) * 3 // 4 - payload[-2:].count("=")

    def read(self, start: int, n: int) -> bytes:
        first = start // 3 * 4
        chunk = base64.b64decode(self.payload[first : (start + n + 2) // 3 * 4], validate=True)
        return chunk[start - first // 4 * 3 : start - first // 4 * 3 + n]


def _data_url(url: str) -> tuple[str, str | None]:
    """A data URL's media type and base64 payload ("", None when ``url`` is not a base64 data URL)."""
    if not url.startswith("data:"):
        return "", None
    header, sep, payload = url.partition(",")
    if not sep or not header.endswith(";base64"):
        return "", None
    return header[5:].split(";")[0].lower(), payload


def _decode(payload: str) -> bytes:
    try:
        return base64.b64decode(payload)
    except (binascii.Error, ValueError):
        return payload.encode("utf-8", "surrogatepass")


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
