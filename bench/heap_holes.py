"""What was freed into glibc's free chunks, and what keeps each hole from closing
(docs/history/benchmarks-log.md, "Session 54 (memtrace)").

``bench/heap_holes.c``, preloaded (``LD_PRELOAD``), keeps a shadow of glibc's heaps: per 16 bytes the site of the
block last allocated there (the Python frames running then, innermost first, when the thread held the GIL; the C
callers) and the turn it was freed in. Nothing it keeps is in the heaps, so their
layout is the process's own. At a mark ``Holes.walk`` walks every heap's chunks (the main heap from its start to the
break; each secondary heap, 64 MiB aligned, from its first chunk to its size) and, for the free chunks of 4-64 KiB
(``BENCH_MEM_FREE``'s class that grew), sums their bytes by the site last there ("what was freed into it") and by the
site of the block just after ("what keeps it from joining the free space after it").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).with_suffix(".c")
LIBRARY = Path(os.environ.get("BENCH_HOLES_SO", "/tmp/tda-heap-holes.so"))
HEAP_MAX = 64 * 2**20
"""A secondary heap's size and alignment (glibc, 64-bit)."""
HOLES = (4096, 65536)
"""The free chunks' sizes looked at (bytes, above the first, up to the second)."""
SITE_BYTES = 8 + 4 * 8 + 6 * 8 + 6 * 4 + 384
SITES = 2**20
"""The shim's table of sites (``heap_holes.c``'s SITES)."""
RECENT = 10
"""Turns within which a hole freed is read as a turn's working set, not a hole that stood."""


def preloaded() -> None:
    """Run this process again with the shim preloaded, built first (gcc, Python's headers), unless it is already."""
    if str(LIBRARY) in os.environ.get("LD_PRELOAD", ""):
        os.environ.pop("LD_PRELOAD")  # the fake upstream and other children run without it
        ctypes.CDLL(str(LIBRARY)).heap_holes_start()  # every block from now on, imports too
        return
    include = sysconfig.get_paths()["include"]
    command = ["gcc", "-O2", "-shared", "-fPIC", f"-I{include}", str(SOURCE), "-o", str(LIBRARY), "-lpthread"]
    subprocess.run(command, check=True)
    os.environ["LD_PRELOAD"] = str(LIBRARY)
    os.execv(sys.executable, [sys.executable, *sys.argv])


