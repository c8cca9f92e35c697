"""Ingestion into the Chroma store: per-file errors, replace-on-change, stored-once chunks, reopening."""

from __future__ import annotations

from pathlib import Path

import pytest

from tda.knowledge.ingest import ingest_paths
from tda.knowledge.retrieval import ChromaKnowledgeRetriever
from tda.knowledge.store import CASES_COLLECTION, KnowledgeError, KnowledgeStore, open_client
from tests.knowledge.helpers import make_pdf

GUIDE = """# Gardening guide

## Tomatoes

Tomatoes need six hours of direct sun every day. Water them deeply twice a week.

## Roses

Prune roses in late winter before new growth starts. Feed them with compost in spring.
"""


def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "guide.md").write_text(GUIDE)
    (root / "notes.txt").write_text(
        "Compost notes\n\nA compost heap needs air, water and a mix of green and brown waste."
    )
    (root / "page.html").write_text("<h1>Bees</h1><p>Bees pollinate the flowers of tomatoes and squash.</p>")
    make_pdf(root / "manual.pdf", [["Irrigation manual.", "Drip lines save water in dry summers."]])
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    (root / "empty.md").write_text("")
    (root / "ignored.png").write_bytes(b"\x89PNG")
    return root


def chunks_of(store: KnowledgeStore, collection: str, document_id: str) -> list[dict]:
    return store.get_chunks(collection, where={"document_id": document_id})


def test_ingest_reports_each_bad_file_and_ingests_the_rest(
    store: KnowledgeStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    report = ingest_paths(store, [corpus(tmp_path)], "garden")
    status = {Path(f.path).name: f.status for f in report.files}
    assert status == {
        "broken.pdf": "error",
        "empty.md": "error",
        "guide.md": "added",
        "manual.pdf": "added",
        "notes.txt": "added",
        "page.html": "added",
    }  # the .png is not a supported type: not picked up
    errors = {Path(f.path).name: f.error for f in report.errors}
    assert "not a readable PDF" in errors["broken.pdf"] and "no text found" in errors["empty.md"]
    assert store.document_ids("garden") == ["docs/guide.md", "docs/manual.pdf", "docs/notes.txt", "docs/page.html"]
    assert not chunks_of(store, "garden", "docs/broken.pdf")  # nothing half-ingested


def test_chunk_metadata_carries_provenance(store: KnowledgeStore, tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text(GUIDE)
    ingest_paths(store, [path], "garden")
    [row] = [r for r in store.get_chunks("garden") if "Prune roses" in r["text"]]
    meta = row["metadata"]
    assert meta["title"] == "Gardening guide" and meta["section"] == "Gardening guide › Roses"
    assert meta["chunk_index"] == 1 and meta["token_count"] > 5 and len(meta["content_hash"]) == 32
    assert meta["source"] == str(path)


def test_reingesting_unchanged_is_a_no_op_and_changed_replaces_every_chunk(
    store: KnowledgeStore, tmp_path: Path
) -> None:
    path = tmp_path / "guide.md"
    path.write_text(GUIDE)
    assert ingest_paths(store, [path], "garden").files[0].status == "added"
    doc_id = store.document_ids("garden")[0]
    assert ingest_paths(store, [path], "garden").files[0].status == "unchanged"
    path.write_text("# Gardening guide\n\n## Peppers\n\nPeppers like warm soil.\n")
    assert ingest_paths(store, [path], "garden").files[0].status == "replaced"
    texts = [r["text"] for r in chunks_of(store, "garden", doc_id)]
    assert texts == ["Peppers like warm soil."]  # no stale tomato or rose chunks left


def test_a_failed_write_leaves_the_previous_version_intact(
    store: KnowledgeStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "guide.md"
    path.write_text(GUIDE)
    ingest_paths(store, [path], "garden")
    before = sorted(r["text"] for r in store.get_chunks("garden"))
    path.write_text("# New\n\nEntirely new text that will fail to store.\n")

    def broken_add(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk full")

    col = store.collection("garden")
    monkeypatch.setattr(type(col), "add", broken_add)
    result = ingest_paths(store, [path], "garden").files[0]
    assert result.status == "error" and "disk full" in result.error
    monkeypatch.undo()
    assert sorted(r["text"] for r in store.get_chunks("garden")) == before


def test_identical_chunks_are_stored_once_across_documents(store: KnowledgeStore, tmp_path: Path) -> None:
    shared = "Every page ends with the same legal disclaimer about warranties."
    (tmp_path / "a.txt").write_text(f"Alpha\n\nAlpha specific text.\n\n{shared}")
    (tmp_path / "b.txt").write_text(f"Alpha\n\nAlpha specific text.\n\n{shared}")  # same text, another document
    report = ingest_paths(store, [tmp_path / "a.txt", tmp_path / "b.txt"], "legal")
    assert [f.duplicates for f in report.files] == [0, 1]
    assert sum(shared in r["text"] for r in store.get_chunks("legal")) == 1


def test_a_reopened_store_embeds_queries_with_the_collection_embedder(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(GUIDE)
    first = KnowledgeStore(open_client(tmp_path / "data"), embedder="hashing")
    ingest_paths(first, [tmp_path / "guide.md"], "garden")
    reopened = KnowledgeStore(open_client(tmp_path / "data"), embedder="minilm")  # new collections only
    [top, *_] = ChromaKnowledgeRetriever(reopened).search("when should roses be pruned", k=2)
    assert "Prune roses" in top.text
    assert reopened.list_collections()[0].embedder == "HashingEmbedding"
    (tmp_path / "more.md").write_text("# More\n\nWater roses at the root, never on the leaves.\n")
    assert ingest_paths(reopened, [tmp_path / "more.md"], "garden").files[0].status == "added"  # keeps hashing
    [top, *_] = ChromaKnowledgeRetriever(reopened).search("watering roses leaves", k=1)
    assert "Water roses at the root" in top.text


def test_delete_document_and_collection(store: KnowledgeStore, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("A\n\nFirst document text.")
    (tmp_path / "b.txt").write_text("B\n\nSecond document text.")
    ingest_paths(store, [tmp_path / "a.txt", tmp_path / "b.txt"], "docs-x")
    a, b = store.document_ids("docs-x")
    assert store.delete_document("docs-x", a) == 1
    assert store.document_ids("docs-x") == [b]
    store.delete_collection("docs-x")
    assert store.collection_names() == []
    with pytest.raises(KnowledgeError, match="no knowledge collection named 'docs-x'"):
        store.delete_collection("docs-x")


@pytest.mark.parametrize("name", ["x", "-bad", "has space", CASES_COLLECTION])
def test_invalid_collection_names_are_refused_before_anything_is_written(
    store: KnowledgeStore, tmp_path: Path, name: str
) -> None:
    (tmp_path / "a.txt").write_text("A\n\ntext.")
    with pytest.raises(KnowledgeError, match=r"collection name|reserved"):
        ingest_paths(store, [tmp_path / "a.txt"], name)
    assert store.collection_names() == []


def test_chroma_url_must_name_a_host(tmp_path: Path) -> None:
    with pytest.raises(KnowledgeError, match="has no host"):
        open_client(tmp_path, "not-a-url")


def test_list_collections_counts_documents_and_chunks(store: KnowledgeStore, tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(GUIDE)
    ingest_paths(store, [tmp_path / "guide.md"], "garden")
    [info] = store.list_collections()
    assert (info.name, info.documents, info.chunks) == ("garden", 1, 2)
