"""`tda knowledge ingest | search | list | delete` as a user runs them (hashing embedder, temp data dir)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tda.cli import build_parser
from tda.config import Settings


def run(settings: Settings, *argv: str) -> int:
    args = build_parser().parse_args(["knowledge", *argv])
    return args.func(args, settings)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data")


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "kettle.md").write_text("# Kettle\n\n## Descaling\n\nDescale the kettle monthly with white vinegar.\n")
    (root / "toaster.txt").write_text("Toaster\n\nEmpty the crumb tray every week.\n")
    (root / "bad.html").write_bytes(b"\x00\x00binary junk")
    return root


def test_ingest_reports_per_file_and_exits_1_when_any_file_failed(
    settings: Settings, docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run(settings, "ingest", str(docs), "--collection", "home", "--embedder", "hashing")
    out, err = capsys.readouterr()
    assert code == 1
    assert "looks binary" in err and "bad.html" in err
    assert "added      " in out and "kettle.md (1 chunks)" in out
    assert "2 of 3 files ingested into 'home': 2 new chunks" in out
    assert "file" in err  # the progress bar went to stderr

    code = run(settings, "ingest", str(docs / "kettle.md"), "--collection", "home", "--embedder", "hashing", "--quiet")
    assert code == 0 and "unchanged" in capsys.readouterr().out


def test_search_list_and_delete(settings: Settings, docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(
        settings,
        "ingest",
        str(docs / "kettle.md"),
        str(docs / "toaster.txt"),
        "--collection",
        "home",
        "--embedder",
        "hashing",
        "--quiet",
    )
    capsys.readouterr()

    assert run(settings, "search", "how often descale the kettle", "--collection", "home", "-k", "1") == 0
    out = capsys.readouterr().out
    assert out.startswith("[1] ") and "Kettle › Descaling" in out and "white vinegar" in out

    assert run(settings, "search", "crumb tray", "--json") == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["collection"] == "home" and "crumb tray" in rows[0]["text"]

    assert run(settings, "list") == 0
    assert "home" in capsys.readouterr().out
    assert run(settings, "list", "--collection", "home") == 0
    listed = capsys.readouterr().out.split()
    assert len(listed) == 2 and listed[0].endswith("kettle.md")

    assert run(settings, "delete", "--collection", "home", "--document", listed[0]) == 0
    assert "deleted" in capsys.readouterr().out
    assert run(settings, "delete", "--collection", "home", "--document", "nope") == 2
    assert "no document 'nope'" in capsys.readouterr().err
    assert run(settings, "delete", "--collection", "home") == 0
    assert run(settings, "list") == 0
    assert "no knowledge collections yet" in capsys.readouterr().out


def test_bad_input_exits_2_with_a_message(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(settings, "search", "x", "--collection", "missing") == 2
    assert "no knowledge collection named 'missing'" in capsys.readouterr().err
    assert run(settings, "ingest", "nothing.txt", "--collection", "a b") == 2
    assert "invalid collection name" in capsys.readouterr().err
