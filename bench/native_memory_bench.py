"""What a native turn adds to the server's memory, and for how long (issue 32 item 5: "memory that stays flat").

The service's app in this process (Quart's test client, no HTTP server), its model the fake upstream
(tests/gateway/upstream.py, its own process: it echoes each question) as in long_session_bench.py's native part:
BENCH_MEM_TURNS turns (default 3,000) recorded one by one through POST /v1/sessions/{id}/turns. Every
BENCH_MEM_EVERY turns (default 500): the process's RSS and, with BENCH_MEM_TRACE=1 (slower: every allocation is
traced; from turn BENCH_MEM_TRACE_FROM on, if set), the Python allocations that grew most since the previous mark, by
file:line (BENCH_MEM_TOP lines, default 12). Reported: RSS at each mark and its growth per 1,000 turns from the first
mark on (the caches warm by then), with the turn's window (``tokens_in``: what the model was sent) and the process's
CPU ms a turn since the previous mark (the service's and the bench's client, in one process). BENCH_MEM_EMBEDDER: the
embedder (default minilm-int8, tda's default; ``hashing`` is faster but 512 dimensions). BENCH_MEM_CENSUS=1: at
each mark, the bytes each of the service's structures holds and its growth a turn since the last mark.
BENCH_MEM_CONTEXT_LIMIT: the profile's context limit (default none: gpt-4.1's 1,047,576 tokens, which this bench's
short turns fill only past turn ~14,000, so every turn's window holds the whole history and its cost grows with it;
16000 as long_session_bench.py: a full window from turn ~200 on). Experiments on glibc's heaps: BENCH_MEM_ARENAS
(default 2, as `tda serve`), BENCH_MEM_TRIM=1 (their free pages given back at each mark, and how much that was).
Where a turn's time goes as the session grows: BENCH_MEM_PROFILE_AT=1000,10000 profiles the 30 turns before each
(``Profiling``: cProfile, and py-spy with BENCH_MEM_PYSPY), to diff per function (docs/history/benchmarks-log.md,
"Session 41 (native10k)"). At the end, the CPU ms a turn over the BENCH_MEM_CPU_SPAN turns (default 100) ending at that
turn, 1,000 and each 1,000th turn after: whether a turn costs the same at turn 10,000 as at 100 (issue 32 item 5).
BENCH_MEM_OWNERS=1 (with BENCH_MEM_TRACE=1 and BENCH_MEM_FRAMES > 1): at each mark the traced bytes by domain (numpy's
arrays too) and by the innermost line of the service's code that allocated them (docs/history/benchmarks-log.md,
"Session 46 (memflat8)"). BENCH_MEM_FREE=1: at each mark, glibc's free chunks by size (what the heaps' free space is
made of; session 53). BENCH_MEM_HOLES=1 (gcc and Python's headers): the process runs again with ``bench/heap_holes.c``
preloaded, and at each mark the free chunks of 4-64 KiB are read by the site of the blocks last there, by the site of
the block after each, and by how long ago they were freed (``bench/heap_holes.py``; session 54).
BENCH_MEM_INDEX_FILES=1: the service keeps its indexes' large buffers in files (``TDA_INDEX_FILES_DIR``); every mark
splits the RSS into anonymous memory and file pages, the indexes' among them; BENCH_MEM_PAGE_OUT=1 with it: at each
mark those pages reclaimed, and the next turn's CPU and RSS (docs/operations.md, "Install").

Run: ``PYTHONPATH=. python bench/native_memory_bench.py`` (a temporary data directory; nothing is kept).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import logging
import os
import re
import signal
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.loop_stalls import FullPasses, freeze_as_served  # noqa: E402
from tests.agent_session import question  # noqa: E402
from tests.gateway.servers import in_process_settings  # noqa: E402

TURNS = int(os.environ.get("BENCH_MEM_TURNS", "3000"))
EVERY = int(os.environ.get("BENCH_MEM_EVERY", "500"))
TRACE = os.environ.get("BENCH_MEM_TRACE") == "1"
EMBEDDER = os.environ.get("BENCH_MEM_EMBEDDER", "minilm-int8")
FRAMES = int(os.environ.get("BENCH_MEM_FRAMES", "1"))
"""Frames per traced allocation: with more, each line is reported with the calls that led to it."""
TRACE_FROM = int(os.environ.get("BENCH_MEM_TRACE_FROM", "0"))
"""With BENCH_MEM_TRACE=1, the turn after which allocations are traced (0: all): what a long session still adds, at
untraced speed until then (tracing slows a turn ~3x)."""
TOP = int(os.environ.get("BENCH_MEM_TOP", "12"))
CONTEXT_LIMIT = int(os.environ.get("BENCH_MEM_CONTEXT_LIMIT", "0")) or None
CENSUS = os.environ.get("BENCH_MEM_CENSUS") == "1"
"""At each mark, the bytes each of the service's structures holds (``census``), and their growth per 1,000 turns."""
TRIM = os.environ.get("BENCH_MEM_TRIM") == "1"
"""At each mark, after the RSS is read, glibc's free pages given back (``malloc_trim``): what that returns."""
ARENAS = int(os.environ.get("BENCH_MEM_ARENAS", "2"))
"""glibc's heaps for the process's threads (``tune_malloc``'s, as `tda serve` sets them: 2)."""
TRACKED = os.environ.get("BENCH_MEM_TRACKED") == "1"
"""At each mark, the objects the collector tracks (not frozen) by type, those grown most a turn since the last mark:
what makes its full passes longer as the session grows (docs/history/benchmarks-log.md, "Session 43 (native12)")."""
PROFILE_AT = {int(turn) for turn in os.environ.get("BENCH_MEM_PROFILE_AT", "").split(",") if turn}
"""Turns whose previous PROFILE_TURNS turns are profiled (cProfile, the event loop's thread) into BENCH_MEM_PROFILE_DIR,
``turn{N}.prof``; with BENCH_MEM_PYSPY (py-spy's path), the PROFILE_TURNS turns before those sampled by py-spy (every
thread), ``turn{N}.spy.txt``: where a turn's time goes at turn 1,000 against turn 10,000."""
PROFILE_TURNS = int(os.environ.get("BENCH_MEM_PROFILE_TURNS", "30"))
PROFILE_DIR = Path(os.environ.get("BENCH_MEM_PROFILE_DIR", "."))
PYSPY = os.environ.get("BENCH_MEM_PYSPY", "")
OWNERS = os.environ.get("BENCH_MEM_OWNERS") == "1"
"""With BENCH_MEM_TRACE=1 (and BENCH_MEM_FRAMES > 1), at each mark what is traced by domain (Python's, numpy's arrays)
and by owner: the innermost frame of the service's own code (components/, modules/, tda/) that allocated it, and its
growth a turn since the last mark; beside it, what glibc and Python's arenas hold that nothing traced (SQLite,
onnxruntime, the Rust tokenizers, free space): where a turn's RSS goes, not only its Python objects."""
FREE = os.environ.get("BENCH_MEM_FREE") == "1"
"""At each mark, glibc's free chunks by size (``malloc_info``, every heap): what its heaps' free space is made of (a
hole between live blocks, an array's old buffer left as it grew, the heap's top) (docs/history/benchmarks-log.md,
"Session 53 (memflat11)")."""
HOLES = os.environ.get("BENCH_MEM_HOLES") == "1"
"""At each mark, what was freed into glibc's free chunks of 4-64 KiB and what follows each (``bench/heap_holes.py``)."""
PAGE_OUT = os.environ.get("BENCH_MEM_PAGE_OUT") == "1"
"""With INDEX_FILES, at each mark the indexes' file pages reclaimed (``page_out_indexes``), the RSS after, and the
next turn's CPU and RSS: what keeping them in files gives back when the kernel needs the room."""
INDEX_FILES = os.environ.get("BENCH_MEM_INDEX_FILES") == "1"
"""The service keeps its indexes' large buffers in files (``TDA_INDEX_FILES_DIR``, a folder of the run's temporary
directory): their pages are file pages, not anonymous memory (``rss_kinds``; docs/operations.md, "Install")."""
CPU_SPAN = int(os.environ.get("BENCH_MEM_CPU_SPAN", "100"))
"""At the end: the process's CPU ms a turn over the CPU_SPAN turns ending at turn CPU_SPAN, 1,000, and each 1,000th
after (the turns' own: a mark's collection and sleep fall between two spans), and the last of them over the first."""


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        kb = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return kb / 1024


