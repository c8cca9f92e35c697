"""The long-session bench's per-call trace (bench/call_trace.py, bench/serve_probe.py): a call met in one of the host's
slow episodes reads at the run's usual speed, and the probe spins in the traced process, its line naming the threads."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.call_trace import CallTrace, at_usual_speed

ROOT = Path(__file__).resolve().parents[1]

calls = st.lists(st.floats(5.0, 50.0), min_size=5, max_size=40)


@given(calls, st.data())
def test_a_call_met_in_a_slow_episode_reads_at_the_run_s_usual_speed(cpu_ms: list[float], data: st.DataObject) -> None:
    """The host slows a call and the spin before it alike (x1.3-1.8); fewer than half the calls: the usual spin is the
    others'. Each slowed call then reads what it would have at the usual speed, and the others as measured."""
    usual = 6.0
    slowed = data.draw(st.sets(st.integers(0, len(cpu_ms) - 1), max_size=(len(cpu_ms) - 1) // 2))
    factors = [data.draw(st.floats(1.3, 1.8)) if i in slowed else 1.0 for i in range(len(cpu_ms))]
    measured = [cpu * k for cpu, k in zip(cpu_ms, factors, strict=True)]
    spins = [usual * k for k in factors]
    assert at_usual_speed(measured, spins) == pytest.approx(cpu_ms)


PROBED = """
import signal, sys, time
sys.path.insert(0, sys.argv[2])
from bench.serve_probe import Probe
probe = Probe(__import__("pathlib").Path(sys.argv[1]))
signal.signal(signal.SIGUSR1, probe.spun)
print("ready", flush=True)
while True:
    time.sleep(0.01)
"""


def test_the_probe_spins_in_the_traced_process_and_a_call_s_line_names_its_threads(tmp_path: Path) -> None:
    probe_out, out = tmp_path / "probe.jsonl", tmp_path / "trace.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-c", PROBED, str(probe_out), str(ROOT)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        trace = CallTrace(process.pid, probe_out, out)
        trace.label = {"turn": 1, "step": 1}
        started = trace.before()
        time.sleep(0.05)
        trace.after(started, 200)
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()
    assert trace.spin_ms is not None and trace.spin_ms > 0
    line = json.loads(out.read_text())
    assert line["turn"] == 1 and line["status"] == 200
    spins = line["probe"]["spin_cpu_ms"], line["probe_after"]["spin_cpu_ms"]
    assert trace.spin_ms == pytest.approx(sum(spins) / 2)
    assert str(process.pid) in started["threads"]  # the main thread's CPU, read by its native id
    assert line["cpu_ms"] >= 0 and set(line["threads_ms"]) <= {"main"}
