"""schemathesis against /openapi.json: generated requests (valid and invalid) never get a 5xx."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tda.app import create_app
from tda.config import Settings
from tda.demo import seed_demo
from tda.store import Store


@pytest.fixture(scope="module")
def fuzz_target(tmp_path_factory: pytest.TempPathFactory, template_db_for_fuzz: Path) -> tuple[Any, dict[str, str]]:
    data = tmp_path_factory.mktemp("fuzz")
    shutil.copy(template_db_for_fuzz, data / "tda.db")
    settings_ = Settings(data_dir=data, modules_dir=data / "modules", mock_model=True, embedder="hashing")

    async def seed() -> dict[str, str]:
        store = Store.connect(settings_.sqlalchemy_url)
        try:
            await seed_demo(store)  # real rows, so some generated requests reach past the 404s
            await store.projects.create("fuzzers", "test")
            return {
                "admin": (await store.tokens.create("fuzz", "admin"))[0],
                # another project's admin: every read filtered, the demo's rows all someone else's
                "project admin": (await store.tokens.create("fuzz-p", "admin", project="fuzzers"))[0],
                "operator": (await store.tokens.create("fuzz-o", "operator"))[0],  # projects and tokens too
            }
        finally:
            await store.close()

    token = asyncio.run(seed())
    # /v1/chat/completions creates its session, so generated requests run real turns: import litellm here,
    # outside any request's 10 s read timeout (a served app preloads it at start-up the same way).
    from tda.llm import _litellm

    _litellm()
    return create_app(settings_, migrate=False, warm_up_llm=False, warm_up_knowledge=False), token


@pytest.fixture(scope="module")
def template_db_for_fuzz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tda.db import upgrade

    path = tmp_path_factory.mktemp("fuzz-template") / "tda.db"
    upgrade(f"sqlite+aiosqlite:///{path}")
    return path


EXAMPLES_PER_OPERATION = 4


def test_no_server_errors(fuzz_target: tuple[Any, dict[str, str]]) -> None:
    """Every operation, with valid and with invalid inputs, a few examples each (bounded to stay fast), as the
    default project's admin, another project's admin and an operator."""
    app, tokens = fuzz_target
    # Event streams never end by themselves; they are tested in test_sse.py.
    schema = schemathesis.openapi.from_asgi("/openapi.json", app).exclude(path_regex=r"/events$")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 30
    _fuzz(operations, {caller: {"Authorization": f"Bearer {token}"} for caller, token in tokens.items()})


def _fuzz(operations: list[Any], callers: dict[str, dict[str, str]]) -> None:
    """Each generated case sent once as each caller. Derandomized, the examples are the same for every caller, and
    drawing them is two thirds of the time: a case is drawn once and sent three times, not drawn three times."""
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(mode))
            @settings(
                max_examples=EXAMPLES_PER_OPERATION,
                deadline=None,
                derandomize=True,
                suppress_health_check=list(HealthCheck),
                database=None,
            )
            def no_5xx(case: Any) -> None:
                for caller, headers in callers.items():
                    response = case.call(headers=headers)
                    assert response.status_code < 500, (
                        f"{case.method} {case.formatted_path} as the {caller} -> "
                        f"{response.status_code}: {response.text[:500]}"
                    )

            try:
                no_5xx()
            except Unsatisfiable:
                assert mode == GenerationMode.NEGATIVE, operation.label  # no inputs: nothing invalid to send
