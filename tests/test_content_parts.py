"""Images, files and audio in messages are kept and counted by the provider's rules, never below litellm.

Oracles: the providers' published examples (OpenAI's "Calculating costs", Anthropic's image-size table, Gemini's
token guide), ``litellm.token_counter`` on the same messages, image sizes read by litellm's own header reader,
and the gpt-4o-mini tile formula written out here from OpenAI's table.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import math
from typing import Any

import litellm
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litellm.litellm_core_utils.token_counter import get_image_dimensions

from components.context_window.base import Message
from components.context_window.budget import BudgetExceeded
from components.context_window.content_parts import image_rules_for, image_size
from components.context_window.handler import ContextWindowHandler
from components.context_window.token_estimator import counts_to_store, estimator, estimator_for
from tda.builtins import DEFAULT_TYPES
from tests.media import (
    IMAGE_FORMATS,
    MAX_SIDE,
    data_url,
    encrypted_pdf,
    image_part,
    pdf15_bytes,
    pdf_bytes,
    wav_bytes,
)
from tests.oracle import cookbook_tokens, text_tokens
from tests.support import conversation, make_ctx

MODELS = [
    "gpt-4o",
    "gpt-4o-mini",
    "gpt-4.1",
    "gpt-4.1-mini",
    "gpt-4.1-nano",
    "o4-mini",
    "o3",
    "gpt-5",
    "azure/gpt-4o",
    "claude-3-5-sonnet-20240620",
    "claude-sonnet-4-20250514",
    "gemini/gemini-2.0-flash",
    "gemini/gemini-3-pro-preview",
    "ollama/llama3",
]
QUESTION = {"type": "text", "text": "What is in this picture?"}
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def ask(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": [QUESTION, *parts]}


def image_tokens(model: str, part: dict[str, Any]) -> int:
    """What the image adds to a message for ``model``: the message with it, less the message without it."""
    tokens = estimator_for(model)
    return tokens.count_chat(ask(part)) - tokens.count_chat(ask())


# --- sizes from headers ----------------------------------------------------------------------------


@SETTINGS
@given(st.sampled_from(IMAGE_FORMATS), st.data())
def test_image_sizes_are_read_from_the_header_as_litellm_reads_them(fmt, data):
    width = data.draw(st.integers(1, MAX_SIDE[fmt]))
    height = data.draw(st.integers(1, MAX_SIDE[fmt]))
    url = data_url(fmt, width, height)
    assert image_size(url) == get_image_dimensions(url) == (width, height)


def test_a_jpeg_frame_header_after_large_exif_segments_is_found():
    url = data_url("jpeg", 4032, 3024, exif_bytes=400_000)
    assert image_size(url) == get_image_dimensions(url) == (4032, 3024)


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/cat.png",
        "data:image/png;base64,iVBORw0KGgo=",  # a PNG signature and nothing else
        "data:image/png;base64,@@not base64@@",
        "data:image/heic;base64," + base64.b64encode(b"\0\0\0\x18ftypheic" + bytes(40)).decode(),
        "file-abc123",
    ],
)
def test_an_image_that_cannot_be_read_offline_counts_the_models_worst_case(url):
    assert image_size(url) is None
    for model in MODELS:
        worst = image_rules_for(model).image(None, "high")
        assert image_tokens(model, image_part(url, "high")) == worst
        largest = image_tokens(model, image_part(data_url("png", 768, 2048), "high"))
        assert worst >= largest


# --- the providers' published examples -------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "size", "detail", "expected"),
    [
        # OpenAI, "Calculating costs": tile models.
        ("gpt-4o", (1024, 1024), "high", 85 + 170 * 4),  # 765
        ("gpt-4o", (2048, 4096), "high", 85 + 170 * 6),  # 1,105
        ("gpt-4o", (4096, 8192), "low", 85),
        ("gpt-4.1", (1024, 1024), "auto", 765),  # auto may choose high: counted as high
        ("gpt-4o-mini", (1024, 1024), "high", 2833 + 5667 * 4),
        ("gpt-4o-mini", (4096, 8192), "low", 2833),
        ("o3", (1024, 1024), "auto", 75 + 150 * 4),  # at "high", litellm's 765 is the floor
        # Patch models: 1024 x 1024 is 1,024 patches; 1800 x 2400 is 1,452 (scaled to fit 1,536), x the multiplier.
        ("gpt-4.1-mini", (1024, 1024), "high", math.ceil(1024 * 1.62)),
        ("gpt-4.1-mini", (1800, 2400), "high", math.ceil(1452 * 1.62)),
        ("gpt-4.1-nano", (1800, 2400), "high", math.ceil(1452 * 2.46)),
        ("o4-mini", (1800, 2400), "high", math.ceil(1452 * 1.72)),
        # Anthropic: width x height / 750, long edge within 1,568, about 1,600 at most.
        ("claude-3-5-sonnet-20240620", (1000, 1000), "auto", 1334),
        ("claude-3-5-sonnet-20240620", (1092, 1092), "auto", 1590),
        ("claude-3-5-sonnet-20240620", (5000, 5000), "auto", 1600),
        # Gemini: 258 for an image within 384 x 384.
        ("gemini/gemini-2.0-flash", (384, 384), "auto", 258),
    ],
)
def test_published_examples(model, size, detail, expected):
    assert image_tokens(model, image_part(data_url("png", *size), detail)) == expected


def test_a_sliver_too_thin_for_one_patch_once_scaled_counts_the_patch_cap():
    """1 x 100,000 px: OpenAI's scale factor rounds to 0 patches wide; counted at its 1,536-patch cap."""
    assert image_tokens("gpt-4.1-mini", image_part(data_url("png", 1, 100_000))) == math.ceil(1536 * 1.62)


