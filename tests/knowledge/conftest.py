"""Fixtures for the knowledge store tests: a fresh embedded Chroma store with the hashing embedder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tda.knowledge.store import KnowledgeStore, open_client


@pytest.fixture
def store(tmp_path: Path) -> KnowledgeStore:
    return KnowledgeStore(open_client(tmp_path / "data"), embedder="hashing")
