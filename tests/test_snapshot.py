"""Snapshot serialisation: dict round trip, SSE framing, one-line summary."""

from __future__ import annotations

import copy
import json
from dataclasses import asdict

from components.context_window.handler import ContextWindowHandler
from components.context_window.snapshot import ContextWindowSnapshot
from tda.builtins import DEFAULT_TYPES
from tests.support import conversation, make_ctx, make_tools


async def snapshot(builtin_registry) -> ContextWindowSnapshot:
    ctx = make_ctx(messages=conversation(12), tools=make_tools(3), limit=4_000)
    return (await ContextWindowHandler(builtin_registry).assemble(ctx, DEFAULT_TYPES["balanced"])).snapshot


async def test_round_trips_through_dict_and_json(builtin_registry):
    snap = await snapshot(builtin_registry)
    data = json.loads(json.dumps(snap.to_dict()))
    again = ContextWindowSnapshot.from_dict(data)
    assert again.to_dict() == snap.to_dict()
    assert data["utilisation"] == snap.utilisation
    assert {m["module_id"]: m["utilisation"] for m in data["modules"]}["system_prompt"] > 0


async def test_the_dict_holds_every_field_and_shares_nothing_mutable(builtin_registry):
    """What ``dataclasses.asdict`` gives (the reference), plus the utilisations; changing the dict leaves the
    snapshot as it was."""
    snap = await snapshot(builtin_registry)
    reference = asdict(snap) | {"utilisation": snap.utilisation}
    for module, usage in zip(reference["modules"], snap.modules, strict=True):
        module["utilisation"] = usage.utilisation
    data = snap.to_dict()
    assert data == reference
    before = copy.deepcopy(reference)
    for module in data["modules"]:
        module["metadata"]["changed"] = True
        module["status"] = "failed"
    data["decisions"].append("changed")
    data["condensations"].clear()
    assert snap.to_dict() == before


async def test_summary_mentions_figures_rules_and_condensing(builtin_registry):
    snap = await snapshot(builtin_registry)
    line = snap.summary()
    assert line.startswith(f"Balanced: {snap.total_used:,}/{snap.available_budget:,} tokens")
    assert "rules: 2" in line and "condensed" in line
    assert snap.adjustments_fired == [
        "no_documents_attached -> transfer document_context -> conversation_history",
        "long_conversation(10) -> condense conversation_history",
    ]
