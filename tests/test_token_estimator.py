"""Counting by the provider's accounting, checked against independent oracles (tests/oracle.py)."""

from __future__ import annotations

import gc
import json
import weakref
from typing import Any

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.context_window.base import Message, ToolSchema
from components.context_window.token_estimator import (
    CALIBRATION_RATIOS,
    LINES_FROM,
    SAFETY_MARGIN,
    SPACED_CHARS,
    TEXT_CACHE_BYTES,
    Calibration,
    TokenEstimator,
    calibrate,
    encoding_name_for,
    estimator_for,
    resolve_model_limit,
    tokenizer_for,
)
from tests.oracle import cookbook_message_tokens, cookbook_tokens, litellm_tokens, litellm_tools_tokens, text_tokens
from tests.support import make_tools

LOOK_ALIKES = ["<|endoftext|>", "<|im_start|>", "<|start|>assistant<|message|>", "<|fim_prefix|>", "\u200b", "🙂", "ß"]
texts = st.one_of(
    st.text(max_size=200),
    st.lists(st.sampled_from([*LOOK_ALIKES, "word", " ", "\n", "日本語", "{", '"']), max_size=40).map("".join),
)
ids = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=24)


@st.composite
def chat_messages(draw) -> dict:
    role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
    message: dict = {"role": role, "content": draw(texts)}
    if draw(st.booleans()):
        message["name"] = draw(ids)
    if role == "assistant" and draw(st.booleans()):
        message["tool_calls"] = [
            {"id": draw(ids), "type": "function", "function": {"name": draw(ids), "arguments": draw(texts)}}
            for _ in range(draw(st.integers(1, 3)))
        ]
    if role == "tool":
        message["tool_call_id"] = draw(ids)
    return message


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.lists(chat_messages(), max_size=8), st.sampled_from(["gpt-4o", "gpt-4", "gpt-3.5-turbo"]))
def test_every_message_shape_counts_as_the_cookbook_says(messages, model):
    est = estimator_for(model)
    ours = sum(est.count_message(Message.from_chat(m)) for m in messages) + 3
    assert ours == cookbook_tokens(messages, model)
    assert all(est.count_chat(m) == cookbook_message_tokens(m, model) for m in messages)


@SETTINGS
@given(st.lists(chat_messages(), min_size=1, max_size=6))
def test_never_below_litellm_token_counter(messages):
    est = estimator_for("gpt-4o")
    ours = sum(est.count_message(Message.from_chat(m)) for m in messages) + 3
    theirs = litellm_tokens(messages)
    assert ours >= theirs
    if not any("tool_calls" in m for m in messages):  # litellm counts only a call's arguments
        assert ours == theirs


def test_the_role_is_counted():
    """The issue's example: 300 one-word messages cost 300 * (3 + role + word) + 3, not 952."""
    messages = [{"role": "user" if i % 2 else "assistant", "content": "hello"} for i in range(300)]
    est = estimator_for("gpt-4o")
    ours = sum(est.count_message(Message.from_chat(m)) for m in messages) + 3
    assert ours == cookbook_tokens(messages) == litellm_tokens(messages) == 300 * 5 + 3


schema_types = st.deferred(
    lambda: st.one_of(
        st.fixed_dictionaries({"type": st.sampled_from(["string", "number", "integer", "boolean", "null"])}),
        st.fixed_dictionaries({"type": st.just("string"), "enum": st.lists(ids, min_size=1, max_size=5)}),
        st.fixed_dictionaries(
            {"type": st.just("integer"), "enum": st.lists(st.integers(0, 10**6), min_size=1, max_size=30)}
        ),
        st.fixed_dictionaries({"type": st.just("array"), "items": schema_types}),
        st.fixed_dictionaries(
            {"type": st.just("object"), "properties": st.dictionaries(ids, schema_types, max_size=3)}
        ),
    ).flatmap(lambda s: st.one_of(st.just(s), texts.map(lambda d: {**s, "description": d})))
)


