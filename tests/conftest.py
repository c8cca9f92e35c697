"""Shared fixtures."""

from __future__ import annotations

import pytest
from hypothesis import settings

from components.context_window.module_registry import ModuleRegistry
from tda.builtins import module_registry
from tda.config import offline_library_defaults

offline_library_defaults()  # as the application does at start-up: tiktoken and litellm stay offline

# Speed is measured in bench/, not by timed tests: no per-example deadline (a loaded CI machine is not a failure).
settings.register_profile("tda", deadline=None)
settings.load_profile("tda")


@pytest.fixture(scope="session")
def builtin_registry() -> ModuleRegistry:
    """The built-in modules, discovered from modules/ exactly as the application does."""
    return module_registry(entry_point_group=None).load()
