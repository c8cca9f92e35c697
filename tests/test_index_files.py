"""A session's indexes kept in files (``mapped.keep_in_files``, ``TDA_INDEX_FILES_DIR``; issue 32 item 5: "memory that
stays flat"; docs/operations.md, "Install"): their large buffers are the pages of unlinked files of their own, which
the kernel may drop and read again, not anonymous memory; they read, rank and free as the anonymous ones do."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.context_window import mapped
from components.context_window.base import Message
from components.context_window.recall.packed import PackedMessages
from components.context_window.relevance import BM25Index, GrowingArray, VectorIndex
from tests.agent_session import question


@pytest.fixture
def in_files(tmp_path: Path) -> Iterator[Path]:
    mapped.keep_in_files(tmp_path)
    try:
        yield tmp_path
    finally:
        mapped.keep_in_files(None)


def _mapping(array: np.ndarray) -> str | None:
    """The line of ``/proc/self/maps`` holding ``array``'s first item (None: none, or the heap's)."""
    address = array.__array_interface__["data"][0]
    with open("/proc/self/maps") as maps:
        for line in maps:
            start, end = (int(edge, 16) for edge in line.split()[0].split("-"))
            if start <= address < end:
                return line.strip()
    return None


def _index_mappings() -> int:
    with open("/proc/self/maps") as maps:
        return sum("tda-index-" in line for line in maps)


def _is_file_pages(array: np.ndarray) -> bool:
    line = _mapping(array)
    return line is not None and "tda-index-" in line and line.endswith("(deleted)")


def _is_anonymous_mapping(array: np.ndarray) -> bool:
    line = _mapping(array)
    return line is not None and len(line.split()) == 5  # no path: not the heap's ([heap]), not a file's


def _messages(turns: int) -> list[Message]:
    return [m for t in range(turns) for m in (Message("user", question(t), t), Message("assistant", f"Done {t}.", t))]


def test_an_index_kept_in_files_holds_its_large_buffers_as_pages_of_unlinked_files(in_files):
    """Vectors, postings, a growing column and packed texts: each buffer of ``MAPPED_FROM`` bytes or more is a file's
    pages (the file unlinked at once: nothing in the directory, no descriptor kept open), unmapped as its last view
    goes."""
    descriptors = len(os.listdir("/proc/self/fd"))
    vectors = VectorIndex(384)
    vectors.add(np.random.default_rng(1).standard_normal((600, 384)))
    lexical = BM25Index([f"order {i} of customer cust-{i} is open" for i in range(20_000)])
    lexical.scores("open order")
    lexical.add(["order 1 is late"])
    lexical.scores("open order")  # the postings sorted in: arrays made whole
    column = GrowingArray(np.int64, range(mapped.MAPPED_FROM))
    packed = PackedMessages()
    packed.extend(_messages(2_000))
    held = [vectors._blocks[-1], *lexical._main, column.view, packed._text.view]
    assert all(_is_file_pages(array) for array in held), [_mapping(array) for array in held]
    assert list(in_files.iterdir()) == [] and len(os.listdir("/proc/self/fd")) == descriptors
    assert packed.content(3_999) == "Done 1999." and vectors.scores(vectors.matrix[7]).argmax() == 7
    mappings = _index_mappings()
    del vectors, lexical, column, packed, held
    gc.collect()
    assert _index_mappings() < mappings


def test_a_run_s_scratch_and_small_buffers_are_never_files(in_files):
    """A buffer written again each run (the embedder's input) stays anonymous: a file's would be written back to disk
    each time; one under ``MAPPED_FROM`` stays in the heap."""
    scratch = mapped.empty(mapped.MAPPED_FROM, np.uint8, scratch=True)
    assert _is_anonymous_mapping(scratch)
    assert mapped.empty(mapped.MAPPED_FROM - 1, np.uint8).base is None


def test_anonymous_by_default_and_a_vector_block_is_mapped_apart():
    """Without ``keep_in_files`` the buffers are anonymous mappings, as before; a vector block of ``MAPPED_FROM``
    bytes or more too (it came from glibc's heap below 2 MiB, leaving a hole as the next, larger block was made)."""
    vectors = VectorIndex(384)
    vectors.add(np.ones((200, 384)))
    assert vectors._blocks[-1].nbytes >= mapped.MAPPED_FROM
    assert _is_anonymous_mapping(vectors._blocks[-1])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.integers(0, 2**32 - 1),
    st.lists(st.integers(1, 150), min_size=1, max_size=5),
    st.sampled_from(["open order", "customer late refund", "where is order 12"]),
)
def test_an_index_in_files_reads_and_ranks_as_one_in_anonymous_memory(in_files, seed, batches, query):
    """Whatever the batches: the same vectors' cosines bit for bit, the same BM25 scores, the same messages read back
    and the same column, kept in files or in anonymous memory."""
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((sum(batches), 384))
    words = np.array(["order", "open", "customer", "late", "refund", "where", "is", "12", "ship", "box"])
    texts = [" ".join(rng.choice(words, rng.integers(1, 12))) for _ in range(sum(batches) * 10)]
    messages = [Message("user" if i % 2 else "assistant", text, i // 2) for i, text in enumerate(texts)]

    def built() -> tuple[np.ndarray, np.ndarray, list[Message], np.ndarray]:
        vectors, lexical, packed, column, at = VectorIndex(), BM25Index(), PackedMessages(), GrowingArray(np.int64), 0
        for size in batches:
            vectors.add(rows[at : at + size])
            lexical.add(texts[at * 10 : (at + size) * 10])
            lexical.scores(query)
            packed.extend(messages[at * 10 : (at + size) * 10])
            column.extend(np.arange(at * 100, (at + size) * 100))
            at += size
        return vectors.scores(rows[0]), lexical.scores(query), list(packed), column.view.copy()

    filed = built()
    mapped.keep_in_files(None)
    anonymous = built()
    mapped.keep_in_files(in_files)
    assert filed[0].tobytes() == anonymous[0].tobytes() and filed[1].tobytes() == anonymous[1].tobytes()
    assert filed[2] == anonymous[2] == messages and np.array_equal(filed[3], anonymous[3])