def test_small_images_on_claude_keep_litellms_floor():
    """Anthropic counts a 200 x 200 image as 54 tokens, but litellm (the floor) counts 85 for any image."""
    assert image_tokens("claude-3-5-sonnet-20240620", image_part(data_url("png", 200, 200))) == 85


# --- never below litellm ---------------------------------------------------------------------------


@SETTINGS
@given(
    st.sampled_from(MODELS),
    st.sampled_from(IMAGE_FORMATS),
    st.sampled_from(["high", "low", "auto", None]),
    st.integers(1, 12_000),
    st.integers(1, 12_000),
)
def test_an_image_message_is_never_counted_below_litellm(model, fmt, detail, width, height):
    width, height = min(width, MAX_SIDE[fmt]), min(height, MAX_SIDE[fmt])
    message = ask(image_part(data_url(fmt, width, height), detail))
    ours = estimator_for(model).count_request([Message.from_chat(message)])
    assert ours >= litellm.token_counter(model=model, messages=[message])


@pytest.mark.parametrize("model", MODELS)
def test_a_pdf_is_counted_per_page_and_never_below_litellm(model):
    dense = "lorem ipsum dolor sit amet " * 40
    raw = pdf_bytes([dense] * 7)
    part = {
        "type": "file",
        "file": {
            "filename": "report.pdf",
            "file_data": "data:application/pdf;base64," + base64.b64encode(raw).decode(),
        },
    }
    ours = estimator_for(model).count_request([Message.from_chat(ask(part))])
    assert ours >= litellm.token_counter(model=model, messages=[ask(part)])
    one_page = image_tokens(model, {"type": "file", "file": {"file_data": _pdf_url(1)}})
    assert image_tokens(model, {"type": "file", "file": {"file_data": _pdf_url(7)}}) == 7 * one_page


