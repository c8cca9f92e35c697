"""Resident memory the service can give back or never take: freed C heap pages, tiktoken's spare copies of its ranks,
the parsed copy of the Anthropic tokenizer litellm keeps beside its text, and the gRPC exporter Chroma imports."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib
import sys
import time
import types
from collections.abc import Callable
from typing import Any


def return_freed_memory() -> None:
    """Give the C heap's free pages back to the system: glibc keeps freed buffers (measured: `tda serve`-like
    process 265-304 MB after ingesting, 194 MB after the trim). A no-op where the C library is not glibc."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


TRIM_EVERY_S = 10.0
"""How often at most ``FreedMemory`` gives freed pages back: a trim holds the event loop 0.1-0.5 ms in the native
memory bench (1,000-3,000 turns), 6.4 ms after a 10,000-message session was imported (recall_bench.py --speed)."""


class FreedMemory:
    """Freed C heap pages given back once the background work of a turn is done, at most every ``every_s``: glibc
    keeps a heap's free pages resident, and what a turn frees between the blocks it keeps accumulates (the native
    memory bench after 2,500 turns: 13 MB free in the heaps, 1.1-1.6 MB of RSS given back by one trim)."""

    def __init__(
        self,
        every_s: float = TRIM_EVERY_S,
        trim: Callable[[], None] = return_freed_memory,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.every_s, self._trim, self._clock = every_s, trim, clock
        self._next = 0.0

    def idle(self) -> None:
        """Nothing is left to do in the background: trim, unless a trim was done less than ``every_s`` ago."""
        now = self._clock()
        if now >= self._next:
            self._next = now + self.every_s
            self._trim()


@functools.cache
def _malloc_trim() -> Any:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def drop_tiktoken_rank_copies() -> int:
    """Empty the Python copy of the merge ranks that each loaded tiktoken encoding keeps beside its Rust core;
    returns how many encodings had one. The core (a copy of its own) does all the encoding and counting; the
    Python dict (200,000 bytes objects for o200k_base) is read only to pickle an Encoding, which tda never does.
    Measured: o200k_base and cl100k_base take 106 MB resident, 62 MB without these dicts."""
    import tiktoken.registry

    dropped = 0
    for encoding in list(tiktoken.registry.ENCODINGS.values()):
        if getattr(encoding, "_mergeable_ranks", None):
            encoding._mergeable_ranks = {}
            dropped += 1
    return_freed_memory()
    return dropped


def drop_litellm_tokenizer_copy(litellm_utils: Any) -> bool:
    """Delete ``litellm.utils.json_data``: at import litellm parses its packaged Anthropic tokenizer and keeps both
    the parsed dict and the text it dumps it back to (``claude_json_str``); its token counter builds the tokenizer
    from the text, and nothing reads the dict again. Returns whether it was there. Measured: 7.3 MB resident."""
    if not hasattr(litellm_utils, "json_data"):
        return False
    del litellm_utils.json_data
    return True


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8  # glibc's mallopt parameters


MAPPED_APART = 2 * 1024 * 1024
"""Blocks of this many bytes or more are mapped apart and unmapped when freed; smaller ones come from the heap. A
chat client's resent conversation (~900 KB at turn 100 of an agent session) is copied ~5 times on its way in (h11's
buffer, Quart's, its bytes, its text): blocks mapped apart, every page of every copy was faulted in anew on every
call (through h11 in 64 KB reads, joined and decoded: ~2.3 ms of CPU a 900 KB body at 128 KB, ~0.3 ms from the heap),
the part of a session call's cost that grew with the session most (docs/history/benchmarks-log.md,
"Session 41 (growth3)")."""
KEPT_FREE = 8 * 1024 * 1024
"""Free memory at a heap's top kept for the next request rather than given back at once (``FreedMemory`` gives it
back once the background work is idle): more than a ~1 MB body's copies take together. 16 MB cost `tda serve`
8-12 MB more after the launch bench's demo and 20 turns (issue 35's target is 350), 8 MB ~4."""


def tune_malloc(arenas: int = 2, mapped: int = MAPPED_APART, kept: int = KEPT_FREE) -> None:
    """glibc's heap for a long-running server: at most ``arenas`` heaps for the process's threads (glibc's
    default is 8 per core: each worker thread of asyncio.to_thread, onnxruntime or chromadb gets a heap whose
    freed pages stay resident), blocks of ``mapped`` bytes or more mapped apart and given back when freed (by
    default glibc raises that threshold as large blocks come and go, keeping an embedding batch's buffers), and at
    most ``kept`` bytes free at a heap's top kept. Measured on `tda serve` after the demo and 20 turns, with both at
    128 KB: 14 MB less than glibc's defaults; 2 MB / 8 MB: ~4 MB more, a session's calls at turn 100 ~2 ms
    cheaper. Call it before threads start; a no-op where the C library is not glibc."""
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_ARENA_MAX, arenas)
    mallopt(_M_MMAP_THRESHOLD, mapped)
    mallopt(_M_TRIM_THRESHOLD, kept)


GRPC_SPAN_EXPORTER = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"


def defer_chroma_grpc_exporter() -> bool:
    """Chroma imports OpenTelemetry's gRPC span exporter when it is imported (``chromadb.telemetry.opentelemetry``)
    for tracing of its own that runs only when Chroma's settings name a collector (tda's never do); gRPC and
    protobuf then take 12 MB resident. Until an exporter is built, a stand-in module holds the exporter module's
    place: building one imports the real module and returns its exporter, so Chroma's tracing works as before when
    configured. Call it before chromadb is imported; returns False (and does nothing) once the real module is in."""
    if GRPC_SPAN_EXPORTER in sys.modules:
        return False
    stand_in = types.ModuleType(GRPC_SPAN_EXPORTER, "Stands in for the gRPC span exporter until one is built.")
    stand_in.OTLPSpanExporter = _DeferredSpanExporter  # type: ignore[attr-defined]
    sys.modules[GRPC_SPAN_EXPORTER] = stand_in
    return True


class _DeferredSpanExporter:
    """Building one builds the real ``OTLPSpanExporter``, its module imported then in place of the stand-in."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if getattr(sys.modules.get(GRPC_SPAN_EXPORTER), "OTLPSpanExporter", None) is cls:
            del sys.modules[GRPC_SPAN_EXPORTER]
        return importlib.import_module(GRPC_SPAN_EXPORTER).OTLPSpanExporter(*args, **kwargs)