@st.composite
def tools(draw) -> ToolSchema:
    properties = draw(st.dictionaries(ids, schema_types, max_size=5))
    required = draw(st.lists(st.sampled_from(sorted(properties)), unique=True)) if properties else []
    params = {"type": "object", "properties": properties} | ({"required": required} if required else {})
    return ToolSchema(draw(ids), draw(st.one_of(st.just(""), texts)), params)


@SETTINGS
@given(st.lists(tools(), min_size=1, max_size=6, unique_by=lambda t: t.name))
def test_tools_are_counted_from_the_json_sent_and_never_below_litellm(schemas):
    est = estimator_for("gpt-4o")
    sent = [t.to_openai() for t in schemas]
    charged = est.count_tools(schemas)
    as_sent = sum(text_tokens(json.dumps(t, ensure_ascii=False, separators=(",", ":"))) for t in sent)
    assert charged >= as_sent
    assert charged >= litellm_tools_tokens(sent)
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "go"}]
    assert cookbook_tokens(messages) - 3 + charged + 3 >= litellm_tokens(messages, sent)


def test_tool_json_is_what_the_sdk_sends():
    tool = ToolSchema("f", "süß", {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "number"}}})
    assert (
        tool.json == '{"type":"function","function":{"name":"f","description":"süß","parameters":'
        '{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"number"}}}}}'
    )


def test_encoding_follows_the_model():
    assert encoding_name_for("gpt-4o-mini") == "o200k_base"
    assert encoding_name_for("openai/o3-mini") == "o200k_base"
    assert encoding_name_for("gpt-4") == "cl100k_base"
    for model in ("gpt-4o", "gpt-4", "gpt-4o-mini", "o3-mini"):
        assert encoding_name_for(model) == tiktoken.encoding_name_for_model(model)


# (model id as a client sends it, the base model tiktoken's own table is asked about)
OPENAI_IDS = [
    ("ft:gpt-4o-mini-2024-07-18:acme::9xYz", "gpt-4o-mini-2024-07-18"),
    ("ft:gpt-4.1-mini-2025-04-14:acme:support:AbC1", "gpt-4.1-mini-2025-04-14"),
    ("ft:gpt-3.5-turbo-0125:acme::x1", "gpt-3.5-turbo-0125"),
    ("openai/gpt-4o-2024-08-06", "gpt-4o-2024-08-06"),
    ("azure/gpt-4o-mini", "gpt-4o-mini"),
    ("azure/ft:gpt-4o-2024-08-06:acme::q", "gpt-4o-2024-08-06"),
    ("openrouter/openai/gpt-4.1", "gpt-4.1"),
    ("gpt-4-0613", "gpt-4-0613"),
    ("o3-mini-2025-01-31", "o3-mini-2025-01-31"),
    ("gpt-5-2025-08-07", "gpt-5-2025-08-07"),
]


@pytest.mark.parametrize("model, base", OPENAI_IDS)
def test_fine_tuned_prefixed_and_dated_ids_use_the_base_models_encoding_exactly(model, base):
    # Oracle: tiktoken's own model table on the base model (a fine-tune keeps its base model's tokenizer).
    expected = tiktoken.encoding_name_for_model(base)
    assert encoding_name_for(model) == expected
    est = estimator_for(model)
    assert est.exact and est.method == f"tiktoken:{expected}"
    text = "Fine-tuned models count like their base: naïve café, 日本語, <|endoftext|>. " * 30
    assert est.count(text) == len(tiktoken.get_encoding(expected).encode(text, disallowed_special=()))


def test_the_issues_fine_tuned_example_is_counted_with_o200k():
    model = "ft:gpt-4o-mini-2024-07-18:org::abc123"
    messages = [{"role": "user", "content": "Résumé: " + "données, コード, код. " * 60}]
    est = estimator_for(model)
    counted = sum(est.count_chat(m) for m in messages) + 3
    assert counted == cookbook_tokens(messages, "gpt-4o-mini")  # the oracle, on the base model's encoding
    assert counted != cookbook_tokens(messages, "gpt-4")  # what was counted before (cl100k), reported as exact


