"""The README and docs/ are self-contained: every relative link names a file inside the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve_inside_the_repository(page: Path) -> None:
    targets = [t for t in LINK.findall(page.read_text()) if not re.match(r"[a-z]+:", t)]
    for target in targets:
        resolved = (page.parent / target).resolve()
        assert resolved.is_relative_to(ROOT), f"{page.name} links {target}, outside the repository"
        assert resolved.exists(), f"{page.name} links {target}, which does not exist"


def test_the_readme_links_the_architecture_map() -> None:
    assert "](docs/architecture.md)" in (ROOT / "README.md").read_text()
    assert "## One turn, as data" in (ROOT / "docs" / "architecture.md").read_text()
