"""Per-call traces of a `tda serve` started through bench/serve_probe.py (long_session_bench.py's BENCH_LONG_TRACE).

For each call, one JSON line: its label (mode, turn, step), wall ms, the process's CPU ms (all threads, as the bench's
"server CPU ms per call") and each thread's, named by the probe; the probe's spin just before the call (a fixed
pure-Python loop in the server's main thread: if it shifts level with the call, the machine does, not tda) and just
after it, the same spin in the bench's own process, the CPU each ran on, the machine's steal and other CPU time over
the call (/proc/stat), the server's minor and major page faults in the call, the cycle collections that started
inside the call, and the process's CPU ns before and after it (what ran between two calls, the probe's spins aside, is
what the server did after a response).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import time
from pathlib import Path
from typing import Any

from bench.serve_probe import on_cpu, spin

PROBE_WAIT_S = 5.0


def thread_cpu_ns(pid: int) -> dict[str, int]:
    """Each live thread's CPU ns (/proc/<pid>/task/*/schedstat), by native id."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[task.name] = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):  # a thread that ended while read
            continue
    return out


def page_faults(pid: int) -> list[int]:
    """The process's minor and major page faults so far (/proc/<pid>/stat; a fault's handling is the thread's CPU)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return [int(fields[7]), int(fields[9])]


def machine_ticks() -> dict[str, list[int]]:
    """Per CPU, /proc/stat's busy ticks (user, nice, system, irq, softirq) and steal."""
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("cpu") and line[3:4].isdigit():
            name, *fields = line.split()
            ticks = [int(f) for f in fields]
            out[name] = [ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6], ticks[7]]
    return out


def at_usual_speed(cpu_ms: list[float], spin_ms: list[float]) -> list[float]:
    """Each call's CPU ms as it would read at the run's usual machine speed: scaled by the run's median probe spin over
    the spin around it. The host runs the same pure-Python loop 1.4-1.7x slower in episodes of seconds, one vCPU at a
    time (docs/history/benchmarks-log.md, "Session 48 (growth8)"): a ten-turn median that met such an episode reads the
    host, not tda."""
    usual = statistics.median(spin_ms)
    return [cpu * usual / spin for cpu, spin in zip(cpu_ms, spin_ms, strict=True)]


def bench_spin() -> dict[str, float]:
    cpu, wall = time.thread_time(), time.perf_counter()
    spin()
    return {"cpu_ms": (time.thread_time() - cpu) * 1000, "wall_ms": (time.perf_counter() - wall) * 1000}


class CallTrace:
    """Brackets each call of one server (``before`` / ``after``) and writes its line to ``out``."""

    def __init__(self, pid: int, probe_out: Path, out: Path) -> None:
        self.pid, self.probe_out, self.out = pid, probe_out, out
        self.read_to = 0
        self.label: dict[str, Any] = {}
        self.threads: dict[str, str] = {}
        self.spin_ms: float | None = None
        """The probe's spins around the last call, their mean ms (None: the probe answered neither)."""

    def _probe_lines(self) -> list[dict[str, Any]]:
        if not self.probe_out.exists():
            return []
        with self.probe_out.open() as f:
            f.seek(self.read_to)
            text = f.read()
        complete = text[: text.rfind("\n") + 1]
        self.read_to += len(complete)
        return [json.loads(line) for line in complete.splitlines()]

    def _probe_spin(self) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """Signal the server's probe and wait for its spin's line; the collections logged since, too."""
        os.kill(self.pid, signal.SIGUSR1)
        deadline, seen = time.monotonic() + PROBE_WAIT_S, []
        while time.monotonic() < deadline:
            seen += self._probe_lines()
            spun = [line for line in seen if line["kind"] == "spin"]
            if spun:
                return spun[-1], [line for line in seen if line["kind"] == "gc"]
            time.sleep(0.001)
        return None, seen

    def _spun(self) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        spun, collections = self._probe_spin()
        if spun:
            self.threads |= spun.pop("threads")
        return spun, collections

    def before(self) -> dict[str, Any]:
        spun, collections = self._spun()
        return {
            "probe": spun,
            "gc_between": collections,
            "bench_spin": bench_spin(),
            "bench_cpu": on_cpu(),
            "machine": machine_ticks(),
            "threads": thread_cpu_ns(self.pid),
            "faults": page_faults(self.pid),
            "at": time.perf_counter(),
        }

    def after(self, started: dict[str, Any], status: int) -> None:
        """The call's line; then the probe spins again, and ``spin_ms`` is the mean of its spins before and after the
        call (an episode of the host's may begin or end within the call: the two together follow it better than one)."""
        at, threads, machine = time.perf_counter(), thread_cpu_ns(self.pid), machine_ticks()
        faults = [n - before for n, before in zip(page_faults(self.pid), started["faults"], strict=True)]
        spent = {tid: ns - started["threads"].get(tid, 0) for tid, ns in threads.items()}
        by_name: dict[str, float] = {}
        for tid, ns in spent.items():
            if ns:
                name = "main" if tid == str(self.pid) else self.threads.get(tid, f"tid-{tid}")
                by_name[name] = by_name.get(name, 0.0) + ns / 1e6
        spun_after, collections = self._spun()
        spins = [p["spin_cpu_ms"] for p in (started["probe"], spun_after) if p]
        self.spin_ms = statistics.fmean(spins) if spins else None
        line = {
            **self.label,
            "status": status,
            "wall_ms": (at - started["at"]) * 1000,
            "cpu_ms": sum(spent.values()) / 1e6,
            "process_ns": [sum(started["threads"].values()), sum(threads.values())],
            "page_faults": faults,
            "threads_ms": by_name,
            "probe": started["probe"],
            "probe_after": spun_after,
            "bench_spin": started["bench_spin"],
            "bench_cpu": started["bench_cpu"],
            "machine_ticks": {
                cpu: [a - b for a, b in zip(machine[cpu], started["machine"][cpu], strict=True)] for cpu in machine
            },
            "gc": [c for c in collections if started["at"] <= c["at"] <= at],
            "gc_between": started["gc_between"],
        }
        with self.out.open("a") as f:
            f.write(json.dumps(line) + "\n")
