"""Vectors kept by text for many turns are rows of blocks mapped apart, not heap blocks amid a turn's temporaries
(``mapped.KeptRows``; docs/benchmarks.md, session 54: half the heap's free chunks of 4-64 KiB in the native memory
bench were just before such a vector)."""

from __future__ import annotations

import gc
import mmap
import weakref

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window import mapped
from components.context_window.mapped import KeptRows
from components.context_window.session_cache import VectorsByText
from tda.knowledge.embeddings import _RecentVectors


_MAPPING = mmap.mmap  # the type, kept: a test patches the module's name


def _mapping_of(array: np.ndarray) -> mmap.mmap | None:
    """The memory mapping ``array``'s items live in (through its views and buffers), or None (numpy's heap)."""
    base = array
    while base is not None:
        if isinstance(base, _MAPPING):
            return base
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    return None


def _minilm_vector(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(384).astype(np.float32)


def test_a_vector_kept_by_text_is_a_row_of_a_mapping_the_next_ones_share():
    """Turn recall's and message recall's vectors by text: what ``put`` keeps is in a mapping (main: each its own heap
    block), a few vectors to a mapping, and reads as the vector put."""
    cache: VectorsByText[str] = VectorsByText(100, 2**20, 2**20)
    made = [_minilm_vector(i) for i in range(5)]
    kept = [cache.put(f"text {i}", vector) for i, vector in enumerate(made)]
    assert all(_mapping_of(vector) is not None for vector in kept)
    assert len({id(_mapping_of(vector)) for vector in kept}) == 1  # 5 x 1,536 bytes: one block
    assert all(np.array_equal(cache.get(f"text {i}"), made[i]) for i in range(5))
    cache.take(["text 0"])
    assert np.array_equal(cache.get("text 0"), made[0])


def test_the_models_recent_vectors_are_kept_in_mapped_rows():
    """The embedder's own recent vectors (a turn's query, read again by knowledge retrieval and the cases)."""
    recent = _RecentVectors()
    made = {"a question": _minilm_vector(1), "an answer": _minilm_vector(2)}
    handed = recent.embed(list(made), lambda texts: [made[t].copy() for t in texts])
    again = recent.embed(["an answer"], lambda texts: [np.zeros(384, np.float32) for _ in texts])
    assert np.array_equal(handed[0], made["a question"]) and np.array_equal(again[0], made["an answer"])
    assert _mapping_of(again[0]) is not None


def test_a_block_is_unmapped_once_its_last_row_is_let_go():
    rows = KeptRows(block_bytes=4 * 1536)
    kept = [rows.kept(_minilm_vector(i)) for i in range(6)]  # 4 in the first block, 2 in the next
    first = weakref.ref(_mapping_of(kept[0]))
    assert _mapping_of(kept[3]) is first() and _mapping_of(kept[4]) is not first()
    del kept[:3]
    gc.collect()
    assert first() is not None  # its fourth row is held
    del kept[0]
    gc.collect()
    assert first() is None


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([np.float32, np.float16, np.float64, np.int64]), st.integers(1, 700)), max_size=30
    ),
    st.integers(1, 3 * mapped.ROWS_BLOCK),
)
def test_rows_read_as_the_arrays_kept_and_share_no_item(shapes, block_bytes):
    """Whatever the rows' types, lengths and the block's size: each row reads as the array kept, writing one changes
    no other, and a row holds as many bytes as its array."""
    rows = KeptRows(block_bytes=block_bytes)
    made = [np.arange(n).astype(dtype) + i for i, (dtype, n) in enumerate(shapes)]
    kept = [rows.kept(array) for array in made]
    for array, row in zip(made, kept, strict=True):
        assert row.dtype == array.dtype and row.nbytes == array.nbytes and np.array_equal(row, array)
    for row in kept:
        row[:] = 0
    assert all(not row.any() for row in kept)
    assert all(np.array_equal(array, np.arange(len(array)).astype(array.dtype) + i) for i, array in enumerate(made))


def test_what_is_not_a_vector_is_kept_as_it_is():
    rows = KeptRows()
    listed, matrix, empty = [1.0, 2.0], np.ones((2, 3)), np.zeros(0)
    assert rows.kept(listed) is listed and rows.kept(matrix) is matrix and rows.kept(empty) is empty


def test_rows_come_from_the_heap_when_no_mapping_can_be_made(monkeypatch):
    def refused(*args: object, **kwargs: object) -> mmap.mmap:
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(mapped.mmap, "mmap", refused)
    vector = _minilm_vector(3)
    row = KeptRows().kept(vector)
    assert _mapping_of(row) is None and np.array_equal(row, vector)
