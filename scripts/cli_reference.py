"""Write docs/cli.md: every `tda` command's --help, generated from the parser so it cannot drift.

Run `python scripts/cli_reference.py` after changing a command; tests/test_docs.py fails until the page matches."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
WIDTH = "100"
"""argparse wraps help to the terminal's width: fixed, so the page is the same on every machine."""


def parsers(parser: argparse.ArgumentParser, words: str = "tda") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, f"{words} {name}")


def reference() -> str:
    """The page, for a terminal ``COLUMNS`` wide (set to ``WIDTH`` by the caller)."""
    from tda.cli import build_parser

    lines = [
        "# Command-line reference",
        "",
        "Generated from the parser by `python scripts/cli_reference.py` (tests/test_docs.py checks it is current).",
        "Settings (`TDA_*` variables) are in [service.md](service.md), [operations.md](operations.md) and",
        "[agents.md](agents.md).",
    ]
    for words, parser in parsers(build_parser()):
        parser.prog = words
        lines += ["", f"## `{words}`", "", "```text", parser.format_help().rstrip(), "```"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.path.insert(0, str(PAGE.parents[1]))
    os.environ["COLUMNS"] = WIDTH
    PAGE.write_text(reference())
    print(f"wrote {PAGE}")