def rss_kinds() -> str:
    """RSS by kind (``/proc/self/status``): anonymous memory (only the process gives it back), file pages (the code,
    the model's weights, and with INDEX_FILES the indexes' buffers: the kernel's to drop and read again), shared
    memory; and how much of the file pages are the indexes' (``smaps``: the mappings of ``tda-index-`` files)."""
    with open("/proc/self/status") as status:
        kinds = {line.split(":")[0]: int(line.split()[1]) / 1024 for line in status if line.startswith("Rss")}
    indexes, in_index = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            if line[0] in "0123456789abcdef" and "-" in line.split()[0]:
                in_index = "tda-index-" in line
            elif in_index and line.startswith("Rss:"):
                indexes += int(line.split()[1])
    return (
        f"anonymous {kinds.get('RssAnon', 0):.1f}, file {kinds.get('RssFile', 0):.1f} (the indexes' "
        f"{indexes / 1024:.1f}), shared {kinds.get('RssShmem', 0):.1f}"
    )


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks")]
    _fields_ += [(name, ctypes.c_size_t) for name in ("fsmblks", "uordblks", "fordblks", "keepcost")]


def page_out_indexes() -> int:
    """Ask the kernel to reclaim the indexes' file pages now, as it would under memory pressure: each mapping of a
    ``tda-index-`` file written back (``msync``: reclaim skips a dirty file page) and paged out (``MADV_PAGEOUT``).
    Returns how many mappings. What RSS then holds, and what the next turn costs reading them again, says whether
    the kernel can keep them out (pages read every turn come back at once)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.msync.argtypes = libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    ms_sync, madv_pageout = 4, 21
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "tda-index-" in line:
                start, end = (int(edge, 16) for edge in line.split()[0].split("-"))
                ranges.append((start, end - start))
    for start, size in ranges:
        libc.msync(start, size, ms_sync)
        libc.madvise(start, size, madv_pageout)
    return len(ranges)


def python_arenas() -> tuple[float, float]:
    """MiB of Python's object arenas, and of the objects in them (``sys._debugmallocstats``, which writes to fd 2)."""
    with tempfile.TemporaryFile("w+") as out:
        saved = os.dup(2)
        sys.stderr.flush()
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        stats = out.read().replace(",", "")

    def mib(pattern: str) -> float:
        found = re.search(pattern, stats)
        return int(found.group(1)) / 2**20 if found else 0.0

    return mib(r"arenas \* \d+ bytes/arena\s*=\s*(\d+)"), mib(r"# bytes in allocated blocks\s*=\s*(\d+)")


