"""The cycle collector: paused while big requests run; the libraries a served process loads frozen out of its full
passes once loaded."""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tda.collector import CollectorPause, LoadedFrozen
from tda.service import TDAService


def test_cycle_collection_pauses_while_big_requests_run_and_never_for_long() -> None:
    assert gc.isenabled()
    pause = CollectorPause(max_pause_s=3600)
    with pause.held():
        assert not gc.isenabled()
        with pause.held():  # two big requests at once: on until the last ends
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    brief = CollectorPause(max_pause_s=-1)  # over its limit at once: a stream of big requests gets collection back
    with brief.held(), brief.held():
        assert gc.isenabled()
    assert gc.isenabled()


def walked(obj: object) -> bool:
    """Whether a full pass walks ``obj`` (tracked and not frozen)."""
    return any(o is obj for o in gc.get_objects())


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Callable[[], ModuleType]]:
    """Loads a module this process has not loaded yet, as a request loading a library would (its functions are
    tracked objects); everything frozen is thawed afterwards."""
    name = f"late_library_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text("".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(200)))
    sys.path.insert(0, str(tmp_path))
    try:
        yield lambda: importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)
        gc.unfreeze()


def test_modules_loaded_after_the_start_up_freeze_are_frozen_once_the_background_work_is_done(library) -> None:
    loaded = LoadedFrozen()
    loaded.freeze()  # `tda serve`, once started
    module = library()  # a request loads a library
    assert walked(module.f7)
    loaded.idle()  # its background work done
    assert not walked(module.f7) and loaded.freezes == 2
    loaded.idle()  # nothing loaded since: no collection, no freeze
    assert loaded.freezes == 2
    assert module.f7(1) == 8


def test_a_process_that_did_not_freeze_at_start_up_is_left_as_python_leaves_it(library) -> None:
    loaded = LoadedFrozen()  # a library's or a test's process
    frozen = gc.get_freeze_count()
    module = library()
    loaded.idle()
    assert walked(module.f7) and loaded.freezes == 0 and gc.get_freeze_count() == frozen


def test_nothing_is_frozen_while_a_big_request_holds_the_collector_off(library, monkeypatch) -> None:
    pause = CollectorPause()
    monkeypatch.setattr("tda.collector.PAUSE", pause)
    loaded = LoadedFrozen()
    loaded.freeze()
    module = library()
    with pause.held():
        loaded.idle()
        assert walked(module.f7) and loaded.freezes == 1
    loaded.idle()  # the big request is done: the next idle moment freezes it
    assert not walked(module.f7) and loaded.freezes == 2


async def test_a_served_turn_leaves_a_library_loaded_since_start_up_frozen_once_its_background_work_is_done(
    svc: TDAService, client: Any, admin: dict[str, str], session_id: str, library, monkeypatch
) -> None:
    loaded = LoadedFrozen()
    monkeypatch.setattr("tda.service.LOADED", loaded)
    loaded.freeze()
    module = library()
    assert walked(module.f7)
    r = await client.post(f"/v1/sessions/{session_id}/turns", json={"query": "What is a token?"}, headers=admin)
    assert r.status_code == 201, await r.get_json()
    await svc.writer.drain()  # the turn's indexing, after its response
    assert not walked(module.f7)
    freezes = loaded.freezes  # 2 or more: a first turn loads modules of its own too
    r = await client.post(f"/v1/sessions/{session_id}/turns", json={"query": "And a context?"}, headers=admin)
    assert r.status_code == 201, await r.get_json()
    await svc.writer.drain()
    assert loaded.freezes == freezes  # nothing loaded since: no collection, no freeze
