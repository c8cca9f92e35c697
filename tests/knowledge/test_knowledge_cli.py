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
    assert "loading the embedding model" in err and "chunk" in err  # progress on stderr, in chunks

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


# --- tda knowledge context --------------------------------------------------------------------------


@pytest.fixture
def home(settings: Settings, docs: Path, capsys: pytest.CaptureFixture[str]) -> str:
    files = [str(docs / "kettle.md"), str(docs / "toaster.txt")]
    assert run(settings, "ingest", *files, "--collection", "home", "--embedder", "hashing", "--quiet") == 0
    capsys.readouterr()
    return "home"


def gpt4o_tokens(text: str) -> int:
    """An independent count: tiktoken's own encoding for the model, not the project's estimator."""
    import tiktoken

    return len(tiktoken.encoding_for_model("gpt-4o").encode(text))


def test_context_prints_what_the_module_contributes_within_the_budget(
    settings: Settings, home: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(settings, "context", "--collection", home, "--budget", "200", "--query", "descale the kettle") == 0
    out, err = capsys.readouterr()
    assert out.startswith("Knowledge base excerpts.") and "[SOURCE 1] Kettle › Descaling" in out
    assert "white vinegar" in out and gpt4o_tokens(out.rstrip("\n")) <= 200
    assert "of 200 tokens; sources: [1]" in err

    assert run(settings, "context", "--collection", home, "--budget", "30", "--query", "descale", "--json") == 0
    row = json.loads(capsys.readouterr().out)
    assert row["id"] is None and row["tokens"] == gpt4o_tokens(row["text"]) and row["tokens"] <= 30


def test_context_answers_a_whole_queries_file_as_json_lines_in_order(
    settings: Settings, home: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "q.jsonl"
    lines = [{"id": "a", "query": "crumb tray"}, {"id": 7, "query": "kettle descaling vinegar"}]
    queries.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    assert run(settings, "context", "--collection", home, "--budget", "120", "--queries", str(queries)) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in rows] == ["a", 7]
    assert set(rows[0]) == {"id", "text", "tokens", "sources"}
    assert "crumb tray" in rows[0]["text"] and "vinegar" in rows[1]["text"]
    assert all(r["tokens"] == gpt4o_tokens(r["text"]) <= 120 for r in rows)
    assert rows[1]["sources"][0]["document_id"].endswith("kettle.md")


def test_context_refuses_bad_input_before_running_anything(
    settings: Settings, home: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": 1, "query": "crumb tray"}\n{"id": 2}\n')
    assert run(settings, "context", "--collection", home, "--budget", "100", "--queries", str(queries)) == 2
    out, err = capsys.readouterr()
    assert out == "" and 'q.jsonl:2: each line needs "id" and a "query" string' in err
    queries.write_text("not json\n")
    assert run(settings, "context", "--collection", home, "--budget", "100", "--queries", str(queries)) == 2
    assert "q.jsonl:1: not JSON" in capsys.readouterr().err
    assert run(settings, "context", "--collection", "nope", "--budget", "100", "--query", "x") == 2
    assert "no knowledge collection named 'nope'" in capsys.readouterr().err
    assert run(settings, "context", "--collection", home, "--budget", "100", "--query", "x", "--config", "k") == 2
    assert "write KEY=VALUE" in capsys.readouterr().err


def test_a_closed_pipe_ends_the_command_quietly(settings: Settings, home: str, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": i, "query": "kettle"}) + "\n" for i in range(400)))
    env = {**os.environ, "TDA_DATA_DIR": str(settings.data_dir)}
    command = [sys.executable, "-m", "tda.cli", "knowledge", "context", "--collection", home, "--budget", "60"]
    with subprocess.Popen(
        [*command, "--queries", str(queries)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        proc.stdout.close()  # what `| head -1` does
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=120)
    assert json.loads(first)["id"] == 0
    assert "Traceback" not in err and "BrokenPipeError" not in err and code == 0


def test_search_says_why_it_returns_fewer_than_k(
    settings: Settings, home: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(settings, "search", "descale the kettle with vinegar", "--collection", home, "-k", "5", "--json") == 0
    floored = json.loads(capsys.readouterr().out)
    assert run(settings, "search", "descale the kettle with vinegar", "--collection", home, "-k", "5") == 0
    err = capsys.readouterr().err
    assert f"{len(floored)} of -k 5 passages" in err and "--relative-floor 0.5" in err
    everything = ["--relative-floor", "0", "--json"]
    assert run(settings, "search", "descale the kettle with vinegar", "--collection", home, "-k", "5", *everything) == 0
    assert len(json.loads(capsys.readouterr().out)) >= len(floored)


def test_the_default_data_directory_is_the_users_never_the_working_directory() -> None:
    home = Path.home()
    assert Settings.from_env({}).data_dir == home / ".local" / "share" / "tda"
    assert Settings.from_env({"XDG_DATA_HOME": "/srv/data"}).data_dir == Path("/srv/data/tda")
    assert (
        Settings.from_env({"XDG_DATA_HOME": "relative"}).data_dir == home / ".local" / "share" / "tda"
    )  # XDG: ignored
    assert Settings.from_env({"TDA_DATA_DIR": "var", "XDG_DATA_HOME": "/srv/data"}).data_dir == Path("var")