def sqlite_mib() -> float:
    """What SQLite holds, every connection of the process (its page caches, statements, schemas)."""
    import sqlite3  # noqa: F401 (loads the library the process uses)

    try:
        used = ctypes.CDLL(ctypes.util.find_library("sqlite3") or "libsqlite3.so.0").sqlite3_memory_used
    except (OSError, AttributeError):
        return 0.0
    used.restype = ctypes.c_int64
    return int(used()) / 2**20


def breakdown() -> str:
    """Where the RSS is: files mapped (code), Python's arenas, glibc's heaps (what is in use and what is free but
    kept) and its blocks mapped apart (large arrays), and the rest of the anonymous memory (thread stacks, memory
    that libraries map themselves)."""
    with open("/proc/self/smaps_rollup") as rollup:
        fields = {line.split()[0]: int(line.split()[1]) / 1024 for line in rollup if line.split()[1].isdigit()}
    anonymous = fields["Anonymous:"]
    arenas, objects = python_arenas()
    try:
        mallinfo2 = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return f"anonymous {anonymous:.1f}, files {fields['Rss:'] - anonymous:.1f}, Python arenas {arenas:.1f}"
    mallinfo2.restype = _MallInfo2
    heap = mallinfo2()
    heaps, mapped = heap.arena / 2**20, heap.hblkhd / 2**20
    traced = f" | traced {tracemalloc.get_traced_memory()[0] / 2**20:.1f}" if tracemalloc.is_tracing() else ""
    in_use, free = heap.uordblks / 2**20, heap.fordblks / 2**20
    return (
        f"files {fields['Rss:'] - anonymous:.1f} | Python arenas {arenas:.1f} (objects {objects:.1f}) | malloc heaps "
        f"{heaps:.1f} (in use {in_use:.1f}, SQLite's {sqlite_mib():.1f}, free {free:.1f}), mapped {mapped:.1f} "
        f"| other anonymous {anonymous - arenas - heaps - mapped:.1f}{traced}"
    )


