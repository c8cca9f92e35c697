"""The `tda` command on the shipped examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tda.cli import main

EXAMPLE = Path(__file__).parents[1] / "examples" / "session.json"


def test_assemble_prints_the_snapshot_table(capsys):
    assert main(["assemble", "--session", str(EXAMPLE), "--limit", "16000"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Balanced: ")
    assert "conversation_history" in out and "sliding_window" in out
    assert "limit 16,000 (context)" in out


def test_assemble_json_has_snapshot_messages_and_tools(capsys):
    assert main(["assemble", "--session", str(EXAMPLE), "--type", "token_efficient", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    snap = data["snapshot"]
    assert snap["window_type_id"] == "token_efficient"
    assert snap["total_used"] <= snap["available_budget"]
    assert data["messages"][-1]["role"] == "user"
    withdrawn = [m for m in data["messages"] if m["content"] == "Ignore that last one, I meant 2024."]
    assert withdrawn == []  # invalid messages never reach the model


def test_assemble_with_a_type_file(tmp_path, capsys):
    from tda.builtins import DEFAULT_TYPES

    custom = DEFAULT_TYPES["conversation_first"].model_dump(mode="json") | {"id": "mine", "name": "Mine"}
    path = tmp_path / "type.json"
    path.write_text(json.dumps(custom))
    assert main(["assemble", "--session", str(EXAMPLE), "--type-file", str(path)]) == 0
    assert capsys.readouterr().out.startswith("Mine: ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--type", "nope"], "unknown window type 'nope'"),
        (["--limit", "10"], "non-condensable floor"),
    ],
)
def test_assemble_errors_are_one_clear_line(args, message, capsys):
    assert main(["assemble", "--session", str(EXAMPLE), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_bad_session_file_says_where(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"query": "q", "profile": {"type": "robot"}}))
    assert main(["assemble", "--session", str(bad)]) == 2
    assert "profile.type" in capsys.readouterr().err


def test_types_and_modules_commands(capsys):
    assert main(["types", "list"]) == 0
    assert "balanced" in capsys.readouterr().out
    assert main(["types", "show", "knowledge_heavy"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "Knowledge Heavy"
    assert main(["types", "export"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 4
    assert main(["modules", "list"]) == 0
    assert "system_prompt" in capsys.readouterr().out


@pytest.mark.parametrize(("flags", "method"), [((), "lexical+dense"), (("--no-embedder",), "lexical")])
def test_assemble_recalls_with_the_services_embedder_unless_told_not_to(tmp_path, capsys, flags, method):
    fact = "My sister Margot adopted a three-legged greyhound called Biscuit last spring."
    filler = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"Message {i} about the weather and trains."}
        for i in range(200)
    ]
    session = {"query": "What is the name of Margot's greyhound?", "messages": [{"role": "user", "content": fact}]}
    session["messages"] += filler
    path = tmp_path / "long.json"
    path.write_text(json.dumps(session), encoding="utf-8")
    args = ["assemble", "--session", str(path), "--type", "conversation_first", "--limit", "2000", "--json"]
    assert main([*args, *flags]) == 0
    data = json.loads(capsys.readouterr().out)
    history = next(m for m in data["snapshot"]["modules"] if m["module_id"] == "conversation_history")
    assert history["metadata"]["recall"] == method
    assert fact in [m["content"] for m in data["messages"]]
