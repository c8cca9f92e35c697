"""Arrays in a memory mapping of their own, not in the C heap: the buffers a long session grows a turn at a time.

A buffer that grows by doubling (``GrowingArray``: BM25's postings read out per word, the per-message columns) or is
made again whole (BM25's merged postings) is copied into a larger one and the old one freed. Under glibc's mapping
threshold (``tda.memory.MAPPED_APART``, 2 MiB) both come from the heap: the freed one leaves a hole the next, larger
copy does not fit, and every byte of the new one counts as in use, its unwritten half too. In the native memory bench
those were the heaps' in-use growth (~3.6 MiB per 1,000 turns) and their free space (~2.3: the holes)
(docs/history/benchmarks-log.md, "Session 46 (memflat8)" and "Session 47 (memflat9)"). From ``MAPPED_FROM`` bytes on, a
buffer is a private anonymous mapping of its own instead: its pages are resident only once written, and it is unmapped
as its last view goes, leaving no hole. Below it, a page's rounding would cost more than a hole.
"""

from __future__ import annotations

import mmap
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