FREE_CLASSES = (512, 4096, 65536)
"""Free chunks' sizes, bytes, by class: up to 512 (a small object's hole), 4 KiB, 64 KiB (lists', dicts' and small
arrays' old buffers), and larger."""


def free_chunks() -> str:
    """MiB of glibc's free chunks by size class over every heap (``malloc_info``'s bins, fast ones included), and the
    rest of its free space (``mallinfo2``'s, less the bins': the heaps' tops)."""
    import xml.etree.ElementTree as ElementTree

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    libc.open_memstream.restype = ctypes.c_void_p
    libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_size_t)]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    buffer, size = ctypes.c_char_p(), ctypes.c_size_t()
    stream = libc.open_memstream(ctypes.byref(buffer), ctypes.byref(size))
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    report = ElementTree.fromstring(ctypes.string_at(buffer, size.value))
    libc.free.argtypes = [ctypes.c_void_p]
    libc.free(ctypes.cast(buffer, ctypes.c_void_p))
    classes = [0] * (len(FREE_CLASSES) + 1)
    for heap in report.iter("heap"):
        for chunk in heap.iter("size"):
            upper = int(chunk.get("to") or 0)
            at = next((i for i, edge in enumerate(FREE_CLASSES) if upper <= edge), len(FREE_CLASSES))
            classes[at] += int(chunk.get("total") or 0)
    mallinfo2 = libc.mallinfo2
    mallinfo2.restype = _MallInfo2
    tops = mallinfo2().fordblks - sum(classes)
    names = ["<=512 B", "<=4 KiB", "<=64 KiB", ">64 KiB"]
    held = ", ".join(f"{name} {held / 2**20:.2f}" for name, held in zip(names, classes, strict=True))
    return f"  free chunks MiB: {held}; the heaps' tops and the rest {tops / 2**20:.2f}"


def pinned() -> str:
    """What the freezes hold that is garbage by now (in cycles: nothing frees it while frozen), counted by thawing
    everything and collecting, at the end of the run."""
    gc.collect()
    frozen = gc.get_freeze_count()
    gc.unfreeze()
    return f"frozen {frozen:,} objects, of which garbage (in cycles) at the end: {gc.collect():,}"


