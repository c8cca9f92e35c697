"""Shared fixtures."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from quart import Quart
from quart.testing import TestApp

from components.context_window.module_registry import ModuleRegistry
from tda.builtins import module_registry
from tda.config import offline_library_defaults

offline_library_defaults()  # as the application does at start-up: tiktoken and litellm stay offline

# Speed is measured in bench/, not by timed tests: no per-example deadline (a loaded CI machine is not a failure).
# In CI the examples are derived from each test rather than drawn at random, so a run is repeatable; a developer's
# runs keep drawing new ones (two real bugs were found that way).
settings.register_profile("tda", deadline=None, derandomize=bool(os.environ.get("CI")))
settings.load_profile("tda")


class PatientTestApp(TestApp):
    """``app.test_app()`` with a patient start-up and shutdown: Quart allows 6 s, which a loaded 2-core machine
    exceeds (a start-up that times out also leaves its database connections to be collected in a later test)."""

    def __init__(self, app: Any, startup_timeout: int = 120, shutdown_timeout: int = 120) -> None:
        super().__init__(app, startup_timeout, shutdown_timeout)


Quart.test_app_class = PatientTestApp


@pytest.fixture(scope="session")
def builtin_registry() -> ModuleRegistry:
    """The built-in modules, discovered from modules/ exactly as the application does."""
    return module_registry(entry_point_group=None).load()


# `make test` hands whole files to its two workers (--dist loadfile) in collection order (--no-loadscope-reorder:
# xdist would otherwise start with the files holding the most tests). The files that took longest in CI go first,
# so that none of them starts last while the other worker has nothing left to run (docs/operations.md, "CI time").
# The rest follow as xdist would order them: most tests first.
LONGEST_FIRST = (  # measured: a clean-clone CI with --durations=60 (seconds at load 5-14; session 33: load 4-12)
    "tests/ops/test_schemathesis_postgresql.py",  # 139 (coverage phase; session 32: 203)
    "tests/ops/test_schemathesis.py",  # 47 (SQLite; session 32: 111)
    "tests/service/test_openapi_fuzz.py",  # 154
    "tests/knowledge/test_knowledge_embeddings.py",  # 162: torch and sentence-transformers
    "tests/test_invariants.py",  # 136
    "tests/service/test_launch.py",  # 103
    "tests/ops/test_durability.py",  # 102
    "tests/ops/test_wheel.py",  # 100: builds the wheel and installs it into a fresh venv
    "tests/ops/test_memory.py",
    "tests/gateway/test_frameworks.py",
    "tests/replicas/test_faults.py",
    "tests/replicas/test_workers.py",
    "tests/ops/test_metrics_multiprocess.py",
    "tests/ops/test_serve_security.py",
    "tests/ops/test_backup.py",
    "tests/knowledge/test_knowledge_chroma_server.py",
    "tests/service/test_history_scale.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    root = Path(__file__).resolve().parents[1]
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    file_of = {item: item.path.relative_to(root).as_posix() for item in items}
    tests_in = Counter(file_of.values())
    items.sort(key=lambda item: (rank.get(file_of[item], len(rank)), -tests_in[file_of[item]], file_of[item]))
