"""Structure-aware chunking: sections first, whole sentences, a token target, sentence overlap."""

from __future__ import annotations

import itertools
import re
import textwrap
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.token_estimator import TokenEstimator
from tda.knowledge.chunking import chunk_document, content_hash, document_sentences, split_sentences
from tda.knowledge.readers import Block, ExtractedDocument, read_document, unwrapped

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


# --- hard-wrapped text (man pages): sent unwrapped, chunked as read -----------------------------------


def man_page(options: int = 30) -> str:
    """A man page as `man -P cat | col -bx` renders it: 7-space indentation, 80-column wrapping, option names
    on their own line with the description 4 further in, a table with aligned columns."""
    wrapped = textwrap.TextWrapper(width=80, initial_indent=" " * 7, subsequent_indent=" " * 7)
    described = textwrap.TextWrapper(width=80, initial_indent=" " * 11, subsequent_indent=" " * 11)
    body = " ".join(f"The tool reads input number {i} and writes the result somewhere useful." for i in range(12))
    out = ["TOOL(1)                         User Commands                        TOOL(1)", "", "DESCRIPTION"]
    out += [wrapped.fill(body), "", "OPTIONS"]
    for i in range(options):
        out += [f"       -{i}, --option-{i}", described.fill(f"Option {i} changes the behaviour of step {i}. " * 3), ""]
    out += ["       SIZE    FACTOR", "       K       1024", "       M       1048576", ""]
    return "\n".join(out)


def test_man_pages_are_sent_unwrapped_with_the_same_chunks_as_read(tmp_path: Path) -> None:
    path = tmp_path / "tool.txt"
    path.write_text(man_page())
    doc = read_document(path)
    as_read = ExtractedDocument(doc.title, tuple(replace(b, wrapped=False) for b in doc.blocks))
    sent, raw = chunk_document(doc, COUNT, target_tokens=120), chunk_document(as_read, COUNT, target_tokens=120)

    # Chunked as read: the same chunks with the same words (retrieval sees no difference) ...
    assert [" ".join(c.text.split()) for c in sent] == [" ".join(c.text.split()) for c in raw]
    # ... sent with no wrapping or 7-space margins, at fewer tokens.
    text = "\n".join(c.text for c in sent)
    assert not re.search(r"^ {7}\S|^ {9,}", text, flags=re.M)  # indentation in steps of 4, at most two steps
    assert "the result somewhere useful. The tool reads" in text
    assert sum(c.token_count for c in sent) < 0.97 * sum(c.token_count for c in raw)
    # An option's name keeps its own line, its description indented one step below it; a table keeps its rows.
    assert "-3, --option-3\n    Option 3 changes the behaviour of step 3." in text
    assert "SIZE    FACTOR\nK       1024\nM       1048576" in text
    assert doc.title == "TOOL(1) User Commands TOOL(1)"  # no run of spaces in every source's label


def test_unwrapping_keeps_list_items_and_aligned_columns_on_their_own_lines() -> None:
    listed = "       o   a username\n       o   a groupname, with @group syntax.\n       and more prose here"
    assert unwrapped(listed) == "o   a username\no   a groupname, with @group syntax.\nand more prose here"
    assert unwrapped("       - one\n       - two\n       wrapped on") == "- one\n- two wrapped on"
    # A sentence that starts mid-line joins the lines below it; a paragraph's indented first line too.
    assert unwrapped("after the last one,\n       and so on.", continued=True) == "after the last one, and so on."
    indented = "  When we speak of free software,\nwe mean freedom."
    assert unwrapped(indented) == "When we speak of free software, we mean freedom."


def test_markdown_soft_line_breaks_are_sent_as_spaces_but_tables_code_and_lists_keep_their_lines(
    tmp_path: Path,
) -> None:
    path = tmp_path / "guide.md"
    path.write_text(
        "# Guide\n\npip supports basic HTTP-based authentication credentials. This is done by\n"
        "providing the username (and optionally password) in the URL.\n\n"
        "| option | meaning |\n|---|---|\n| -v | verbose |\n\n"
        "    indented code line one\n    indented code line two\n\n"
        "- first item\n- second item\n  wrapped onto a second line\n\nA last paragraph\nwrapped here.\n"
    )
    text = "\n".join(c.text for c in chunk_document(read_document(path), COUNT))
    assert "authentication credentials. This is done by providing the username" in text
    assert "| option | meaning |\n|---|---|\n| -v | verbose |" in text
    assert "indented code line one\n    indented code line two" in text  # as before: not joined
    assert "- first item\n- second item\n    wrapped onto a second line" in text
    assert "A last paragraph wrapped here." in text


def test_the_sentence_index_holds_every_sentence_once_in_the_chunk_that_holds_it_first() -> None:
    """Chunks overlap by their last sentences; the sentence index keeps each sentence once, in document order, with
    the first chunk holding it (its window's label and the chunk ranking's signal)."""
    chunks = chunk_document(doc((("A",), [" ".join(sentence(i, 3) for i in range(40))])), COUNT, target_tokens=120)
    assert len(chunks) > 3 and chunks[1].text.startswith(chunks[0].text.split(". ")[-1])  # they overlap
    found = document_sentences(chunks)
    assert [s.text for s in found] == [sentence(i, 3) for i in range(40)]
    assert [s.position for s in found] == list(range(40))
    for s in found:
        assert s.text in chunks[s.chunk_index].text
        assert all(s.text not in c.text for c in chunks[: s.chunk_index])