def deep_bytes(root: Any, seen: set[int]) -> int:
    """What ``root`` holds: every object reachable from it but those in ``seen`` (which grows), a numpy view's base
    too, and a buffer mapped apart (``components.context_window.mapped``) as allocated; modules, classes and functions
    are not followed (shared code, not data)."""
    import mmap
    import types

    import numpy as np

    from components.context_window import mapped

    file_pages = getattr(mapped, "_FilePages", ())  # (a checkout before session 58 has none)
    skipped = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.CodeType)
    total, stack = 0, [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, skipped):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj) + (len(obj) if isinstance(obj, mmap.mmap) else 0)  # a mapped buffer's bytes
        total += obj.nbytes if isinstance(obj, file_pages) else 0  # a buffer's file pages
        if isinstance(obj, np.ndarray):
            if obj.base is not None:
                stack.append(obj.base)
            continue
        stack.extend(gc.get_referents(obj))
    return total


def census(svc: Any) -> dict[str, int]:
    """Bytes held per structure of the service: the session's recall index, the turn index, the history cache, the
    cases, turn recall's shared vectors, the token counters, each module's attributes (its caches, turn recall's
    indexes), the service's and the providers' other attributes; an object several reach (a message in the recall
    index and the history cache) counted once, in the first."""
    from components.context_window import token_estimator
    from components.context_window.recall.turns import TurnRecall

    roots: list[tuple[str, Any]] = [
        ("recall's session indexes", svc.sources.history_recall),
        ("turn index", svc.sources.turn_index),
        ("history cache", svc.history),
        ("cases", svc.knowledge),
        ("turn recall's shared vectors", TurnRecall._shared_vectors),
        ("token counters", token_estimator._estimators),
    ]
    roots += [
        (f"{m}.{name}", value) for m, module in svc.registry.modules.items() for name, value in vars(module).items()
    ]
    roots += [(f"svc.{name}", value) for name, value in vars(svc).items()]
    roots += [(f"sources.{name}", value) for name, value in vars(svc.sources).items()]
    # Last: what the event loop reaches (its tasks and callbacks, and through them the whole app). An asyncio lock
    # that once had a waiter holds the loop: counted in the first structure reaching one (the history cache, through
    # the database's write lock), everything the roots above miss seemed to grow there.
    roots.append(("the event loop (what no structure above reaches)", asyncio.get_running_loop()))
    roots = list({id(value): (name, value) for name, value in reversed(roots)}.values())[::-1]  # by first name
    seen = {id(svc), *(id(value) for _, value in roots)}  # another structure one reaches (its store) is not its own
    held = {}
    for name, value in roots:
        seen.discard(id(value))
        held[name] = deep_bytes(value, seen)
    return held


def census_lines(now: dict[str, int], before: dict[str, int], turns: int) -> list[str]:
    rows = sorted(now, key=lambda name: now[name] - before.get(name, 0), reverse=True)
    return [
        f"    {name}: {now[name] / 2**20:.2f} MiB, {(now[name] - before.get(name, 0)) / turns:+.0f} bytes a turn"
        for name in rows[:TOP]
    ]


def grown(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot) -> list[str]:
    """The TOP lines whose live allocations grew most between two snapshots."""
    stats = after.compare_to(before, "traceback" if FRAMES > 1 else "lineno")
    stats.sort(key=lambda s: s.size_diff, reverse=True)
    return [
        f"    {s.size_diff / 1024:+9.0f} KiB {s.count_diff:+8d} blocks  "
        + " <- ".join(f"{f.filename.removeprefix(str(ROOT) + '/')}:{f.lineno}" for f in s.traceback)
        for s in stats[:TOP]
    ]


NUMPY_DOMAIN = 389047
"""The tracemalloc domain numpy's array data is traced in (``numpy.lib.tracemalloc_domain``)."""
OWN_CODE = tuple(str(ROOT / folder) + "/" for folder in ("components", "modules", "tda"))


