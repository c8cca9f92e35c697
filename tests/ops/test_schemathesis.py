"""The schemathesis CLI (`st run`) against a live `tda serve` with an admin token, on SQLite and on PostgreSQL:
every check on (the response time bounded as the request is: speed is measured in bench/, and a loaded machine is
not a failure), a bounded number of examples per operation, a fixed seed. It must find no 5xx and no response that
breaks the document.

The coverage phase (boundary values, about 50 requests per operation: 95% of a run's time) runs on PostgreSQL, the
backend with the stricter column types (NUL bytes, integer widths), in its own file
(test_schemathesis_postgresql.py) so that the two runs go to both CI workers; SQLite, here, runs the other phases
(examples, fuzzing, stateful)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.ops.live import Live, cli, free_port, tda_env, token_in

HERE = Path(__file__).resolve().parent
ST = Path(sys.executable).with_name("st")
MAX_EXAMPLES = 2
"""Per operation and phase; the coverage phase adds its own boundary cases (about 50 requests per operation)."""
PHASES = {"sqlite": "examples,fuzzing,stateful", "postgresql": "examples,coverage,fuzzing,stateful"}
"""By backend (the database URL's scheme, or sqlite)."""


def test_st_run_on_sqlite_finds_no_server_errors_and_no_schema_violations(tmp_path: Path) -> None:
    st_run_finds_no_server_errors_and_no_schema_violations(tmp_path, {})


def st_run_finds_no_server_errors_and_no_schema_violations(tmp_path: Path, database: dict[str, str]) -> None:
    """`st run` against a server on ``database`` (the environment naming the backend; empty: SQLite)."""
    # One client sends thousands of requests without or with a wrong token (the ignored_auth check): the per-client
    # limit on failed auth (tests/service/test_proxies_and_limits.py) would answer it 429 for everything else.
    env = tda_env(tmp_path / "data", free_port(), TDA_AUTH_FAILURES_PER_MINUTE="1000000", **database)
    backend = env.get("TDA_DATABASE_URL", "sqlite").split(":")[0].split("+")[0]
    token = token_in(cli([sys.executable, "-m", "tda.cli", "demo"], env))  # real rows: requests reach past 404s
    server = Live(env, tmp_path / "serve.log")
    server.start()
    report = tmp_path / "report.json"
    try:
        done = subprocess.run(
            [
                str(ST),
                "--config-file",
                str(HERE / "schemathesis.toml"),
                "run",
                f"{server.url}/openapi.json",
                "-H",
                f"Authorization: Bearer {token}",
                "--checks",
                "all",
                "--max-response-time",
                "120",  # as --request-timeout: `--checks all` holds responses to 10 s, which a loaded machine exceeds
                "--phases",
                PHASES[backend],
                "--max-examples",
                str(MAX_EXAMPLES),
                "--exclude-path-regex",
                "/events$",  # event streams never end by themselves (tests/service/test_sse.py covers them)
                "--workers",
                "1",
                "--seed",
                "1",
                "--generation-database",
                "none",
                "--request-timeout",
                "120",  # the largest schema-valid bodies (16 MiB of messages, each counted) take a while
                "--no-color",
                "--report",
                "json",
                "--report-json-path",
                str(report),
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        server.stop()
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(report.read_text())
    failures = result["failures"]
    server_error_codes = {"ST101", "ST102"}  # `st explain --list`: 5xx answers
    server_errors = sum(f["count"] for f in failures if f["code"] in server_error_codes)
    violations = sum(f["count"] for f in failures if f["code"] not in server_error_codes)
    print(
        f"\nschemathesis ({backend}): {result['operations']['tested']} operations, "
        f"{result['test_cases']['generated']} examples, "
        f"{server_errors} 5xx, {violations} schema violations ({result['running_time']:.0f} s)"
    )
    assert result["operations"]["tested"] >= 40 and result["operations"]["errored"] == 0
    assert failures == [], json.dumps(failures, indent=1)[:4000]
    assert done.returncode == 0, done.stdout[-6000:]
