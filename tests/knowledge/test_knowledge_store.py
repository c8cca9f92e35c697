"""Ingestion into the Chroma store: per-file errors, replace-on-change, stored-once chunks, reopening."""

from __future__ import annotations

from pathlib import Path

import pytest

from tda.knowledge.ingest import ingest_paths
from tda.knowledge.retrieval import ChromaKnowledgeRetriever
from tda.knowledge.store import CASES_COLLECTION, KnowledgeError, KnowledgeStore, open_client, sentences_of
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


def test_ingest_reports_each_bad_file_and_ingests_the_rest(store: KnowledgeStore, tmp_path: Path) -> None:
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
    assert store.document_ids("garden") == ["guide.md", "manual.pdf", "notes.txt", "page.html"]
    assert not chunks_of(store, "garden", "broken.pdf")  # nothing half-ingested


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


def test_ids_are_relative_to_the_ingest_root_never_the_working_directory(
    store: KnowledgeStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = corpus(tmp_path)
    (docs / "sub").mkdir()
    (docs / "sub" / "deep.md").write_text("# Deep\n\nWorms turn leaves into soil.\n")
    monkeypatch.chdir(docs / "sub")
    first = ingest_paths(store, [docs], "garden")
    monkeypatch.chdir(tmp_path)
    # The same files through another spelling of the path: the same ids, nothing new.
    again = ingest_paths(store, [tmp_path / "docs" / ".." / "docs"], "garden")
    assert {f.document_id for f in first.files if f.status == "added"} >= {"guide.md", "sub/deep.md"}
    assert {f.status for f in again.files if f.status != "error"} == {"unchanged"}
    # A file named directly is relative to its own folder; an explicit root names the folder.
    assert ingest_paths(store, [docs / "sub" / "deep.md"], "garden").files[0].document_id == "deep.md"
    rooted = ingest_paths(store, [docs / "sub" / "deep.md"], "garden", base=tmp_path)
    assert rooted.files[0].document_id == "docs/sub/deep.md"
    outside = ingest_paths(store, [docs / "guide.md"], "garden", base=docs / "sub").files[0]
    assert outside.status == "error" and "not under the ingest root" in outside.error


def test_content_ids_name_the_same_text_once_wherever_it_lies(store: KnowledgeStore, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "guide.md").write_text(GUIDE)
    (tmp_path / "b" / "copy.md").write_text(GUIDE)
    report = ingest_paths(store, [tmp_path / "a", tmp_path / "b"], "garden", id_scheme="content")
    assert [f.status for f in report.files] == ["added", "unchanged"]
    assert report.files[0].document_id == report.files[1].document_id
    assert report.files[0].document_id.startswith("sha256:")


def test_deleting_a_document_never_takes_text_another_document_holds(store: KnowledgeStore, tmp_path: Path) -> None:
    shared = "Every page ends with the same legal disclaimer about warranties."
    (tmp_path / "a.txt").write_text(f"Alpha\n\nAlpha specific text.\n\n{shared}")
    (tmp_path / "b.txt").write_text(f"Beta\n\nBeta specific text.\n\n{shared}")
    ingest_paths(store, [tmp_path / "a.txt", tmp_path / "b.txt"], "legal")
    store.delete_document("legal", "a.txt")
    assert any(shared in r["text"] for r in chunks_of(store, "legal", "b.txt"))
    hits = ChromaKnowledgeRetriever(store).search("legal disclaimer about warranties", collections=["legal"], k=3)
    assert hits and shared in hits[0].text and hits[0].document_id == "b.txt"
    # replacing b with other text removes only b's copy; a repeated chunk within one file is stored once
    (tmp_path / "b.txt").write_text(f"Beta\n\n{shared}\n\nMore.\n\n{shared}")
    [result] = ingest_paths(store, [tmp_path / "b.txt"], "legal").files
    assert result.status == "replaced"
    assert sum(shared in r["text"] for r in chunks_of(store, "legal", "b.txt")) >= 1


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


def sentence_texts(store: KnowledgeStore, collection: str, document_id: str | None = None) -> list[str]:
    index = store.sentence_collection(collection)
    assert index is not None
    got = index.get(where={"document_id": document_id} if document_id else None, include=["documents", "metadatas"])
    placed = sorted(zip(got["metadatas"] or [], got["documents"] or [], strict=True), key=lambda r: r[0]["position"])
    return [text for _, text in placed]


def test_ingestion_builds_a_sentence_index_that_follows_its_documents(store: KnowledgeStore, tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text(GUIDE)
    ingest_paths(store, [path], "garden")
    assert sentence_texts(store, "garden", "guide.md") == [
        "Tomatoes need six hours of direct sun every day.",
        "Water them deeply twice a week.",
        "Prune roses in late winter before new growth starts.",
        "Feed them with compost in spring.",
    ]
    assert store.collection_names() == ["garden"]  # the index is no collection of its own
    path.write_text("# Gardening guide\n\n## Peppers\n\nPeppers like warm soil.\n")
    ingest_paths(store, [path], "garden")
    assert sentence_texts(store, "garden") == ["Peppers like warm soil."]  # replaced with its document
    store.delete_document("garden", "guide.md")
    assert sentence_texts(store, "garden") == []
    store.delete_collection("garden")
    assert store.sentence_collection("garden") is None
    with pytest.raises(KnowledgeError, match="reserved for sentence indexes"):
        ingest_paths(store, [path], sentences_of("garden"))


def test_a_failed_sentence_index_for_an_older_store_reports_its_own_error(
    store: KnowledgeStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Building an unchanged document's sentence index fails: the file's error is the write's ("disk full"), not the
    clean-up's (Chroma refuses to delete an empty list of ids), and the chunks are as they were."""
    path = tmp_path / "guide.md"
    path.write_text(GUIDE)
    ingest_paths(store, [path], "garden")
    store.client.delete_collection(sentences_of("garden"))  # as a store written before sentence indexes
    before = sorted(r["text"] for r in store.get_chunks("garden"))

    def broken_add(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(type(store.collection("garden")), "add", broken_add)
    result = ingest_paths(store, [path], "garden").files[0]
    assert result.status == "error" and "disk full" in result.error
    monkeypatch.undo()
    assert sorted(r["text"] for r in store.get_chunks("garden")) == before


def test_a_store_ingested_before_sentence_indexes_gets_one_when_ingested_again(
    store: KnowledgeStore, tmp_path: Path
) -> None:
    path = tmp_path / "guide.md"
    path.write_text(GUIDE)
    ingest_paths(store, [path], "garden")
    store.client.delete_collection(sentences_of("garden"))  # as a store written before sentence indexes
    retriever = ChromaKnowledgeRetriever(store)
    assert retriever.sentence_search("When are roses pruned?", collections=["garden"]) == []
    assert retriever.search("When are roses pruned?", collections=["garden"])  # chunks as before
    assert ingest_paths(store, [path], "garden").files[0].status == "unchanged"
    assert len(sentence_texts(store, "garden")) == 4
    (found, *_) = retriever.sentence_search("prune roses in late winter", collections=["garden"], radius=1)
    assert found.sentences[found.position - found.first] == "Prune roses in late winter before new growth starts."
    assert found.sentences == (
        "Water them deeply twice a week.",
        "Prune roses in late winter before new growth starts.",
        "Feed them with compost in spring.",
    )


def test_a_store_that_starts_no_sentence_index_keeps_one_it_has_up_to_date(
    store: KnowledgeStore, tmp_path: Path
) -> None:
    """``sentences=False`` (the demo's store): a collection gets no sentence index, its chunks as ever; a collection
    that has one still has it follow its documents."""
    path = tmp_path / "guide.md"
    path.write_text(GUIDE)
    plain = KnowledgeStore(store.client, store.embedder_name, sentences=False)
    ingest_paths(plain, [path], "garden")
    assert plain.sentence_collection("garden") is None and len(plain.get_chunks("garden")) > 0
    assert ingest_paths(plain, [path], "garden").files[0].status == "unchanged"
    assert plain.sentence_collection("garden") is None
    ingest_paths(store, [path], "herbs")
    path.write_text("# Gardening guide\n\n## Peppers\n\nPeppers like warm soil.\n")
    assert ingest_paths(plain, [path], "herbs").files[0].status == "replaced"
    assert sentence_texts(store, "herbs") == ["Peppers like warm soil."]
