"""Arrays in a memory mapping of their own, not in the C heap: the buffers a long session grows a turn at a time.

A buffer that grows by doubling (``GrowingArray``: BM25's postings read out per word, the per-message columns) or is
made again whole (BM25's merged postings) is copied into a larger one and the old one freed. Under glibc's mapping
threshold (``tda.memory.MAPPED_APART``, 2 MiB) both come from the heap: the freed one leaves a hole the next, larger
copy does not fit, and every byte of the new one counts as in use, its unwritten half too. In the native memory bench
those were the heaps' in-use growth (~3.6 MiB per 1,000 turns) and their free space (~2.3: the holes)
(docs/benchmarks.md, sessions 46-47). From ``MAPPED_FROM`` bytes on, a buffer is a private anonymous mapping of its
own instead: its pages are resident only once written, and it is unmapped as its last view goes, leaving no hole.
Below it, a page's rounding would cost more than a hole.
"""

from __future__ import annotations

import mmap
import threading
from typing import Any

import numpy as np

MAPPED_FROM = 64 * 1024
"""Bytes from which a buffer is a mapping of its own (16 pages: at most a page's rounding, 6%, is lost)."""


def empty(size: int, dtype: Any) -> np.ndarray:
    """An uninitialised, writable 1-d array of ``size`` items: mapped apart when it holds ``MAPPED_FROM`` bytes or
    more (its ``base`` the mapping, freed with its last view), else numpy's own."""
    dtype = np.dtype(dtype)
    nbytes = size * dtype.itemsize
    if nbytes < MAPPED_FROM:
        return np.empty(size, dtype)
    try:
        region = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except OSError:  # out of mappings (``vm.max_map_count``: ~65,000 a process by default): the heap, as before
        return np.empty(size, dtype)
    return np.frombuffer(region, dtype=dtype, count=size)


def copied(items: np.ndarray | Any, dtype: Any) -> np.ndarray:
    """``items`` (array-like, 1-d) as a new array of ``dtype`` made by ``empty``."""
    source = np.asarray(items, dtype=dtype)
    if source.nbytes < MAPPED_FROM:
        return np.array(source, dtype=dtype)  # a copy of its own, as numpy makes it
    out = empty(len(source), dtype)
    out[:] = source
    return out


ROWS_BLOCK = 16 * 1024
"""Bytes of a block of ``KeptRows`` (10 MiniLM vectors of 1,536 bytes: 4 pages)."""


class KeptRows:
    """1-d arrays a cache keeps for many turns (a vector by its text), each copied into a row of a block mapped apart
    that a few such rows share, not into a heap block of its own. A vector made amid a turn's temporaries (a model's
    buffers, scores) and kept after them leaves the space they took split into holes (the native memory bench's free
    chunks of 4-64 KiB: half were just before a kept vector, docs/benchmarks.md, session 54). A row is never reused:
    a block is unmapped when its last row's view goes, so rows kept together should be let go together (one
    ``KeptRows`` per cache, whose rows leave in about the order they came). Thread-safe."""

    def __init__(self, block_bytes: int = ROWS_BLOCK) -> None:
        self._block_bytes = block_bytes
        self._blocks: dict[tuple[np.dtype, int], tuple[np.ndarray, int]] = {}
        """Per row type and length, the block rows are taken from and how many are taken."""
        self._lock = threading.Lock()

    def kept(self, values: Any) -> Any:
        """``values`` (a 1-d array) copied into a row; anything else as it is."""
        if not isinstance(values, np.ndarray) or values.ndim != 1 or not values.size:
            return values
        shape = (values.dtype, len(values))
        with self._lock:
            block, taken = self._blocks.get(shape, (None, 0))
            if block is None or taken == len(block):
                block, taken = self._block(values), 0
            self._blocks[shape] = (block, taken + 1)
        row = block[taken]
        row[:] = values
        return row

    def _block(self, values: np.ndarray) -> np.ndarray:
        rows = max(1, self._block_bytes // values.nbytes)
        try:
            region = mmap.mmap(-1, rows * values.nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        except OSError:  # out of mappings: the heap, as before
            return np.empty((rows, len(values)), values.dtype)
        return np.frombuffer(region, dtype=values.dtype).reshape(rows, len(values))
