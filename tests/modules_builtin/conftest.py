"""Fixtures for the built-in module tests: load a module from its folder, build contexts, measure."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from components.context_window.base import (
    AssemblyContext,
    ContextModule,
    Contribution,
    Directives,
    ModuleManifest,
    Profile,
    Session,
)
from components.context_window.token_estimator import estimator_for

ROOT = Path(__file__).resolve().parents[2]
MODEL = "gpt-4o"


def load_builtin(module_id: str) -> ContextModule:
    """Validate ``modules/<id>/manifest.json`` and build the handler class it names, as the registry does."""
    folder = ROOT / "modules" / module_id
    manifest = ModuleManifest.model_validate_json((folder / "manifest.json").read_text())
    assert manifest.handler is not None and manifest.handler.file == "handler.py"
    handler = importlib.import_module(f"modules.{module_id}.handler")
    return getattr(handler, manifest.handler.class_)(manifest)


def make_ctx(
    query: str = "What changed?",
    *,
    profile: Profile | None = None,
    session: Session | None = None,
    config: dict[str, Any] | None = None,
    **fields: Any,
) -> AssemblyContext:
    ctx = AssemblyContext(
        query=query,
        profile=profile or Profile(id="profile-1"),
        session=session or Session(id="s1"),
        model=MODEL,
        **fields,
    )
    return ctx.for_module(Directives(config=config or {}), estimator_for(MODEL))


def used(contribution: Contribution) -> int:
    """Tokens of the exact text sent, as the orchestrator counts them."""
    return estimator_for(MODEL).count(contribution.text())


@pytest.fixture(scope="session")
def builtin() -> Callable[[str], ContextModule]:
    return load_builtin


@pytest.fixture(scope="session")
def ctx_for() -> Callable[..., AssemblyContext]:
    return make_ctx


@pytest.fixture(scope="session")
def tokens_used() -> Callable[[Contribution], int]:
    return used


@pytest.fixture(scope="session")
def run() -> Callable[..., Any]:
    """Run a coroutine to completion (hypothesis tests are synchronous)."""
    return asyncio.run
