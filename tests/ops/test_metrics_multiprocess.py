"""With PROMETHEUS_MULTIPROC_DIR, /metrics sums what every worker process counted, whichever worker answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tda.metrics import forget_process
from tests.ops.live import ROOT

WORKER = """
import sys
from tda import metrics
metrics.TURN_SECONDS.observe(0.2)
metrics.TOKENS_USED.labels("system_prompt").inc(int(sys.argv[1]))
metrics.SSE_SUBSCRIBERS.inc(2)
print(__import__("os").getpid())
"""

SCRAPE = """
import sys
from pathlib import Path
from tda.metrics import exposition
sys.stdout.write(exposition(Path(sys.argv[1]))[0].decode())
"""


def _python(code: str, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_metrics_of_several_worker_processes_are_summed(tmp_path: Path) -> None:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    pids = [int(_python(WORKER, env, "30")), int(_python(WORKER, env, "12"))]  # two workers, each counting

    def scrape() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        text = _python(SCRAPE, env, str(tmp_path))
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }

    samples = scrape()
    assert samples[("tda_turn_seconds_count", ())] == 2
    assert samples[("tda_module_tokens_used_total", (("module", "system_prompt"),))] == 42
    assert samples[("tda_sse_subscribers", ())] == 4
    for pid in pids:  # what `tda serve --workers` does when a worker exits
        forget_process(tmp_path, pid)
    samples = scrape()
    assert samples[("tda_turn_seconds_count", ())] == 2  # what they counted stays counted...
    assert samples.get(("tda_sse_subscribers", ()), 0) == 0  # ...their open streams no longer do
