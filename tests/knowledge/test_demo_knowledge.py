"""The demo's knowledge collection (`make run`, `tda demo`, bench/demo_turn_bench.py): the documentation a user reads,
not the project's measurement logs, whose growth every session changed the demo's windows and its bench."""

from __future__ import annotations

from pathlib import Path

from tda.config import Settings
from tda.demo import DEMO_COLLECTION, DOCS, LAB_NOTEBOOKS, seed_demo_knowledge
from tda.knowledge.ingest import ingest_paths
from tda.knowledge.store import KnowledgeStore


def _documents(settings: Settings) -> list[str]:
    store = KnowledgeStore.open(settings.data_dir, embedder="hashing")
    try:
        return store.document_ids(DEMO_COLLECTION)
    finally:
        store.close()


def test_the_demo_knowledge_is_the_user_facing_docs(tmp_path: Path):
    settings = Settings(data_dir=tmp_path, embedder="hashing")
    seed_demo_knowledge(settings)
    pages = {f"docs/{p.name}" for p in DOCS.glob("*.md")}
    assert {"docs/benchmarks.md", "docs/knowledge.md"} <= pages  # the logs the demo leaves out exist
    assert set(_documents(settings)) == {
        "README.md",
        *(p for p in pages if p.removeprefix("docs/") not in LAB_NOTEBOOKS),
    }


def test_an_earlier_demo_s_measurement_logs_leave_its_collection(tmp_path: Path):
    """A data folder seeded when the demo held every docs/ page: seeding again drops the logs, and keeps a document a
    user added to the demo collection."""
    earlier = tmp_path / "earlier"
    (earlier / "docs").mkdir(parents=True)
    (earlier / "docs" / "benchmarks.md").write_text("# Benchmarks\n\nA demo turn read 24.4 ms p50.\n")
    (earlier / "notes").mkdir()
    (earlier / "notes" / "mine.md").write_text("# Mine\n\nThe heliotrope kettle ships on Tuesdays.\n")
    store = KnowledgeStore.open(tmp_path, embedder="hashing", sentences=False)
    try:
        ingest_paths(store, [earlier], DEMO_COLLECTION, base=earlier)
    finally:
        store.close()
    settings = Settings(data_dir=tmp_path, embedder="hashing")
    assert "docs/benchmarks.md" in _documents(settings)
    seed_demo_knowledge(settings)
    held = _documents(settings)
    assert "docs/benchmarks.md" not in held
    assert {"notes/mine.md", "README.md", "docs/architecture.md"} <= set(held)