def owners(snapshot: tracemalloc.Snapshot) -> dict[str, int]:
    """Traced bytes by domain and by the innermost frame of the service's own code that allocated them (a line of
    components/, modules/ or tda/; ``elsewhere`` when no frame kept is the service's)."""
    held: dict[str, int] = {}
    for trace in snapshot.traces:
        domain = "numpy" if trace.domain == NUMPY_DOMAIN else "python"
        frame = next((f for f in reversed(trace.traceback) if f.filename.startswith(OWN_CODE)), None)  # newest last
        where = f"{frame.filename.removeprefix(str(ROOT) + '/')}:{frame.lineno}" if frame else "elsewhere"
        held[f"{domain} {where}"] = held.get(f"{domain} {where}", 0) + trace.size
        held[f"{domain} (all)"] = held.get(f"{domain} (all)", 0) + trace.size
    return held


def owner_lines(now: dict[str, int], before: dict[str, int], turns: int) -> list[str]:
    total = {name: now[name] for name in now if name.endswith("(all)")}
    grew = sorted(now, key=lambda name: now[name] - before.get(name, 0), reverse=True)[:TOP]
    return [
        f"    {name}: {now[name] / 2**20:.2f} MiB, {(now[name] - before.get(name, 0)) / turns:+.0f} bytes a turn"
        for name in [*total, *(name for name in grew if name not in total)]
    ]


class Profiling:
    """cProfile over the PROFILE_TURNS turns that end at each turn of PROFILE_AT, py-spy over the PROFILE_TURNS before
    them (not both at once: each slows the other's turns)."""

    def __init__(self) -> None:
        self.profile: Any = None
        self.spy: Any = None
        self.spy_cpu = 0.0

    def before(self, turn: int) -> None:
        import cProfile
        import subprocess

        ends = {at for at in PROFILE_AT if at - PROFILE_TURNS < turn <= at}
        if PYSPY and {at for at in PROFILE_AT if at - 2 * PROFILE_TURNS < turn <= at - PROFILE_TURNS} and not self.spy:
            at = turn + 2 * PROFILE_TURNS - 1
            out = PROFILE_DIR / f"turn{at}.spy.txt"
            command = [PYSPY, "record", "--pid", str(os.getpid()), "--format", "raw", "-o", str(out), "--rate", "200"]
            self.spy = subprocess.Popen([*command, "--nonblocking", "--threads"], stdout=subprocess.DEVNULL)
            time.sleep(1.0)  # attached
        if ends and self.profile is None:
            self.profile = cProfile.Profile()
            self.cpu = time.process_time()
            self.profile.enable()

    def after(self, turn: int) -> None:
        if self.spy is not None and turn + PROFILE_TURNS in PROFILE_AT:
            self.spy.send_signal(signal.SIGINT)
            self.spy.wait()
            self.spy = None
        if self.profile is not None and turn in PROFILE_AT:
            self.profile.disable()
            cpu = (time.process_time() - self.cpu) * 1000 / PROFILE_TURNS
            self.profile.dump_stats(PROFILE_DIR / f"turn{turn}.prof")
            print(f"turn {turn}: profiled {PROFILE_TURNS} turns, CPU {cpu:.1f} ms a turn (profiled)", flush=True)
            self.profile = None


