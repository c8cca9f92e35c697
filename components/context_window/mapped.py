"""Arrays in a memory mapping of their own, not in the C heap: the buffers a long session grows a turn at a time.

A buffer that grows by doubling (``GrowingArray``: BM25's postings read out per word, the per-message columns) or is
made again whole (BM25's merged postings) is copied into a larger one and the old one freed. Under glibc's mapping
threshold (``tda.memory.MAPPED_APART``, 2 MiB) both come from the heap: the freed one leaves a hole the next, larger
copy does not fit, and every byte of the new one counts as in use, its unwritten half too. In the native memory bench
those were the heaps' in-use growth (~3.6 MiB per 1,000 turns) and their free space (~2.3: the holes)
(docs/history/benchmarks-log.md, "Session 46 (memflat8)" and "Session 47 (memflat9)"). From ``MAPPED_FROM`` bytes on, a
buffer is a mapping of its own instead: its pages are resident only once written, and it is unmapped as its last view
goes, leaving no hole. Below it, a page's rounding would cost more than a hole.

A mapping is anonymous memory unless the process keeps its indexes in files (``keep_in_files``): then it is the pages
of a file of its own (unlinked at once, so nothing is left on disk), which the kernel writes back and may drop from
memory when it needs the room, reading them again when they are next read. RSS counts those pages while they are
resident (as file pages, ``RssFile``, not anonymous memory): what changes is that they are the kernel's to reclaim,
like the page cache, rather than memory only the process can give back (docs/operations.md, "Install").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

MAPPED_FROM = 64 * 1024
"""Bytes from which a buffer is a mapping of its own (16 pages: at most a page's rounding, 6%, is lost)."""

_files_in: str | None = None
"""The directory a lasting buffer's file is made in (``keep_in_files``); None: anonymous mappings."""


def keep_in_files(directory: Path | str | None) -> None:
    """From now on, map the lasting buffers of ``MAPPED_FROM`` bytes or more (an index's vectors, postings, columns
    and packed texts, not a run's scratch) as the pages of a file of their own in ``directory``, made and unlinked
    at once (None: anonymous memory, the default). The directory should be on a disk, not a ``tmpfs`` (whose pages
    are memory the kernel cannot drop without swap). The pages are mapped shared: a child forked without ``exec``
    would write into its parent's indexes (tda's workers and helpers are executed anew: none is)."""
    global _files_in
    if directory is not None:
        Path(directory).mkdir(parents=True, exist_ok=True)
    _files_in = None if directory is None else str(directory)


def empty(size: int, dtype: Any, *, scratch: bool = False) -> np.ndarray:
    """An uninitialised, writable 1-d array of ``size`` items: mapped apart when it holds ``MAPPED_FROM`` bytes or
    more (its ``base`` the mapping, freed with its last view), else numpy's own. ``scratch``: a buffer written again
    and again (a run's input), never a file's pages (each write would be written back to disk)."""
    dtype = np.dtype(dtype)
    nbytes = size * dtype.itemsize
    if nbytes < MAPPED_FROM:
        return np.empty(size, dtype)
    try:
        if scratch or _files_in is None:
            return np.frombuffer(_anonymous(nbytes), dtype=dtype, count=size)
        return np.asarray(_FilePages(nbytes, _files_in)).view(dtype)  # its base the pages, held by every view
    except OSError:  # out of mappings (``vm.max_map_count``: ~65,000 a process by default), or of disk: the heap
        return np.empty(size, dtype)


def zeros(size: int, dtype: Any) -> np.ndarray:
    """``empty``'s array filled with zeros (a new mapping's pages are zeros already: none is written)."""
    out = empty(size, dtype)
    if out.base is None:
        out.fill(0)
    return out


def copied(items: np.ndarray | Any, dtype: Any) -> np.ndarray:
    """``items`` (array-like, 1-d) as a new array of ``dtype`` made by ``empty``."""
    source = np.asarray(items, dtype=dtype)
    if source.nbytes < MAPPED_FROM:
        return np.array(source, dtype=dtype)  # a copy of its own, as numpy makes it
    out = empty(len(source), dtype)
    out[:] = source
    return out


def _anonymous(nbytes: int) -> mmap.mmap:
    return mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)


class _FilePages:
    """``nbytes`` of a new, unlinked file in ``directory``, mapped shared (its writes are the file's), exposed as a
    writable buffer; unmapped when the last array over it goes. Mapped by the C library, not ``mmap.mmap``, which
    keeps a duplicate of the file's descriptor per mapping (an index holds hundreds: the process's descriptors would
    run out); the descriptor is closed once the pages are mapped."""

    def __init__(self, nbytes: int, directory: str) -> None:
        descriptor, path = tempfile.mkstemp(prefix="tda-index-", dir=directory)
        try:
            os.unlink(path)
            os.ftruncate(descriptor, nbytes)  # a sparse file: a page is stored only once written
            address = _libc().mmap(None, nbytes, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, descriptor, 0)
        finally:
            os.close(descriptor)
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap of an index file failed")
        self.nbytes, self._address = nbytes, address
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (address, False), "version": 3}

    def __del__(self) -> None:
        _libc().munmap(self._address, self.nbytes)


_LIBC: Any = None


def _libc() -> Any:
    global _LIBC
    if _LIBC is None:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        _LIBC = libc
    return _LIBC
