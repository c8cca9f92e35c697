"""Durability: SIGKILL `tda serve` in the middle of a loop of type saves and turns, restart it, and every write
that got a 2xx answer is there, the champion case each turn's 201 named included; the SQLite file passes
`PRAGMA integrity_check`. Then `tda db backup` copies the
database while the restarted server keeps writing, and the copy holds everything too."""

from __future__ import annotations

import http.client
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.ops.live import Live, cli, free_port, tda_env, token_in

RUN_BEFORE_KILL_S = 1.0


BASE: dict[str, Any] = {}
"""The shipped Balanced type, fetched once: each save writes a copy under a new id."""


def _type(type_id: str, note: str) -> dict[str, Any]:
    return {**BASE, "id": type_id, "name": type_id, "description": note, "is_default": False}


class Writer(threading.Thread):
    """Keeps writing until told to stop; remembers every write the server acknowledged with a 2xx."""

    def __init__(self, server: Live, kind: str) -> None:
        super().__init__(daemon=True)
        self.server, self.kind = server, kind
        self.acknowledged: list[Any] = []
        self.cases: list[str] = []
        """The champion_case_id each acknowledged turn named."""
        self.attempts = 0
        self.refused: list[Any] = []
        """(status, body) of the first answers that were not 2xx, to say why if nothing was acknowledged."""
        self.stop = threading.Event()
        self.enough = 5 if kind == "types" else 3

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            i += 1
            self.attempts += 1
            try:
                self.write(i)
            except (OSError, http.client.HTTPException):  # the server is gone, or died mid-answer: not acknowledged
                time.sleep(0.01)

    def write(self, i: int) -> None:
        if self.kind == "types":
            status, _, body = self.server.call("POST", "/v1/context-window-types", _type(f"dur_{i}", f"save {i}"))
            if status == 201:
                self.acknowledged.append((body["id"], body["version"]))
            elif len(self.refused) < 3:
                self.refused.append((status, body))
        else:
            status, _, body = self.server.call("POST", "/v1/sessions/dur/turns", {"query": f"question {i}"})
            if status == 201:
                self.acknowledged.append((body["turn"], f"question {i}"))
                if body.get("champion_case_id"):
                    self.cases.append(body["champion_case_id"])
            elif len(self.refused) < 3:
                self.refused.append((status, body))


def test_acknowledged_writes_survive_sigkill_and_the_backup_holds_them(tmp_path: Path) -> None:
    env = tda_env(tmp_path / "data", free_port())
    token = token_in(cli([sys.executable, "-m", "tda.cli", "tokens", "create", "--role", "admin"], env))
    server = Live(env, tmp_path / "serve.log", token=token)
    server.start()
    try:
        BASE.update(server.call("GET", "/v1/context-window-types/balanced")[2])
        assert server.call("POST", "/v1/profiles", {"id": "dur", "type": "llm_only"})[0] == 201
        assert server.call("POST", "/v1/sessions", {"id": "dur", "profile_id": "dur"})[0] == 201
        writers = [Writer(server, "types"), Writer(server, "turns")]
        for w in writers:
            w.start()
        deadline = time.monotonic() + 120  # a loaded machine answers slowly: wait for enough writes, not a clock
        while time.monotonic() < deadline and not all(len(w.acknowledged) >= w.enough for w in writers):
            time.sleep(0.05)
        time.sleep(RUN_BEFORE_KILL_S)  # and a little more, so the kill lands mid-loop
        server.stop(signal.SIGKILL)  # mid-loop: requests are in flight
        time.sleep(0.3)
        for w in writers:
            w.stop.set()
            w.join(10)
    finally:
        server.stop(signal.SIGKILL)
    types_acked, turns_acked = writers[0].acknowledged, writers[1].acknowledged
    cases_named = set(writers[1].cases)
    assert cases_named, "no turn named a champion case: the check below would prove nothing"
    with sqlite3.connect(next((tmp_path / "data").rglob("champion_cases.sqlite3"))) as db:  # on disk, as killed
        cases_kept = {row[0] for row in db.execute("SELECT json_extract(metadata, '$.case_id') FROM cases")}
    print(f"\nSIGKILL: {len(cases_named)} champion cases named by 201s, {len(cases_named & cases_kept)} on disk")
    assert cases_named <= cases_kept
    assert len(types_acked) >= 5 and len(turns_acked) >= 3, (
        f"too few writes before the kill to prove anything: {writers[0].refused} {writers[1].refused}"
    )

    server.start()
    try:
        found_types = sum(
            1
            for type_id, version in types_acked
            if (r := server.call("GET", f"/v1/context-window-types/{type_id}"))[0] == 200 and r[2]["version"] >= version
        )
        status, _, listing = server.call("GET", "/v1/sessions/dur/turns")
        assert status == 200
        stored_turns = {t["turn"]: t["query"] for t in listing["turns"]}
        found_turns = sum(1 for turn, query in turns_acked if stored_turns.get(turn) == query)
        acknowledged, found = len(types_acked) + len(turns_acked), found_types + found_turns
        print(
            f"\nSIGKILL: {acknowledged} writes acknowledged ({len(types_acked)} type saves, {len(turns_acked)} turns), "
            f"{found} found after restart"
        )
        assert found == acknowledged

        # An online backup while the restarted server keeps saving types.
        def keep_saving() -> None:
            for i in range(30):
                server.call("POST", "/v1/context-window-types", _type(f"more_{i}", "during backup"))

        busy = threading.Thread(target=keep_saving)
        busy.start()
        copy = tmp_path / "backup.db"
        out = cli([sys.executable, "-m", "tda.cli", "db", "backup", str(copy)], env)
        busy.join(60)
        assert "integrity ok" in out
    finally:
        server.stop()

    database = tmp_path / "data" / "tda.db"
    for path in (database, copy):
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",), path
    with sqlite3.connect(copy) as db:
        saved = {row[0] for row in db.execute("SELECT id FROM context_window_types")}
        turns = {row[0] for row in db.execute("SELECT turn FROM turns WHERE session_id = 'dur'")}
    assert {type_id for type_id, _ in types_acked} <= saved
    assert {turn for turn, _ in turns_acked} <= turns