@pytest.mark.parametrize("compress", [True, False])
def test_a_pdf_page_denser_than_the_per_page_figure_counts_its_text(compress):
    text = " ".join(f"word{i} item{i * 7} value{i % 13}" for i in range(2_000))  # about 18,000 tokens
    raw = pdf_bytes([text], compress=compress)
    part = {"type": "file", "file": {"file_data": "data:application/pdf;base64," + base64.b64encode(raw).decode()}}
    assert image_tokens("gpt-4o", part) >= text_tokens(text) + 1445 > 3000 + 1600
    assert estimator_for("gpt-4o").count_chat(ask(part)) >= litellm.token_counter(model="gpt-4o", messages=[ask(part)])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["gpt-4o", "claude-sonnet-4-20250514", "gemini/gemini-2.0-flash"]),
    st.lists(st.integers(0, 6_000), min_size=1, max_size=5),
    st.booleans(),
)
def test_pdfs_of_any_page_count_and_density_are_never_below_litellm(model, lengths, compress):
    pages = [" ".join(f"w{i}x{n}" for i in range(n)) for n in lengths]
    url = "data:application/pdf;base64," + base64.b64encode(pdf_bytes(pages, compress=compress)).decode()
    message = ask({"type": "file", "file": {"filename": "a.pdf", "file_data": url}})
    ours = estimator_for(model).count_request([Message.from_chat(message)])
    assert ours >= litellm.token_counter(model=model, messages=[message])


def _pdf_url(pages: int) -> str:
    return "data:application/pdf;base64," + base64.b64encode(pdf_bytes(["hello"] * pages)).decode()


FILTER_CHAINS = [("FlateDecode",), ("ASCIIHexDecode", "FlateDecode"), ("ASCII85Decode", "FlateDecode"), ()]
ENCRYPTIONS = [None, "RC4-40", "RC4-128", "AES-128", "AES-256"]


def _pdf_part(raw: bytes) -> dict[str, Any]:
    return {"type": "file", "file": {"file_data": "data:application/pdf;base64," + base64.b64encode(raw).decode()}}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["gpt-4o", "claude-sonnet-4-20250514", "gemini/gemini-2.0-flash"]),
    st.integers(1, 80),
    st.sampled_from(FILTER_CHAINS),
    st.sampled_from(ENCRYPTIONS),
)
def test_pdf_pages_count_as_a_pdf_parser_reads_them(model, pages, filters, encryption):
    """Page objects in an object stream behind any filter chain (PDF 1.5), encrypted or not: each page counts
    what a one-page PDF 1.4 counts, the pages being those pypdf (the oracle) reads."""
    from pypdf import PdfReader

    raw = pdf15_bytes(["hello"] * pages, filters=filters)
    raw = encrypted_pdf(raw, algorithm=encryption) if encryption else raw
    reader = PdfReader(io.BytesIO(raw))
    assert not reader.is_encrypted or reader.decrypt("")
    assert len(reader.pages) == pages
    one_page = image_tokens(model, _pdf_part(pdf_bytes(["hello"])))
    assert image_tokens(model, _pdf_part(raw)) == pages * one_page >= pages * (3000 + 1445)


def test_sixty_pages_behind_a_filter_chain_count_sixty_pages():
    """Round 3's finding: 60 pages in an object stream under [/ASCIIHexDecode /FlateDecode] counted as one."""
    raw = pdf15_bytes([f"page {i}" for i in range(60)], filters=("ASCIIHexDecode", "FlateDecode"))
    assert image_tokens("gpt-4o", _pdf_part(raw)) >= 60 * 3000


@pytest.mark.parametrize("filters", FILTER_CHAINS)
def test_dense_pages_behind_a_filter_chain_count_their_text(filters):
    text = " ".join(f"word{i} item{i * 7} value{i % 13}" for i in range(2_000))  # about 18,000 tokens
    raw = encrypted_pdf(pdf15_bytes([text], filters=filters))
    assert image_tokens("gpt-4o", _pdf_part(raw)) >= text_tokens(text) + 1445 > 3000 + 1600


def test_a_pdf_that_needs_a_password_still_counts_its_pages():
    """pypdf cannot open it (nor can a provider): its page objects, written in the clear, still count."""
    raw = encrypted_pdf(pdf_bytes(["hello"] * 9), user_password="secret")
    one_page = image_tokens("gpt-4o", _pdf_part(pdf_bytes(["hello"])))
    assert image_tokens("gpt-4o", _pdf_part(raw)) == 9 * one_page


