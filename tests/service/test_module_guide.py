"""docs/modules.md, followed literally: its files are written into the user module folder, its curl commands are
sent to a running app in order, and the module's notes reach the messages the model is sent."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from tda.app import create_app
from tda.cli import build_parser
from tests.service.support import ScriptedModel

GUIDE = (Path(__file__).resolve().parents[2] / "docs" / "modules.md").read_text()
FILES = re.findall(r"```\w+ file=(\S+)\n(.*?)```", GUIDE, re.S)
SHELL = re.findall(r"```bash\n(.*?)```", GUIDE, re.S)
[REFUSAL] = re.findall(r"```json response=422\n(.*?)```", GUIDE, re.S)
HOST = "http://127.0.0.1:8000"


def commands() -> list[str]:
    """Each command of the guide's shell blocks, continuation lines joined (a -d body may span lines)."""
    found: list[str] = []
    for block in SHELL:
        found += [c.replace("\\\n", " ").strip() for c in re.split(r"\n(?=curl |mkdir |export )", block.strip())]
    return found


def curl(command: str, env: dict[str, Any]) -> tuple[str, str, dict[str, str], Any]:
    """``curl [-X METHOD] URL [-H header]... [-d body]`` as (method, path, headers, json body)."""
    words = shlex.split(re.sub(r"\$([A-Z_]+)", lambda m: str(env[m.group(1)]), command))
    assert words[0] == "curl", command
    method, url, headers, body = "GET", "", {}, None
    i = 1
    while i < len(words):
        word = words[i]
        if word in ("-X", "-H", "-d"):
            value = words[i + 1]
            if word == "-X":
                method = value
            elif word == "-H":
                name, _, header = value.partition(":")
                headers[name.strip()] = header.strip()
            else:
                body = json.loads(value)
            i += 2
        else:
            url, i = word, i + 1
    assert url.startswith(HOST), url
    return method, url.removeprefix(HOST), headers, body


async def test_the_module_guide_takes_a_module_into_a_live_turn(settings):
    names = ("manifest.json", "options.py", "rank.py", "handler.py")
    assert [name for name, _ in FILES] == [f"house_notes/{name}" for name in names]
    model = ScriptedModel("Within 30 days, yes.")
    app = create_app(settings, llm=model.llm, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with app.test_app() as running:
        svc = running.app.extensions["tda"]
        token, _ = await svc.store.tokens.create("guide", "admin")
        client, env = running.test_client(), {"TDA_TOKEN": token}
        replies: list[Any] = []
        for command in commands():
            if command.startswith("mkdir"):  # step 1: the user module folder (the test's own TDA_MODULES_DIR)
                assert command == "mkdir -p ~/.tda/context_modules/house_notes"
                for name, text in FILES:
                    (settings.modules_dir / name).parent.mkdir(parents=True, exist_ok=True)
                    (settings.modules_dir / name).write_text(text)
                continue
            if command.startswith("export TDA_TOKEN="):  # the CLI's command, as written, names a real command
                inner = re.fullmatch(r"export TDA_TOKEN=\$\(tda (.*) \| tail -n 1\)", command)
                assert inner is not None, command
                build_parser().parse_args(shlex.split(inner.group(1)))
                continue
            if command.startswith("export SNAPSHOT_ID="):  # a follow-up turn, its snapshot_id kept for the next step
                inner = re.fullmatch(r"export SNAPSHOT_ID=\$\((curl .*) \| python3 -c '(.*)'\)", command)
                assert inner is not None, command
                command = inner.group(1)
            method, path, headers, body = curl(command, env)
            if path == "/v1/context-window-types":  # the guide's typo first: refused, nothing saved
                typo = json.loads(json.dumps(body).replace('"notes":', '"note":'))
                r = await client.post(path, json=typo, headers=headers)
                assert r.status_code == 422 and json.loads(REFUSAL) in (await r.get_json())["errors"]
            r = await client.open(path, method=method, json=body, headers=headers)
            assert r.status_code in (200, 201), (command, await r.get_json())
            replies.append(await r.get_json())
            env["SNAPSHOT_ID"] = replies[-1].get("snapshot_id", env.get("SNAPSHOT_ID"))

    loaded, _, _, _, turn, _, trace = replies
    assert "house_notes" in {m["module_id"] for m in loaded["modules"]} and loaded["load_errors"] == []
    usage = next(m for m in turn["snapshot"]["modules"] if m["module_id"] == "house_notes")
    assert usage["status"] == "ok" and usage["used"] > 0
    first_turn = next(c for c in model.sent if "return my kettle" in str(c["messages"][-1].get("content")))
    sent = "\n".join(str(m.get("content")) for m in first_turn["messages"])
    notes = ["Refunds are accepted within 30 days", "A kettle carries", "We never share order details"]
    assert all(n in sent for n in notes)
    assert sent.index(notes[0]) < sent.index(notes[1]) < sent.index(notes[2])  # most words shared first
    assert "House notes:" in sent
    assert any("Refunds are accepted" in json.dumps(m) for m in trace["messages"])
