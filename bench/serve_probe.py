"""`tda serve` with a probe inside (long_session_bench.py's BENCH_LONG_TRACE): what a call's CPU level follows.

Started as ``python bench/serve_probe.py serve`` with BENCH_PROBE_OUT naming a file; writes JSON lines to it:
* on SIGUSR1 (the bench sends one before and after each call, and waits for its line): a fixed pure-Python spin timed
  on the main thread's CPU clock and the wall clock, a fixed walk of random reads over 16 MB on the CPU clock, the
  CPU the thread ran them on, the collector's counts and freezes, and every thread's native id with its name
  (so the bench can name each thread's CPU);
* each cycle collection (``gc.callbacks``): its generation, its thread's CPU and wall ms, its start on the monotonic
  clock (the bench's ``time.perf_counter`` reads the same clock: CLOCK_MONOTONIC), and the thread that ran it.
Nothing here runs inside a request but the collector's callbacks; the spin runs before the bench's call is timed.
"""

from __future__ import annotations

import array
import gc
import json
import os
import random
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SPIN_STEPS = 200_000
"""The spin's loop steps (~5-10 ms of one core): pure bytecode, no allocation that outlives a step."""


MEMORY_BYTES = 16 << 20
"""The memory spin's buffer: past the core's 1 MB L2, so its reads go to the L3 the host's cores share, or beyond."""
MEMORY_READS = 20_000


def spin() -> int:
    total = 0
    for i in range(SPIN_STEPS):
        total += i & 7
    return total


class MemorySpin:
    """A fixed walk of random reads over MEMORY_BYTES (~5 ms): what a neighbour contending for the shared cache or
    the memory slows, and a spin that stays in the core's own cache does not."""

    def __init__(self) -> None:
        self.buffer = bytearray(os.urandom(MEMORY_BYTES))
        at = random.Random(48)
        self.reads = array.array("I", (at.randrange(MEMORY_BYTES) for _ in range(MEMORY_READS)))

    def __call__(self) -> int:
        buffer, total = self.buffer, 0
        for i in self.reads:
            total += buffer[i]
        return total


def on_cpu() -> int:
    """The CPU the calling thread last ran on (field 39 of its /proc stat)."""
    stat = Path(f"/proc/self/task/{threading.get_native_id()}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[36])


def tda_freezes() -> int:
    """How many times `tda serve` froze what it had loaded (tda/collector.py). Not ``gc.get_freeze_count()``: in
    Python 3.11 it walks the ~290,000 frozen objects, ~30 ms of CPU each probe."""
    from tda.collector import LOADED

    return LOADED.freezes


class Probe:
    def __init__(self, out: Path) -> None:
        self.out = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        self.collecting: dict[int, tuple[float, float]] = {}
        self.memory_spin = MemorySpin()

    def write(self, line: dict[str, Any]) -> None:
        """One unbuffered write: the signal's handler may run inside a collection's callback, mid-write (a buffered
        file then raises "reentrant call" and the line is lost)."""
        os.write(self.out, (json.dumps(line) + "\n").encode())

    def spun(self, _signum: int, _frame: object) -> None:
        entered = time.thread_time()
        cpu, wall = time.thread_time(), time.perf_counter()
        spin()
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
        memory = time.thread_time()
        self.memory_spin()
        memory = time.thread_time() - memory
        self.write(
            {
                "kind": "spin",
                "at": time.perf_counter(),
                "spin_cpu_ms": cpu * 1000,
                "spin_wall_ms": wall * 1000,
                "memory_spin_cpu_ms": memory * 1000,
                "cpu": on_cpu(),
                "gc_counts": gc.get_count(),
                "gc_freezes": tda_freezes(),
                "gc_enabled": gc.isenabled(),
                "gc_stats": [s["collections"] for s in gc.get_stats()],
                "threads": {str(t.native_id): t.name for t in threading.enumerate()},
                "handler_cpu_ms": (time.thread_time() - entered) * 1000,
            }
        )

    def collected(self, phase: str, info: dict[str, int]) -> None:
        me = threading.get_native_id()
        if phase == "start":
            self.collecting[me] = (time.thread_time(), time.perf_counter())
            return
        cpu, wall = self.collecting.pop(me, (time.thread_time(), time.perf_counter()))
        self.write(
            {
                "kind": "gc",
                "at": wall,
                "generation": info["generation"],
                "cpu_ms": (time.thread_time() - cpu) * 1000,
                "wall_ms": (time.perf_counter() - wall) * 1000,
                "collected": info["collected"],
                "thread": threading.current_thread().name,
            }
        )


def main() -> int:
    probe = Probe(Path(os.environ["BENCH_PROBE_OUT"]))
    signal.signal(signal.SIGUSR1, probe.spun)
    gc.callbacks.append(probe.collected)
    from tda.cli import main as tda_main

    return tda_main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
