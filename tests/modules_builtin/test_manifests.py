"""The five module folders load as the registry loads them; a manifest keeps only its default priority (the
shipped types' data holds the shares, once)."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.context_window.module_registry import load_folder
from tda.builtins import DEFAULT_TYPES

MODULES = Path(__file__).resolve().parents[2] / "modules"
PLACEMENT = {
    "rag_context": "context",
    "plan_hydration": "context",
    "document_context": "system",
    "component_instructions": "system",
    "workflow_history": "context",
}


@pytest.mark.parametrize("module_id", sorted(PLACEMENT))
async def test_folder_loads_with_its_priority_and_placement(module_id, ctx_for):
    definition = load_folder(MODULES / module_id, "builtin")
    manifest = definition.manifest
    slot = DEFAULT_TYPES["balanced"].modules[module_id]
    assert manifest.module_id == module_id
    assert manifest.defaults.priority == slot.priority and manifest.capabilities.condensable
    assert "target_pct" not in (MODULES / module_id / "manifest.json").read_text()
    module = definition.cls(manifest)
    out = await module.contribute(1_000, ctx_for())
    assert out.module_id == module_id and out.placement == PLACEMENT[module_id]
    assert module.get_status()["module_id"] == module_id
    assert "purged" in await module.purge("s1", "u")