def test_a_damaged_pdf_counts_at_least_one_page():
    raw = pdf_bytes(["hello"] * 3)[:-200]  # its cross-reference table cut off
    one_page = image_tokens("gpt-4o", _pdf_part(pdf_bytes(["hello"])))
    assert image_tokens("gpt-4o", _pdf_part(raw)) >= one_page
    assert image_tokens("gpt-4o", _pdf_part(b"%PDF-1.7 nothing else")) == one_page


def test_files_and_audio_are_never_free():
    wav = base64.b64encode(wav_bytes(2.0)).decode()
    mp3 = base64.b64encode(b"\xff\xfb" + bytes(4_000)).decode()
    parts = {
        "two seconds of WAV": {"type": "input_audio", "input_audio": {"data": wav, "format": "wav"}},
        "an MP3 clip": {"type": "input_audio", "input_audio": {"data": mp3, "format": "mp3"}},
        "empty audio": {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}},
        "a file by id": {"type": "file", "file": {"file_id": "file-abc123"}},
        "a text file": {"type": "file", "file": {"file_data": "data:text/plain;base64,aGk=", "filename": "a.txt"}},
        "a binary file": {"type": "file", "file": {"file_data": "data:application/zip;base64," + "A" * 40_000}},
        "an image file": {"type": "file", "file": {"file_data": data_url("png", 1024, 1024)}},
    }
    counts = {name: image_tokens("gpt-4o", part) for name, part in parts.items()}
    assert all(n > 0 for n in counts.values()), counts
    assert counts["two seconds of WAV"] == 2 * 32  # 32 tokens a second
    assert counts["an MP3 clip"] >= 4_002 / 1000 * 32  # at most 1,000 bytes a second
    assert counts["a binary file"] >= 30_000 / 4
    assert counts["an image file"] == 765
    assert counts["a file by id"] >= 3000 + 1445  # one page: its text and its image


# --- windows ---------------------------------------------------------------------------------------


def gpt4o_mini_image(width: int, height: int) -> int:
    """OpenAI's table for gpt-4o-mini (2,833 + 5,667 per 512 px tile), written out here as the oracle."""
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    if min(w, h) > 768:
        w, h = w * 768 / min(w, h), h * 768 / min(w, h)
    return 2833 + 5667 * math.ceil(w / 512) * math.ceil(h / 512)


def provider_count(messages: list[dict[str, Any]]) -> int:
    """gpt-4o-mini's prompt tokens for ``messages``: the cookbook's text accounting plus each image by its table."""
    total = 0
    for m in messages:
        parts = m["content"] if isinstance(m["content"], list) else []
        text = "\n".join(p["text"] for p in parts if p["type"] == "text") if parts else m["content"]
        total += cookbook_tokens([{**m, "content": text}], "gpt-4o") - 3
        for p in parts:
            if p["type"] == "image_url":
                total += gpt4o_mini_image(*get_image_dimensions(p["image_url"]["url"]))
    return total + 3


def image_query(ctx, width: int, height: int, model: str = "gpt-4o-mini"):
    query = Message.from_chat(ask(image_part(data_url("jpeg", width, height), "high")))
    return dataclasses.replace(ctx, query=query.content, query_message=query, model=model)


async def test_a_large_image_in_the_query_that_cannot_fit_raises_budget_exceeded(builtin_registry):
    """A 2048 x 4096 image is 36,835 tokens on gpt-4o-mini: with 30,000 available, the turn cannot be sent."""
    ctx = image_query(make_ctx(limit=32_000), 2048, 4096)
    with pytest.raises(BudgetExceeded) as info:
        await ContextWindowHandler(builtin_registry).assemble(ctx, DEFAULT_TYPES["balanced"])
    assert info.value.floor_tokens >= info.value.parts["query [1 image]"] >= gpt4o_mini_image(2048, 4096)
    assert "query [1 image] 36,8" in str(info.value)  # the error says what to shrink


