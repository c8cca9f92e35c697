"""The documentation names everything a user can set or call (as datasette's test_docs does): every ``TDA_*``
setting and every plugin hook appear in the README or docs/, and docs/cli.md is every ``tda`` command's help. A new
one without its paragraph fails here, so the docs cannot silently fall behind the code."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from components.context_window import hookspecs
from tda.config import Settings

ROOT = Path(__file__).resolve().parents[1]
DOCS = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
SETTINGS = sorted(f.metadata["env"] for f in dataclasses.fields(Settings))
HOOKS = sorted(name for name, _ in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("tda_"))


@pytest.mark.parametrize("variable", SETTINGS)
def test_every_setting_is_documented(variable: str) -> None:
    assert re.search(rf"\b{variable}\b", DOCS), f"{variable} is read in tda/config.py but no page documents it"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_plugin_hook_is_documented(hook: str) -> None:
    guide = (ROOT / "docs" / "modules.md").read_text()
    assert hook in guide, f"the hook {hook} (hookspecs.py) is missing from docs/modules.md"


def test_the_command_line_reference_is_current(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/cli.md is every command's --help, generated from the parser: a new command or option is documented."""
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    from cli_reference import PAGE, WIDTH, reference

    monkeypatch.setenv("COLUMNS", WIDTH)

    assert PAGE.read_text() == reference(), "docs/cli.md is out of date: run `python scripts/cli_reference.py`"


def test_the_lists_are_not_empty() -> None:
    """A walk that found nothing would pass every test above."""
    assert len(SETTINGS) > 20 and len(HOOKS) >= 3
