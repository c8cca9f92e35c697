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
from werkzeug.routing import Rule

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

_compile_builder = Rule._compile_builder
_builders: dict[tuple[Any, ...], Any] = {}


def _shared_builder(rule: Rule, append_unknown: bool = True) -> Any:
    """Werkzeug's URL builder of ``rule``, compiled once per process rather than once per app: the suite builds an
    app per test, and compiling the builders of its routes is a third of ``create_app``. A builder is a function of
    the rule's parsed parts alone (the rule is its first argument), so rules that parse alike share it; a rule with
    defaults (converted into the builder) compiles its own."""
    if rule.defaults:
        return _compile_builder(rule, append_unknown)
    key = (rule.rule, tuple(rule._trace), append_unknown)
    if key not in _builders:
        _builders[key] = _compile_builder(rule, append_unknown)
    return _builders[key]


Rule._compile_builder = _shared_builder  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def builtin_registry() -> ModuleRegistry:
    """The built-in modules, discovered from modules/ exactly as the application does."""
    return module_registry(entry_point_group=None).load()


# `make test` hands work to its three workers (--dist loadfile) a file at a time, or a folder of SHARED_SERVERS at a
# time: their tests share servers a session fixture starts once per worker (`tda serve` and Chromium; the gateway's
# `tda serve` and fake upstream; the replicas' PostgreSQL, Redis, Chroma and two replicas), so one worker starts
# them, not each. Work goes out in collection order (--no-loadscope-reorder: xdist would otherwise start with the
# units holding the most tests): the units that took longest in CI first, so that none of them starts last while
# the other workers have nothing left to run (docs/operations.md, "CI time"); the rest as xdist would order them,
# most tests first.
SHARED_SERVERS = ("tests/browser/", "tests/gateway/", "tests/replicas/")
LONGEST_FIRST = (  # measured: seconds of worker time in a clean-clone CI run (session 34, load 9-12)
    "tests/browser/",  # 552
    "tests/replicas/",  # 204
    "tests/service/test_turn_recall_service.py",  # 201
    "tests/ops/test_schemathesis_postgresql.py",  # 195: the coverage phase
    "tests/knowledge/test_knowledge_embeddings.py",  # 164: torch and sentence-transformers
    "tests/service/test_openapi_fuzz.py",  # 162
    "tests/gateway/",  # 162
    "tests/ops/test_schemathesis.py",  # 125: SQLite
    "tests/service/test_launch.py",  # 125
    "tests/service/test_bad_input.py",  # 107
    "tests/test_invariants.py",  # 103
    "tests/service/test_history_vectors.py",  # 85
    "tests/test_full_window.py",  # 81
    "tests/test_openai_call.py",  # 80
    "tests/service/test_history_scale.py",  # 78
    "tests/service/test_traces_out.py",  # 75
    "tests/service/test_upstream_redirect.py",  # 60
)


def work_unit(path: str) -> str:
    """What a CI worker runs whole: the test file at ``path`` (relative to the checkout), or its SHARED_SERVERS
    folder."""
    return next((folder for folder in SHARED_SERVERS if path.startswith(folder)), path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """--dist loadfile with SHARED_SERVERS' folders as units (xdist's own scheduler for any other mode)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ByWorkUnit(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(super()._split_scope(nodeid))

    return ByWorkUnit(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    root = Path(__file__).resolve().parents[1]
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    file_of = {item: item.path.relative_to(root).as_posix() for item in items}
    unit_of = {item: work_unit(file) for item, file in file_of.items()}
    tests_in = Counter(unit_of.values())
    items.sort(key=lambda item: (rank.get(unit_of[item], len(rank)), -tests_in[unit_of[item]], file_of[item]))