async def test_an_image_in_the_query_makes_room_by_condensing_history(builtin_registry):
    history = conversation(40, words_per_message=120)
    ctx = image_query(make_ctx(messages=history, limit=40_000), 1024, 1024)
    result = await ContextWindowHandler(builtin_registry).assemble(ctx, DEFAULT_TYPES["balanced"])
    snap = result.snapshot
    assert result.messages[-1]["content"][1]["image_url"]["url"] == ctx.query_message.parts[1]["image_url"]["url"]
    sent_history = [m for m in result.messages[1:-1] if m["role"] in ("user", "assistant")]
    assert len(sent_history) < len(history)  # the image took history's room
    assert snap.total_used <= snap.available_budget
    assert provider_count(result.messages) <= snap.available_budget


async def test_an_image_in_older_history_counts_and_is_dropped_whole(builtin_registry):
    """On gpt-4o-mini a 1024 x 1024 image is 25,501 tokens: in a window of 12,000 its message cannot stay, where
    the same message without the image does; with room it stays, image and all. Never its text alone."""
    asked = Message.from_chat(ask(image_part(data_url("png", 1024, 1024), "high")))
    pictured = Message("user", asked.content, turn=1, parts=asked.parts)
    history = [pictured, Message("assistant", "A cat on a mat.", turn=1), *conversation(6)[2:]]
    handler = ContextWindowHandler(builtin_registry)

    async def window(messages: list[Message], limit: int):
        ctx = dataclasses.replace(make_ctx(messages=messages, limit=limit), model="gpt-4o-mini")
        result = await handler.assemble(ctx, DEFAULT_TYPES["balanced"])
        snap = result.snapshot
        assert snap.total_used <= snap.available_budget
        assert provider_count(result.messages) <= snap.available_budget
        sent = [m for m in result.messages if m["role"] == "user" and "picture" in str(m["content"])]
        assert all(m["content"][1]["type"] == "image_url" for m in sent if isinstance(m["content"], list))
        return sent, snap, result.messages

    text_only, _, _ = await window([Message("user", asked.content, turn=1), *history[1:]], 12_000)
    assert len(text_only) == 1  # the message fits when it is text
    tight, _, messages = await window(history, 12_000)
    assert tight == []  # with its image it does not: dropped whole
    summary = [m["content"] for m in messages if str(m["content"]).startswith("Summary of")]
    assert summary and "User: What is in this picture? [1 image]" in summary[0]  # and the summary says so
    roomy, snap, _ = await window(history, 128_000)
    assert len(roomy) == 1 and isinstance(roomy[0]["content"], list)  # kept with its image, and counted
    assert snap.total_used >= gpt4o_mini_image(1024, 1024)


# --- stored counts ---------------------------------------------------------------------------------


def test_stored_counts_are_per_encoding_for_text_and_per_model_for_images():
    text_parts = Message.from_chat({"role": "user", "content": [QUESTION, {"type": "text", "text": "and this?"}]})
    stored = counts_to_store(text_parts)
    assert stored and stored == {name: estimator(name).count_message(text_parts) for name in stored}
    pictured = Message.from_chat(ask(image_part(data_url("png", 1024, 1024), "high")))
    assert counts_to_store(pictured) == {}
    stale = Message(pictured.role, pictured.content, parts=pictured.parts, tokens={"o200k_base": 10})
    assert estimator_for("gpt-4o-mini").count_message(stale) == estimator_for("gpt-4o-mini").count_message(pictured)
    assert estimator_for("gpt-4o").count_message(stale) == estimator_for("gpt-4o").count_message(pictured) < 1000


def test_models_sharing_a_tokenizer_share_its_text_cache_but_count_images_their_own_way():
    mini, full = estimator_for("gpt-4o-mini"), estimator_for("gpt-4o")
    assert mini is not full and mini._texts is full._texts
    assert estimator_for("gpt-4o") is full
    pictured = Message.from_chat(ask(image_part(data_url("png", 1024, 1024), "high")))
    assert mini.count_message(pictured) - full.count_message(pictured) == (2833 + 5667 * 4) - 765