async def record(settings: Any, token: str) -> list[tuple[int, float, float]]:
    import numpy as np
    from quart.testing.app import TestApp

    from tda.app import create_app
    from tda.memory import return_freed_memory

    app = create_app(settings, migrate=False, warm_up_llm=False)
    headers = {"Authorization": f"Bearer {token}"}
    marks: list[tuple[int, float, float]] = []
    async with TestApp(app, startup_timeout=300, shutdown_timeout=300) as test_app:
        client = test_app.test_client()
        profile = {"id": "agent", "type": "tool_enabled", "model": "gpt-4.1", "context_limit": CONTEXT_LIMIT}
        r = await client.post("/v1/profiles", json=profile, headers=headers)
        assert r.status_code == 201, await r.get_data()
        r = await client.post("/v1/sessions", json={"id": "native-long", "profile_id": "agent"}, headers=headers)
        assert r.status_code == 201, await r.get_data()
        freeze_as_served()
        passes = FullPasses()
        svc, held = app.extensions["tda"], {}
        held_types: dict[str, int] = {}
        snapshot, owned = None, {}
        started, cpu = time.perf_counter(), time.process_time()
        profiler = Profiling()
        turn_cpu = [time.process_time()]
        holes, held_holes = hole_tracer(), {}
        for turn in range(1, TURNS + 1):
            profiler.before(turn)
            if holes:
                holes.turn(turn)
            r = await client.post("/v1/sessions/native-long/turns", json={"query": question(turn)}, headers=headers)
            assert r.status_code == 201, (turn, await r.get_data())
            turn_cpu.append(time.process_time())
            if turn % EVERY == 1 and turn > 1:  # after a mark (and a page-out): what reading the pages again cost
                cpu_ms = (turn_cpu[-1] - turn_cpu[-2]) * 1000
                before = np.median(np.diff(turn_cpu[-EVERY:])) * 1000
                print(f"  the turn after: CPU {cpu_ms:.1f} ms (median {before:.1f}); {rss_kinds()}", flush=True)
            profiler.after(turn)
            if TRACE and turn == TRACE_FROM:
                tracemalloc.start(FRAMES)
            if turn % EVERY == 0:
                await asyncio.sleep(0.5)  # the turn's indexing, in the background, ends
                collector = passes.take()
                gc.collect()
                passes.passes.clear()  # the bench's own pass
                marks.append((turn, rss_mib(), time.perf_counter() - started))
                window = (await r.get_json())["tokens_in"]
                cpu, cpu_ms = time.process_time(), (time.process_time() - cpu) * 1000 / EVERY
                print(
                    f"turn {turn}: RSS {marks[-1][1]:.1f} MiB ({rss_kinds()}), {marks[-1][2]:.0f} s, window "
                    f"{window:,} tokens, CPU {cpu_ms:.0f} ms a turn; {breakdown()}; {collector}",
                    flush=True,
                )
                if FREE:
                    print(free_chunks(), flush=True)
                if holes:
                    now_holes = holes.holes(turn)
                    print("\n".join(hole_lines(holes, now_holes, held_holes)), flush=True)
                    held_holes = now_holes
                if PAGE_OUT:
                    mappings = page_out_indexes()
                    print(f"  paged out {mappings} index mappings: RSS {rss_mib():.1f} MiB ({rss_kinds()})", flush=True)
                if TRIM:
                    return_freed_memory()
                    print(f"  trimmed: RSS {rss_mib():.1f} MiB ({rss_mib() - marks[-1][1]:+.1f})", flush=True)
                if CENSUS:
                    now = census(svc)
                    if held:
                        print("\n".join(census_lines(now, held, EVERY)), flush=True)
                    held = now
                if TRACKED:
                    now_types = tracked_types()
                    print("\n".join(tracked_lines(now_types, held_types, EVERY)), flush=True)
                    held_types = now_types
                if tracemalloc.is_tracing():
                    now = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
                    if snapshot is not None and not OWNERS:
                        print("\n".join(grown(snapshot, now)), flush=True)
                    if OWNERS:
                        now_owned = owners(now)
                        print("\n".join(owner_lines(now_owned, owned, EVERY)), flush=True)
                        owned = now_owned
                    snapshot = now
        print(pinned(), flush=True)
        print(cpu_spans(turn_cpu), flush=True)
    return marks


def hole_tracer() -> Any:
    if not HOLES:
        return None
    from bench.heap_holes import Holes

    holes = Holes()
    holes.start()
    return holes


