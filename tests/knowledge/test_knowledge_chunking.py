"""Structure-aware chunking: sections first, whole sentences, a token target, sentence overlap."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.token_estimator import TokenEstimator
from tda.knowledge.chunking import chunk_document, content_hash, split_sentences
from tda.knowledge.readers import Block, ExtractedDocument

COUNT = TokenEstimator("cl100k_base").count


def sentence(i: int, words: int = 12) -> str:
    return f"Sentence {i} " + " ".join(f"word{i}x{j}" for j in range(words)) + "."


def doc(*sections: tuple[tuple[str, ...], list[str]], pages: bool = False) -> ExtractedDocument:
    blocks = []
    for n, (headings, paragraphs) in enumerate(sections):
        blocks += [Block(p, headings, page=(n + 1) if pages else None) for p in paragraphs]
    return ExtractedDocument("Doc", tuple(blocks))


def test_split_sentences_keeps_abbreviations_and_decimals_together() -> None:
    text = 'Use e.g. the CLI for version 3.7.0 today. Then restart! Does it work? "Yes." Done'
    assert split_sentences(text) == [
        "Use e.g. the CLI for version 3.7.0 today.",
        "Then restart!",
        "Does it work?",
        '"Yes."',
        "Done",
    ]


def test_chunks_never_cross_a_section_and_carry_its_path() -> None:
    d = doc((("A",), [sentence(1), sentence(2)]), (("A", "B"), [sentence(3)]), (("C",), [sentence(4)]))
    chunks = chunk_document(d, COUNT, target_tokens=300)
    assert [(c.section, c.chunk_index) for c in chunks] == [("A", 0), ("A › B", 1), ("C", 2)]
    assert "Sentence 3" not in chunks[0].text


def test_long_sections_split_at_sentences_within_target_with_overlap() -> None:
    sentences = [sentence(i, words=4) for i in range(80)]
    chunks = chunk_document(doc((("S",), [" ".join(sentences)])), COUNT, target_tokens=150)
    assert len(chunks) > 3
    for c in chunks:
        assert c.token_count <= 150
        assert c.token_count == COUNT(c.text)
        assert c.text.endswith(".") and c.text.startswith("Sentence ")  # whole sentences only
    for before, after in itertools.pairwise(chunks):
        last = split_sentences(before.text)[-1]
        assert after.text.startswith(last)  # the last sentence repeats: an answer on the boundary stays whole


def test_a_sentence_longer_than_the_target_is_the_only_thing_cut() -> None:
    giant = " ".join(f"w{i}" for i in range(400)) + "."
    chunks = chunk_document(doc((("S",), [sentence(1), giant, sentence(2)])), COUNT, target_tokens=100)
    assert all(c.token_count <= 100 for c in chunks)
    assert " ".join(c.text for c in chunks).count("w399.") == 1


def test_code_blocks_split_between_lines() -> None:
    code = "\n".join(f"print({i})  # line {i}" for i in range(60))
    d = ExtractedDocument("Doc", (Block(code, ("Code",), preformatted=True),))
    chunks = chunk_document(d, COUNT, target_tokens=80)
    assert len(chunks) > 1
    lines = [line for c in chunks for line in c.text.splitlines()]
    assert set(lines) == set(code.splitlines())  # every line whole, none cut


def test_pages_are_tracked_per_chunk() -> None:
    d = doc((("S",), [sentence(1)]), (("S",), [sentence(2)]), (("S",), [sentence(3)]), pages=True)
    [chunk] = chunk_document(d, COUNT, target_tokens=300)
    assert (chunk.page_start, chunk.page_end) == (1, 3)


def test_content_hash_ignores_whitespace_only() -> None:
    assert content_hash("a  b\nc") == content_hash("a b c")
    assert content_hash("a b c") != content_hash("a b d")


@settings(max_examples=40, deadline=None)
@given(
    paragraphs=st.lists(
        st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=12), min_size=1, max_size=8
    ),
    target=st.integers(min_value=40, max_value=400),
)
def test_every_sentence_survives_whole_and_chunks_respect_the_target(paragraphs: list[list[int]], target: int) -> None:
    counter = iter(range(10_000))
    texts = [" ".join(sentence(next(counter), words) for words in p) for p in paragraphs]
    chunks = chunk_document(doc((("S",), texts)), COUNT, target_tokens=target)
    everything = " ".join(c.text for c in chunks)
    for text in texts:
        for s in split_sentences(text):
            if COUNT(s) <= target:
                assert any(s in c.text for c in chunks), s
    assert all(c.token_count <= target for c in chunks)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert everything.count("Sentence 0 ") >= 1
