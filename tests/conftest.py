"""Shared fixtures."""

from __future__ import annotations

import os
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