def hole_lines(holes: Any, now: dict[str, dict[int, int]], before: dict[str, dict[int, int]]) -> list[str]:
    """The free chunks of 4-64 KiB by each reading (bytes by site, by the site after, by turns since freed; all free
    chunks by size): the largest now, and their change since the last mark."""
    lines = []
    for reading, held in now.items():
        was = before.get(reading, {})
        lines.append(f"  holes 4-64 KiB, {reading}: {sum(held.values()) / 2**20:.2f} MiB")
        named = reading.startswith(("last", "just"))
        for key in sorted(held, key=lambda key: held[key], reverse=True)[: TOP if named else None]:
            name = holes.site(key) if named else key
            lines.append(f"    {held[key] / 2**20:6.3f} MiB ({(held[key] - was.get(key, 0)) / 2**20:+.3f}) {name}")
    return lines


def tracked_types() -> dict[str, int]:
    """The collector's tracked, unfrozen objects by type (module-qualified)."""
    import weakref

    counts: dict[str, int] = {}
    for obj in gc.get_objects():
        kind = type(obj)
        name = f"{kind.__module__}.{kind.__qualname__}"
        if kind is tuple:  # by what it holds: a tuple of atoms is untracked at its first collection
            name += "(" + ", ".join(type(item).__qualname__ for item in obj[:4]) + ")"
        elif kind is weakref.ReferenceType:
            name += f" to {type(obj()).__qualname__}"
        counts[name] = counts.get(name, 0) + 1
    return counts


def tracked_lines(now: dict[str, int], before: dict[str, int], turns: int) -> list[str]:
    grew = sorted(((n - before.get(name, 0), name) for name, n in now.items()), reverse=True)[:TOP]
    total = sum(now.values())
    lines = [f"  tracked {total:,} ({(total - sum(before.values())) / turns:+.1f} a turn), grown most:"]
    return lines + [f"    {name}: {now[name]:,} ({diff / turns:+.2f} a turn)" for diff, name in grew]


def cpu_spans(turn_cpu: list[float]) -> str:
    """CPU ms a turn over the CPU_SPAN turns ending at CPU_SPAN, 1,000 and each 1,000th turn after, from the
    process's CPU time after each turn (``turn_cpu[0]``: before the first)."""
    ends = [end for end in (CPU_SPAN, *range(1000, len(turn_cpu), 1000)) if CPU_SPAN <= end < len(turn_cpu)]
    spans = {end: (turn_cpu[end] - turn_cpu[end - CPU_SPAN]) * 1000 / CPU_SPAN for end in ends}
    if not spans:
        return "no span of CPU_SPAN turns"
    listed = ", ".join(f"{end:,}: {ms:.1f}" for end, ms in spans.items())
    first, last = spans[ends[0]], spans[ends[-1]]
    return f"CPU ms a turn over the {CPU_SPAN} turns ending at turn {listed}; last / first x{last / first:.2f}"


def index_files(folder: Path) -> dict[str, str]:
    """With INDEX_FILES, the service's setting that keeps the indexes' buffers in files under ``folder``."""
    return {"TDA_INDEX_FILES_DIR": str(folder / "index-files")} if INDEX_FILES else {}


def main() -> None:
    from tda.memory import tune_malloc

    if HOLES:
        from bench.heap_holes import preloaded

        preloaded()
    tune_malloc(arenas=ARENAS)  # as `tda serve` does
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stopped, it stops its upstream too
    logging.getLogger("components").setLevel(logging.ERROR)  # a loaded machine's slow steps are not what is measured
    if TRACE and not TRACE_FROM:
        tracemalloc.start(FRAMES)
    with (
        tempfile.TemporaryDirectory(prefix="tda-mem-") as tmp,
        in_process_settings(Path(tmp), TDA_EMBEDDER=EMBEDDER, **index_files(Path(tmp))) as (settings, token),
    ):
        marks = asyncio.run(record(settings, token))
    (t0, r0, _), (t1, r1, _) = marks[0], marks[-1]
    if t1 > t0:
        print(
            f"RSS {r0:.1f} -> {r1:.1f} MiB from turn {t0} to {t1}: "
            f"{(r1 - r0) / (t1 - t0) * 1000:.1f} MiB per 1,000 turns"
        )


if __name__ == "__main__":
    main()
