"""bench/window_digests.py compares the same work, not the same clock: a loaded machine neither changes its windows
nor changes one without saying why (docs/benchmarks.md, "Window digests")."""

from __future__ import annotations

import pytest

from bench import in_process_bench, window_digests
from components.context_window import isolation

HISTORY = in_process_bench.conversation(998)
"""1,998 messages: at 4K the cold window recalls older messages (the history module's index made at first sight)."""


class SlowClock:
    """A machine so loaded that every reading of the clock comes 1.5 s after the one before: each step a module takes
    holds the event loop for 1.5 s, so a module of two steps is past its 2 s timeout (the history module's cold window
    takes two since it asks recall once per assembly: three before)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.5
        return self.now


async def window(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """The cold window at 4K as the bench prints it: (digest, the limits it met)."""
    window_digests.show("cold", await window_digests.fresh_window("balanced", 4_000).assemble(HISTORY))
    _, digest, *met = capsys.readouterr().out.rstrip("\n").split("\t")
    return digest, "".join(met)


async def test_a_loaded_machine_does_not_change_the_benchs_windows(capsys, monkeypatch):
    unloaded = await window(capsys)
    monkeypatch.setattr(isolation, "perf_counter", SlowClock())
    assert await window(capsys) == unloaded
    assert unloaded[1] == ""


async def test_a_window_past_the_services_module_timeout_says_so_on_its_line(capsys, monkeypatch):
    monkeypatch.setattr(window_digests, "SERVICE_LIMITS", True)
    unloaded = await window(capsys)
    monkeypatch.setattr(isolation, "perf_counter", SlowClock())
    digest, met = await window(capsys)
    assert digest != unloaded[0]
    assert "conversation_history timeout" in met.split("; ")


async def test_a_window_that_did_not_wait_for_recalls_index_says_so_on_its_line(capsys, monkeypatch):
    monkeypatch.setattr(window_digests, "SERVICE_LIMITS", True)
    unloaded = await window(capsys)
    monkeypatch.setattr(window_digests, "unhurried", in_no_time)
    digest, met = await window(capsys)
    assert digest != unloaded[0]
    assert met == "conversation_history recall still indexing"


def in_no_time(registry):
    """The history module's wait for recall's index at 0 s: as if indexing took longer than a loaded machine waits."""
    registry.get("conversation_history").recall_wait_s = 0.0
    return registry
