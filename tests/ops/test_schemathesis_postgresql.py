"""The schemathesis run of test_schemathesis.py on PostgreSQL, with the coverage phase (boundary values), in a file
of its own: CI hands whole files to its two workers, and the two runs are the suite's longest tests."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ops.test_schemathesis import st_run_finds_no_server_errors_and_no_schema_violations
from tests.replicas.servers import Postgres, require_binaries


@pytest.fixture
def postgresql() -> Iterator[dict[str, str]]:
    """The environment naming a throwaway PostgreSQL server."""
    require_binaries()
    root = Path(tempfile.mkdtemp(prefix="tda-st-pg-"))
    root.chmod(0o755)  # the postgres user must reach its folder inside
    server = Postgres(root).start()
    try:
        yield {"TDA_DATABASE_URL": server.url()}
    finally:
        server.stop()


def test_st_run_on_postgresql_finds_no_server_errors_and_no_schema_violations(
    tmp_path: Path, postgresql: dict[str, str]
) -> None:
    st_run_finds_no_server_errors_and_no_schema_violations(tmp_path, postgresql)