CLAUDES = ["claude-sonnet-4-5", "claude-3-5-sonnet-20241022", "claude-opus-4-1", "anthropic/claude-sonnet-4-5-20250929"]
SCRIPTS = {
    "thai": "สวัสดีครับ วันนี้อากาศดีมาก เราไปเที่ยวทะเลกันไหม ",
    "english": "The quick brown fox jumps over the lazy dog. ",
    "code": "def f(x):\n    return {k: v for k, v in x.items() if v}\n",
    "emoji": "🙂🚀 ok ",
    "hindi": "नमस्ते, आप कैसे हैं? ",
}


@pytest.mark.parametrize("model", CLAUDES)
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_claude_estimates_are_never_below_litellms_own_count(model, script):
    """litellm counts (some) Claude ids with its bundled Anthropic tokenizer; the estimate stays above it."""
    text = SCRIPTS[script] * 30  # within litellm's 1,024-character chunking on every script
    messages = [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": text[:1000]},
        {"role": "assistant", "content": text[:900]},
    ]
    est = estimator_for(model)
    counted = sum(est.count_chat(m) for m in messages) + 3
    assert counted >= litellm_tokens(messages, model=model)
    assert counted >= litellm_tokens(messages, model="claude-sonnet-4-5")  # the Anthropic tokenizer's count


def test_the_issues_thai_conversation_is_not_undercounted_for_claude():
    import litellm

    turn = SCRIPTS["thai"] * 18
    messages = [{"role": ("user", "assistant")[i % 2], "content": turn} for i in range(8)]
    est = estimator_for("claude-sonnet-4-5")
    counted = sum(est.count_chat(m) for m in messages) + 3
    assert counted >= litellm.token_counter(model="claude-sonnet-4-5", messages=messages)
    assert "anthropic_tokenizer" in est.method and not est.exact


def test_models_without_an_offline_tokenizer_are_estimated_with_a_margin_and_say_so():
    est = estimator_for("claude-3-5-sonnet")
    assert not est.exact and "estimate" in est.method and "cl100k_base" in est.method
    text = "The quick brown fox jumps over the lazy dog. " * 20
    exact = len(tiktoken.get_encoding("cl100k_base").encode(text))
    assert est.count(text) >= exact * (1 + SAFETY_MARGIN)
    assert tokenizer_for("gpt-4o").exact and tokenizer_for("azure/gpt-4o").exact


def test_litellm_offline_tokenizer_is_used_where_one_ships():
    import litellm

    est = estimator_for("claude-2.1")
    assert est.method.startswith("huggingface:") and est.exact
    text = "Claude's tokenizer is not cl100k. " * 10
    assert est.count(text) == litellm.token_counter(model="claude-2.1", text=text)


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


