"""The README and docs/ are self-contained: every relative link names a file inside the repository."""

from __future__ import annotations

import re
import subprocess
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


SOURCES = [
    ROOT / name
    for name in subprocess.run(
        ["git", "ls-files", "-z", "--", "*.py", "*.c", "*.sh", "*.yaml", "Makefile", ".ci/run"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    .stdout.decode()
    .split("\0")
    if name
]
"""The repository's own code (git's tracked files: not a venv or a peer's install a bench left in the checkout)."""
CITATION = re.compile(
    r"(?<![\w/.\"'-])(?P<page>(?:docs/[\w/-]+|[A-Z]+)\.md)"
    r"(?:#(?P<anchor>[\w-]+)|,? sessions? (?P<session>\d+)(?:-(?P<last>\d+))?"
    r"|(?P<titles>,? \"[^\"]+\"(?:(?:,| and) \"[^\"]+\")*))?"
)
"""How code cites a doc: ``docs/<page>.md, "Title"`` (more titles after a comma or "and"), ``docs/<page>.md "Title"``,
``docs/<page>.md, session N`` or ``sessions N-M`` (a log's entries), ``docs/<page>.md#anchor``, or the page alone."""
CONTINUED = re.compile(r"\s*\n\s*(?:#|\*(?!\*))?\s*")
"""A line break inside a comment or docstring, with the next line's indent and comment marker: a title may wrap."""
SECTION = re.compile(r"^(?:#+ +|\s*(?:[*-] +)?\*\*|\s*(?:[*-] +)?(?=Session \d))(?P<title>.+)$", re.MULTILINE)
"""What a reader finds a cited title at: a heading, a bold lead-in, or a log entry opening "Session N (...)"."""


def _sections(page: Path) -> list[str]:
    """The page's section titles, as cited: their marks dropped, lower-case; a log entry's "Session 48 (youngcpu2, issue
    32 ...)" also by its short name "Session 48 (youngcpu2)"."""
    titles = [m["title"].replace("`", "").replace("*", "").casefold() for m in SECTION.finditer(page.read_text())]
    short = [re.sub(r"^(session \d+ \([^,()]*),.*", r"\1)", t) for t in titles]
    return titles + short


def _slug(title: str) -> str:
    """A heading's anchor as GitHub makes it (from its lower-case title)."""
    return re.sub(r"[^\w\- ]", "", title).replace(" ", "-")


def _missing(source: Path) -> list[str]:
    """The doc citations in ``source`` that name a page, section or anchor the repository does not have."""
    missing = []
    for cited in CITATION.finditer(CONTINUED.sub(" ", source.read_text())):
        page = ROOT / cited["page"]
        if not page.is_file():
            missing.append(cited[0])
            continue
        sections = _sections(page)
        wanted = re.findall(r"\"([^\"]+)\"", cited["titles"] or "")
        if cited["session"]:
            wanted += {f"session {cited['session']}", f"session {cited['last'] or cited['session']}"}
        missing += [
            f'{cited["page"]}, "{title}"'
            for title in wanted
            if not any(s.startswith(title.casefold().rstrip(".")) for s in sections)
        ]
        if cited["anchor"] and cited["anchor"] not in {_slug(s) for s in sections}:
            missing.append(cited[0])
    return missing


def test_code_cites_doc_sections_that_exist() -> None:
    """A comment or docstring that cites a doc's section by its title, session or anchor names one the page has:
    docs are rewritten and their logs moved (docs/history/), and a reader who follows a citation must find it."""
    stale = {str(p.relative_to(ROOT)): m for p in SOURCES if (m := _missing(p))}
    assert not stale, f"{sum(map(len, stale.values()))} stale doc citations: {stale}"
