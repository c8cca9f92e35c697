"""The store against a real Chroma server (``chroma run`` on 127.0.0.1), as with TDA_CHROMA_URL."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tda.knowledge.cases import CaseScope, ChampionCaseStore
from tda.knowledge.ingest import ingest_paths
from tda.knowledge.retrieval import ChromaKnowledgeRetriever
from tda.knowledge.store import KnowledgeStore
from tests.knowledge.helpers import VISIBLE, record_scoped_cases

CHROMA = Path(sys.executable).parent / "chroma"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def chroma_url(tmp_path: Path) -> Iterator[str]:
    if not CHROMA.exists():
        pytest.skip("the chroma server command is not installed next to this Python")
    port = free_port()
    server = subprocess.Popen(
        [str(CHROMA), "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90  # a busy 2-core machine starts it slowly
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        else:
            pytest.fail("chroma server did not start within 90 s")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_ingest_and_search_through_a_chroma_server(chroma_url: str, tmp_path: Path) -> None:
    (tmp_path / "faq.md").write_text("# FAQ\n\n## Hours\n\nThe shop opens at nine and closes at six.\n")
    store = KnowledgeStore.open(tmp_path / "unused", chroma_url, embedder="hashing")
    try:
        assert ingest_paths(store, [tmp_path / "faq.md"], "shop").files[0].status == "added"
        [top] = ChromaKnowledgeRetriever(store).search("when does the shop open", k=1)
        assert "opens at nine" in top.text and top.section == "FAQ › Hours"
        assert not (tmp_path / "unused" / "chroma").exists()  # nothing embedded locally
    finally:
        store.close()


def test_champion_cases_stay_in_their_scope_on_a_chroma_server(chroma_url: str, tmp_path: Path) -> None:
    """Replicas share the cases through the server: another replica's search is bound by the server's ``where``."""
    store = KnowledgeStore.open(tmp_path / "unused", chroma_url, embedder="hashing")
    try:
        record_scoped_cases(ChampionCaseStore(store, write_through=True), "export the invoices of march")
        replica = ChampionCaseStore(store, write_through=True)
        for window, visible in VISIBLE:
            served = replica.search("export the invoices of march", scope=CaseScope(*window), k=20)  # type: ignore[arg-type]
            assert {c.answer for c in served} == visible, window
    finally:
        store.close()