def test_the_texts_remembered_are_bounded_by_their_size_not_only_their_number():
    """Long texts (tool results, a turn's knowledge block) counted one after another: the cache keeps the newest that
    fit ``TEXT_CACHE_BYTES``, far fewer than ``CACHE_SIZE`` entries, and counts the same afterwards."""
    est = TokenEstimator("cl100k_base")
    texts = [f"row {i}: " + "word " * 20_000 for i in range(2 * TEXT_CACHE_BYTES // 100_000)]
    for text in texts:
        est.count(text)
    assert est._texts.held_bytes <= TEXT_CACHE_BYTES and len(est._texts) < len(texts)
    assert texts[-1] in est._texts and texts[0] not in est._texts
    assert est.count(texts[0]) == len(tiktoken.get_encoding("cl100k_base").encode(texts[0]))


def test_counting_a_message_does_not_keep_it_alive():
    """Short-lived messages (summaries, recall blocks) are counted once each: the per-message cache must not hold
    them, or a long session's memory grows with every turn until the cache fills."""
    est = TokenEstimator("cl100k_base")
    message = Message("assistant", "A summary of turns 1-40 that lives for one window.")
    alive = weakref.ref(message)
    n = est.count_message(message)
    del message
    gc.collect()
    assert alive() is None
    newcomer = Message("user", "x " * 50)  # may reuse the freed id: counted afresh, never given the old figure
    assert est.count_message(newcomer) == cookbook_message_tokens(newcomer.to_chat(), "gpt-4") != n


@given(texts)
def test_fallback_when_no_encoding_loads_is_an_upper_bound_and_flagged(text):
    est = TokenEstimator("no_such_encoding")
    assert not est.exact and "upper bound" in est.method
    assert est.count(text) >= text_tokens(text, "gpt-4") and est.count(text) >= text_tokens(text, "gpt-4o")


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


# --- calibration never goes below litellm ---------------------------------------------------------------------

CALIBRATABLE = [
    "gemini/gemini-2.0-flash",
    "claude-3-5-sonnet-20240620",
    "claude-sonnet-4-20250514",
    "mistral/mistral-large-latest",
]
"""Models tda estimates; a Llama's would have litellm fetch its tokenizer from the network."""


def _calibrated(model: str, ratio: float, samples: int) -> TokenEstimator:
    calibrate(model, Calibration(ratio, samples))
    return estimator_for(model)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(CALIBRATABLE),
    st.floats(CALIBRATION_RATIOS[0], 1.2) | st.floats(1.2, CALIBRATION_RATIOS[1]),  # below 1 at least half the time
    st.integers(1, 8),
    st.lists(texts, min_size=1, max_size=4),
    st.integers(0, 8),
)
def test_a_calibrated_count_is_never_below_litellms(model, ratio, samples, contents, n_tools):
    """Whatever ratio the provider's counts taught (0.5x cl100k to 4x), messages and tools count at least what
    litellm.token_counter counts for the same request (the oracle)."""
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": c} for i, c in enumerate(contents)]
    tools = make_tools(n_tools)
    try:
        ours = _calibrated(model, ratio, samples).count_request([Message.from_chat(m) for m in messages], tools)
    finally:
        calibrate(model, None)
    assert ours >= litellm_tokens(messages, [t.to_openai() for t in tools], model)


@pytest.mark.parametrize("model", CALIBRATABLE)
def test_eight_tools_after_a_provider_counting_six_tenths_of_cl100k(model):
    """Round 3's finding: after provider counts at 0.6x cl100k, eight tools were charged 334 against litellm's 394."""
    tools = make_tools(8)
    try:
        ours = _calibrated(model, 0.6, 10).count_tools(tools)
    finally:
        calibrate(model, None)
    assert ours >= litellm_tools_tokens([t.to_openai() for t in tools], model)


@SETTINGS
@given(st.lists(chat_messages(), max_size=8), st.sampled_from(["gpt-4o", "gpt-4", "claude-3-5-sonnet"]))
def test_counted_messages_carry_what_count_message_says(messages, model):
    """A long conversation a client sends is counted once (``counted``, in a worker thread): each message then
    carries its count as a stored count, the same figure ``count_message`` gives, and is otherwise the same message.
    An estimate (no exact tiktoken count) stores nothing."""
    est = estimator_for(model)
    sent = [Message.from_chat(m) for m in messages]
    counted = est.counted(sent)
    assert counted == sent  # equal: a count is not part of what a message is
    assert [est.count_message(m) for m in counted] == [est.count_message(m) for m in sent]
    if est.stored_exact:
        assert all(m.tokens == {est.encoding_name: est.count_message(m)} for m in counted)
    else:
        assert all(c is m for c, m in zip(counted, sent, strict=True))


def test_counted_keeps_messages_already_counted_and_those_with_images():
    est = estimator_for("gpt-4o")
    stored = Message("user", "hello", tokens={est.encoding_name: 99, "cl100k_base": 98})
    image = Message("user", "look", parts=({"type": "image_url", "image_url": {"url": "https://x/y.png"}},))
    other = Message("user", "hi", tokens={"cl100k_base": 5})
    first, second, third = est.counted([stored, image, other])
    assert first is stored and second is image  # a stored count stands; an image is counted per model when used
    assert third.tokens == {"cl100k_base": 5, est.encoding_name: est.count_message(Message("user", "hi"))}


@pytest.mark.parametrize("pad", range(0, 40, 3))
def test_tools_over_litellms_chunks_are_never_below_its_count(pad):
    """litellm counts the definitions as one text in chunks of 1,024 characters, a token more where a boundary
    splits a word: a tool whose rendering (integer enums are quoted there) crosses one is never charged below it.
    The pad moves the boundary through the description's words (hypothesis found it on a larger schema)."""
    described = {"type": "integer", "enum": list(range(1000, 1300, 3)), "description": "x" * pad + " international" * 3}
    tool = ToolSchema("lookup", "", {"type": "object", "properties": {"n": described}})
    assert estimator_for("gpt-4o").count_tools([tool]) >= litellm_tools_tokens([tool.to_openai()])


async def test_warm_counts_long_new_texts_once_in_a_thread_and_count_then_answers_from_the_cache() -> None:
    """``warm`` gives the counts ``count`` would (scale and floor included), and ``count`` does not tokenise them
    again; texts short together are left to ``count``."""
    from components.context_window.token_estimator import OFFLOAD_CHARS, TokenEstimator

    long = [f"passage {n}: " + "the write-ahead log checkpoints when it grows past its limit. " * 120 for n in range(6)]
    assert sum(map(len, long)) >= OFFLOAD_CHARS
    reference, warmed = TokenEstimator("o200k_base"), TokenEstimator("o200k_base")
    before = warmed.misses  # its own header and footer
    await warmed.warm([*long, long[0], ""])
    assert warmed.misses == before + len(long)
    assert [warmed.count(t) for t in long] == [reference.count(t) for t in long]
    assert warmed.misses == before + len(long)  # answered from the cache
    await warmed.warm(["a short new text"])
    assert warmed.misses == before + len(long)
    assert warmed.count("a short new text") == reference.count("a short new text")
    assert warmed.misses == before + len(long) + 1


def test_a_text_counted_for_a_stored_count_is_not_tokenised_again() -> None:
    """The counts a new message carries (``counted``) and stores (``counts_to_store``) go through the text cache: a
    session's new tool result is tokenised once, not again when it is recorded, nor when a stateless call sends it
    again; the figures are the cookbook's (oracle), in a worker thread as on the loop."""
    from concurrent.futures import ThreadPoolExecutor

    from components.context_window.token_estimator import counts_to_store, estimator

    est = estimator("o200k_base")
    encoded: list[str] = []
    real = est._counter
    assert real is not None
    result = "stored-count test | status | total\n" + "".join(f"ORD-{n} | open | {n * 7}.50\n" for n in range(200))
    message = Message("tool", result, tool_call_id="call_1")
    est._counter = lambda text: encoded.append(text) or real(text)
    try:
        with ThreadPoolExecutor(1) as worker:  # how ``with_digests`` counts a long conversation
            (counted,) = worker.submit(est.counted, [message]).result()
        stored = counts_to_store(message)["o200k_base"]
        again = est.count(result)
    finally:
        est._counter = real
    oracle = cookbook_message_tokens({"role": "tool", "content": result, "tool_call_id": "call_1"}, "gpt-4o")
    assert counted.tokens == {"o200k_base": oracle} and stored == oracle
    assert again == text_tokens(result, "gpt-4o")
    in_result = [text for text in encoded if text in result]  # its lines (the role and call id are counted too)
    assert len(in_result) == len(set(in_result)) and sum(map(len, in_result)) == len(result)  # each line once


LINE_PARTS = st.sampled_from(
    [
        *"ab Z9/.,:;'s-_[]()`#*|<>",
        *("\n", "\n\n", " \n", ".\n", "\r\n", "\t", "  ", "\u00a0", "\u2028", "\x85", "\x1c"),  # breaks, spaces
        *("'ll", "'S", "é", "\u0301", "日本", "🙂", "word", "Word", "123", "4567"),
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(LINE_PARTS, max_size=30).map("".join), min_size=1, max_size=30).map("\n".join))
def test_a_long_text_counted_by_its_lines_is_counted_as_tiktoken_counts_it_whole(drawn: str) -> None:
    """A long text's count is its lines' cached counts added up (``_lines``): the same figure tiktoken gives the
    whole text (the oracle), whatever ends one line and starts the next (line breaks after punctuation, a "/" after
    one, whitespace, marks, contractions), in both encodings that count by lines."""
    text = drawn + "\n" + "A line of filler.\n" * (LINES_FROM // 18 + 1)
    for name in ("cl100k_base", "o200k_base"):
        assert TokenEstimator(name).count(text) == len(tiktoken.get_encoding(name).encode_ordinary(text))


SPACED_PARTS = st.sampled_from(
    [
        *"ab Z9/.,:;'s-_[]{}()\"#*|<>",
        *(" ", "  ", " \n", ".\n", "\t", "\u00a0", "\u3000", "\x1c", "\x85"),  # spaces, other whitespace, breaks
        *("'ll", "'S", "é", "\u0301", "日本", "🙂", "word", "Word", "123", "4567", '": "', '", "', "}, {"),
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(SPACED_PARTS, min_size=1, max_size=400).map("".join), st.integers(0, 10**6))
def test_a_long_line_counted_in_pieces_is_counted_as_tiktoken_counts_it_whole(drawn: str, at: int) -> None:
    """A long line's count is its pieces' cached counts added up (``_spaced``: cut before a space that follows a
    printable character): the figure tiktoken gives the whole line (the oracle), and so for a prefix of it counted
    after it (what ``cut_to_tokens`` probes), whatever is around each cut (spaces after spaces, other whitespace,
    marks, contractions, a line break), in both encodings that count by pieces."""
    text = (drawn + " ") * (2 * SPACED_CHARS // (len(drawn) + 1) + 1) + drawn
    prefix = text[: at % len(text)]
    for name in ("cl100k_base", "o200k_base"):
        est, encoding = TokenEstimator(name), tiktoken.get_encoding(name)
        assert est.count(text) == len(encoding.encode_ordinary(text))
        assert est.count(prefix) == len(encoding.encode_ordinary(prefix))


def test_a_prefix_of_a_long_line_counted_before_is_tokenised_from_its_last_piece_only() -> None:
    """A tool result of one long line (a JSON table) is cut to a share of tokens by counting its prefixes, then the
    cut with its note: each was a new text tokenised whole (~2,000 characters, ~1 ms a cut at 100 gateway turns). Now
    a prefix's pieces before its last are the line's, counted when the line was: only the last is tokenised, and
    every count is tiktoken's (oracle)."""
    line = json.dumps([{"order": f"ORD-{n:06d}", "status": "open", "amount": n * 7.5} for n in range(60)])
    est = TokenEstimator("o200k_base")
    est.count(line)
    encoded: list[str] = []
    real = est._counter
    assert real is not None
    est._counter = lambda text: encoded.append(text) or real(text)
    for prefix in (line[:2_000].rstrip(), line[:1_500].rstrip() + "\n[... the rest is not shown]"):
        encoded.clear()
        assert est.count(prefix) == text_tokens(prefix, "gpt-4o")
        assert sum(map(len, encoded)) <= 2 * SPACED_CHARS
    priced = json.dumps([{"order": f"ORD-{n:06d}", "status": "shipped"} for n in range(60)]) + "\n"
    est.count_line(priced)  # a summary's transcript priced line by line (``newest_within``), then counted whole
    encoded.clear()
    assert est.count(priced + "Summarise this.") == text_tokens(priced + "Summarise this.", "gpt-4o")
    assert encoded == ["Summarise this."]


def test_a_long_text_made_of_lines_counted_before_is_not_tokenised_again() -> None:
    """knowledge_context's excerpts are a new text each turn, made of lines it sent before (chunks, sources): their
    count adds up the lines' cached counts, tokenising nothing (it tokenised the whole ~18 KB text a demo turn, ~2 ms),
    and is the count tiktoken gives the whole (oracle). A scaled estimate counts the whole text, as before."""
    lines = [f"Paragraph {n}: the write-ahead log checkpoints once it grows past its limit.\n" for n in range(40)]
    est = TokenEstimator("o200k_base")
    est.count("".join(lines))
    encoded: list[str] = []
    real = est._counter
    assert real is not None
    est._counter = lambda text: encoded.append(text) or real(text)
    reordered = "[SOURCE 1] Manual\n" + "".join(reversed(lines))
    assert est.count(reordered) == text_tokens(reordered, "gpt-4o")
    assert encoded == ["[SOURCE 1] Manual\n"]
    claude = estimator_for("claude-3-5-sonnet-20241022")
    assert claude.count(reordered) >= text_tokens(reordered, "gpt-4") * (1 + SAFETY_MARGIN)


def test_a_text_message_is_counted_without_looking_for_media_in_parts_it_has_not(monkeypatch):
    """``count_message`` runs for every window message, several times a call (each contribution measured, the stable
    prefix, the record): a text message (no parts) has no media to look for, so no call is made to look (issue 32
    item 5: ~370 such calls a gateway call at 100 turns). A message with parts is still looked at, and counted so."""
    from components.context_window import token_estimator as te

    looked = {"n": 0}
    has_media = te.has_media

    def counted(parts: Any) -> bool:
        looked["n"] += 1
        return has_media(parts)

    monkeypatch.setattr(te, "has_media", counted)
    tokens = te.estimator_for("gpt-4o")
    text = [Message("user", f"question {i}") for i in range(50)]
    assert [tokens.count_message(m) for m in text] == [tokens.count_chat(m.to_chat()) for m in text]
    assert looked["n"] == 0
    parts = Message.from_chat({"role": "user", "content": [{"type": "text", "text": "hello there"}]})
    assert tokens.count_message(parts) > 0
    assert looked["n"] == 1


def test_a_conversation_met_cold_is_counted_with_one_write_to_each_cache() -> None:
    """A long conversation sent for the first time (a client resending its chat without a session: 400 messages,
    ~3,300 lines) is counted in one pass: each line tokenised once and the text and line caches written once each,
    not a call and a cache write per line (~40% over tiktoken's own time); every message carries
    ``count_message``'s figure, and a second conversation sharing its lines tokenises only its new ones."""
    from collections import Counter

    from tests.agent_session import SYSTEM, question, turn_messages

    def conversation(first: int) -> list[Message]:
        chat = [SYSTEM, *(m for t in range(first, first + 12) for m in turn_messages(t))]
        return [Message.from_chat(m) for m in [*chat, {"role": "user", "content": question(first + 12)}]]

    est, reference = TokenEstimator("o200k_base"), TokenEstimator("o200k_base")
    assert est._line_counts is not None
    writes: Counter[str] = Counter()
    for name, cache in (("texts", est._texts), ("lines", est._line_counts)):
        for method in ("put", "put_all"):
            if (real := getattr(cache, method, None)) is None:
                continue
            setattr(cache, method, lambda *a, _real=real, _key=f"{name}.{method}": writes.update([_key]) or _real(*a))
    encoded: list[str] = []
    counter = est._counter
    assert counter is not None
    est._counter = lambda text: encoded.append(text) or counter(text)
    messages = conversation(100)
    counted = est.counted(messages)
    assert [m.tokens for m in counted] == [{"o200k_base": reference.count_message(m)} for m in messages]
    assert writes == {"texts.put_all": 1, "lines.put_all": 1}
    assert len(encoded) == len(set(encoded))  # each text or line tokenised once
    encoded.clear()
    again = est.counted([*messages[:-1], Message("user", "and the next one?")])
    assert [m.tokens for m in again[:-1]] == [m.tokens for m in counted[:-1]]
    assert encoded == ["and the next one?"]  # the rest answered from the caches