class Holes:
    def __init__(self) -> None:
        self.lib = ctypes.CDLL(str(LIBRARY))
        self.lib.heap_holes_sites.restype = ctypes.c_void_p
        self.lib.heap_holes_fits.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
        self.lib.heap_holes_tally.restype = ctypes.c_long
        self.lib.heap_holes_tally.argtypes = [ctypes.c_size_t] * 4 + [ctypes.c_int32] * 2 + [ctypes.c_void_p] * 4
        self.lib.heap_holes_tally.argtypes += [ctypes.c_size_t]
        self.libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        self.libc.sbrk.restype = ctypes.c_void_p
        self.libc.sbrk.argtypes = [ctypes.c_long]
        # made once, each over glibc's mapping threshold: the tallies put nothing in the heaps they read
        self.by_site = np.zeros(2 * SITES, np.int64)
        self.by_next = np.zeros(SITES, np.int64)
        self.by_age = np.zeros(8, np.int64)
        self.by_class = np.zeros(8, np.int64)

    def start(self) -> None:
        self.lib.heap_holes_start()

    def turn(self, turn: int) -> None:
        self.lib.heap_holes_turn(turn)

    def read(self, address: int) -> tuple[int, ...]:
        """4 machine words at ``address``, read as another process would (0s if it is not mapped)."""
        words = (ctypes.c_size_t * 4)()
        local = (ctypes.c_void_p * 2)(ctypes.addressof(words), ctypes.sizeof(words))
        remote = (ctypes.c_void_p * 2)(address, ctypes.sizeof(words))
        read = self.libc.process_vm_readv(os.getpid(), local, 1, remote, 1, 0)
        return tuple(words) if read == ctypes.sizeof(words) else (0, 0, 0, 0)

    def heaps(self) -> list[tuple[int, int]]:
        """Each heap's first chunk and end: the main one's from ``[heap]`` to the break, each secondary one's (a 64 MiB
        aligned mapping whose header names its arena and size) from after its headers (the arena's, in its first
        heap) to its size; the first chunk is the one whose walk ends at the end."""
        found = []
        for line in Path("/proc/self/maps").read_text().splitlines():
            fields = line.split()
            start, end = (int(edge, 16) for edge in fields[0].split("-"))
            if fields[-1] == "[heap]":
                candidates = [(start, self.libc.sbrk(0))]
            elif len(fields) == 5 and fields[1] == "rw-p":  # a heap may share a line with the mapping before it
                candidates = []
                for heap in range(-(-start // HEAP_MAX) * HEAP_MAX, end, HEAP_MAX):
                    ar_ptr, _prev, size, protected = self.read(heap)
                    if ar_ptr and 0 < size <= min(end - heap, protected, HEAP_MAX):
                        firsts = [heap + 2256, heap + 48, *range(heap + 2200, heap + 2400, 8)]
                        candidates += [(first, heap + size) for first in firsts]
            else:
                continue
            found += [next(((f, e) for f, e in candidates if self.lib.heap_holes_fits(f, e) == 0), None)]
        return [heap for heap in found if heap is not None]

    def site(self, site: int) -> str:
        """Where the blocks of ``site`` were allocated: the innermost Python frame and up to two of the service's
        (or a library's) beyond the standard library's, and the C callers of malloc."""
        if site == 0:
            return "(before tracing, or never held since)"
        base = self.lib.heap_holes_sites(ctypes.byref(ctypes.c_uint32())) + site * SITE_BYTES
        frames = ctypes.string_at(base + 8 + 32 + 48 + 24, 384).split(b"\0")[0].decode().split(" <- ")
        own = [frame for frame in frames[1:] if not frame.startswith(("/", "<"))]  # past the stdlib's frames
        text = " <- ".join([frames[0], *own][:3]) if frames[0] else "(no Python frame)"
        callers = (ctypes.c_void_p * 4).from_address(base + 8)
        return f"{text} [C: {' < '.join(self.symbol(c) for c in callers[1:3] if c)}]"

    def symbol(self, address: int) -> str:
        class DlInfo(ctypes.Structure):
            _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p)]
            _fields_ += [("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]

        info = DlInfo()
        if not self.libc.dladdr(ctypes.c_void_p(address), ctypes.byref(info)):
            return hex(address)
        library = Path((info.fname or b"?").decode()).name
        name = (info.sname or b"").decode() or hex(address - (info.fbase or 0))
        return f"{library}!{name}"

    def holes(self, turn: int, recent: int = RECENT) -> dict[str, dict[int, int]]:
        """The free chunks of HOLES' sizes at ``turn``: bytes by the site last there (freed more than ``recent`` turns
        ago: holes that stood; within them: a turn's own working set), by the site just after each, by the turns
        since freed; and every free chunk by size class."""
        for tally in (self.by_site, self.by_next, self.by_age, self.by_class):
            tally.fill(0)
        for first, end in self.heaps():
            tallies = (t.ctypes.data for t in (self.by_site, self.by_next, self.by_age, self.by_class))
            self.lib.heap_holes_tally(first, end, *HOLES, turn, recent, *tallies, SITES)

        def nonzero(tally: np.ndarray, offset: int = 0) -> dict[int, int]:
            sites = np.flatnonzero(tally)
            return dict(zip((sites - offset).tolist(), tally[sites].tolist(), strict=True))

        return {
            f"last there, freed over {recent} turns before": nonzero(self.by_site[:SITES]),
            f"last there, freed within {recent} turns": nonzero(self.by_site[SITES:], 0),
            "just after": nonzero(self.by_next),
            "turns since freed (0, 1, <=10, <=100, <=1000, more, unknown)": nonzero(self.by_age),
            "every free chunk by size (<=512 B, <=4 KiB, <=64 KiB, more, tops)": nonzero(self.by_class),
        }
