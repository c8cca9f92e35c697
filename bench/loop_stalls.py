"""`tda serve` with a stall sampler: names the code that holds the event loop, for the benches.

Run as ``python bench/loop_stalls.py serve`` (the arguments of ``tda``). A watchdog thread hands the loop a callback
every PING_S; while one has waited longer than SAMPLE_AFTER_S it samples the loop thread's stack every SAMPLE_S. A
stall over REPORT_MS is printed on exit (``loop-stall`` lines: its duration, then the innermost tda frames seen,
most sampled first), next to every full cycle collection (``gc-full`` lines). Sampling by stack is what asyncio's
slow-callback log cannot do: a callback's name says "Task.__step", not which line of the request's work held it.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import faulthandler
import gc
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PING_S = 0.005
SAMPLE_AFTER_S = 0.01
SAMPLE_S = 0.002
REPORT_MS = float(os.environ.get("BENCH_STALL_MS", "30"))
DUMP_MS = float(os.environ.get("BENCH_STALL_DUMP_MS", "0"))
"""Over 0: a stall this long also dumps every thread's stack from faulthandler's own thread, which needs no GIL: it
names a long C call holding the GIL (freeing a big list, a long ``sort``), where the sampler cannot take a sample."""

stalls: list[tuple[float, float, collections.Counter[str]]] = []


def where(frame: Any) -> str:
    """The innermost seven frames of the project's code (tda/, components/, modules/) on ``frame``'s stack."""
    ours = [
        f"{Path(f.filename).relative_to(ROOT)}:{f.lineno} {f.name}"
        for f in traceback.extract_stack(frame)
        if f.filename.startswith(str(ROOT)) and "/bench/" not in f.filename
    ]
    inner = traceback.extract_stack(frame)[-1]
    return " < ".join(reversed(ours[-7:])) + f" [in {Path(inner.filename).name}:{inner.lineno} {inner.name}]"


def watch(loop: asyncio.AbstractEventLoop, thread_id: int) -> None:
    while not loop.is_closed():
        answered = threading.Event()
        sent = time.perf_counter()
        try:
            loop.call_soon_threadsafe(answered.set)
        except RuntimeError:
            return
        seen: collections.Counter[str] = collections.Counter()
        if DUMP_MS:
            faulthandler.dump_traceback_later(DUMP_MS / 1000, exit=False)
        while not answered.wait(SAMPLE_AFTER_S if not seen else SAMPLE_S):
            frame = sys._current_frames().get(thread_id)
            if frame is not None:
                seen[where(frame)] += 1
        waited_ms = (time.perf_counter() - sent) * 1000
        if DUMP_MS:
            faulthandler.cancel_dump_traceback_later()
            if waited_ms > DUMP_MS:
                print(f"loop-stall-dumped {waited_ms:.0f} ms at {time.monotonic() - waited_ms / 1000:.3f}", flush=True)
        if waited_ms > REPORT_MS:
            stalls.append((time.monotonic() - waited_ms / 1000, waited_ms, seen))
        time.sleep(PING_S)


class FullPasses:
    """The cycle collector's full passes (generation 2): when each began (``time.monotonic``), its wall ms, its CPU
    ms (the thread's: on a loaded machine the wall also counts waits for a core) and what it collected. A full pass
    walks every tracked object that was not frozen, holding the GIL (and the event loop) throughout."""

    def __init__(self) -> None:
        self.passes: list[tuple[float, float, float, int]] = []
        self._began = (0.0, 0.0)
        gc.callbacks.append(self.on_collection)

    def on_collection(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                self._began = (time.perf_counter(), time.thread_time())
            else:
                took = (time.perf_counter() - self._began[0]) * 1000
                cpu = (time.thread_time() - self._began[1]) * 1000
                self.passes.append((time.monotonic() - took / 1000, took, cpu, info["collected"]))

    def longest(self) -> str:
        if not self.passes:
            return "0 full passes"
        took, cpu = max(p[1] for p in self.passes), max(p[2] for p in self.passes)
        return f"{len(self.passes)} full passes, the longest {took:.1f} ms wall, {cpu:.1f} ms CPU"

    def take(self) -> str:
        """The passes since the last ``take`` (how many, the longest) and the objects a pass walks now."""
        longest, self.passes = self.longest(), []
        tracked = sum(len(gc.get_objects(generation)) for generation in range(3))
        return f"GC: {tracked:,} objects tracked ({gc.get_freeze_count():,} frozen), {longest}"


def freeze_as_served() -> None:
    """Freeze what `tda serve` freezes once started (with tda/collector.py's ``LOADED``, again when the background
    work is done after requests loaded modules: an app that skips the LLM warm-up loads litellm on its first turn)."""
    try:
        from tda.collector import LOADED
    except ImportError:  # before LOADED: the start-up freeze alone
        gc.collect()
        gc.freeze()
    else:
        LOADED.freeze()


def report(full: FullPasses) -> None:
    for at, took, _, collected in full.passes:
        print(f"gc-full {took:.1f} ms at {at:.3f}: {collected} collected", flush=True)
    for at, waited, seen in stalls:
        top = "; ".join(f"{n}x {w}" for w, n in seen.most_common(3))
        print(f"loop-stall {waited:.0f} ms at {at:.3f}: {top}", flush=True)


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from tda import server_cli
    from tda.cli import main as tda_main

    run = server_cli.run_event_loop

    def run_watched(main: Any) -> None:
        async def watched() -> Any:
            loop = asyncio.get_running_loop()
            threading.Thread(target=watch, args=(loop, threading.get_ident()), daemon=True).start()
            return await main

        run(watched())

    server_cli.run_event_loop = run_watched
    atexit.register(report, FullPasses())
    return tda_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
