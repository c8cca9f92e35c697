"""/v1/knowledge over HTTP: what the CLI does, on the service's own store, with the roles and errors of the API."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tda.cli import build_parser
from tda.config import Settings
from tda.knowledge.store import KnowledgeStore, open_client
from tests.knowledge.helpers import make_pdf
from tests.oracle import text_tokens

KETTLE = "# Kettle\n\n## Descaling\n\nDescale the kettle monthly with white vinegar and rinse it twice.\n"
TOASTER = "Toaster\n\nEmpty the crumb tray every week so the toaster never smokes.\n"
HTML = "<html><head><title>Fridge</title></head><body><h1>Fridge</h1><p>Defrost the freezer each spring.</p></body>"


def _files(folder: Path) -> Path:
    """A folder of every kind the readers take, as a user would ingest it with the CLI."""
    folder.mkdir()
    (folder / "kettle.md").write_text(KETTLE)
    (folder / "toaster.txt").write_text(TOASTER)
    (folder / "fridge.html").write_text(HTML)
    make_pdf(folder / "oven.pdf", [["Oven", "Clean the oven door glass with baking soda paste."]])
    return folder


def _as_body(folder: Path) -> dict[str, Any]:
    """The same files as an API body: text for the text kinds, base64 for the PDF."""
    documents = []
    for path in sorted(folder.iterdir()):
        if path.suffix == ".pdf":
            content = base64.b64encode(path.read_bytes()).decode()
            documents.append({"name": path.name, "content_base64": content, "mime_type": "application/pdf"})
        else:
            documents.append({"name": path.name, "text": path.read_text()})
    return {"documents": documents}


async def _ingest(client: Any, headers: dict[str, str], collection: str, body: dict[str, Any]) -> Any:
    return await client.post(f"/v1/knowledge/collections/{collection}/documents", json=body, headers=headers)


def _chunks(store: KnowledgeStore, collection: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Chunk id -> (text, metadata without the provenance path, which names where each copy was read from)."""
    return {
        c["id"]: (c["text"], {k: v for k, v in c["metadata"].items() if k != "source"})
        for c in store.get_chunks(collection)
    }


async def test_documents_ingested_over_http_are_found_by_search_and_listed(
    client: Any, admin: dict[str, str], viewer: dict[str, str]
) -> None:
    r = await _ingest(client, admin, "home", {"documents": [{"name": "kettle.md", "text": KETTLE}]})
    assert r.status_code == 201, await r.get_json()
    body = await r.get_json()
    assert body["documents"] == [
        {"name": "kettle.md", "document_id": "kettle.md", "status": "added", "chunks": 1, "duplicates": 0}
    ]
    r = await _ingest(
        client, admin, "home", {"documents": [{"id": "manuals/toaster", "name": "t.txt", "text": TOASTER}]}
    )
    assert (await r.get_json())["documents"][0]["document_id"] == "manuals/toaster"

    r = await client.post("/v1/knowledge/search", json={"query": "descale kettle vinegar", "k": 1}, headers=viewer)
    assert r.status_code == 200
    (hit,) = (await r.get_json())["passages"]
    assert hit["document_id"] == "kettle.md" and hit["collection"] == "home" and hit["section"].endswith("Descaling")
    assert "white vinegar" in hit["text"] and 0 < hit["score"] <= 1

    listed = await (await client.get("/v1/knowledge/collections", headers=viewer)).get_json()
    assert listed == {"collections": [{"name": "home", "documents": 2, "chunks": 2, "embedder": "HashingEmbedding"}]}
    docs = await (await client.get("/v1/knowledge/collections/home/documents", headers=viewer)).get_json()
    assert docs == {"collection": "home", "documents": ["kettle.md", "manuals/toaster"]}

    again = await _ingest(client, admin, "home", {"documents": [{"name": "kettle.md", "text": KETTLE}]})
    assert (await again.get_json())["documents"][0]["status"] == "unchanged"


async def test_the_cli_and_the_api_store_the_same_chunks_under_the_same_ids(
    client: Any, admin: dict[str, str], settings: Settings, tmp_path: Path
) -> None:
    folder = _files(tmp_path / "appliances")
    cli_settings = Settings(data_dir=tmp_path / "cli-data", embedder="hashing")
    args = build_parser().parse_args(["knowledge", "ingest", str(folder), "--collection", "home", "--quiet"])
    assert args.func(args, cli_settings) == 0

    r = await _ingest(client, admin, "home", _as_body(folder))
    assert r.status_code == 201, await r.get_json()
    assert [d["status"] for d in (await r.get_json())["documents"]] == ["added"] * 4

    from_cli = _chunks(KnowledgeStore(open_client(cli_settings.data_dir), "hashing"), "home")
    svc_store = KnowledgeStore(open_client(settings.data_dir), "hashing")
    from_api = _chunks(svc_store, "home")
    assert len(from_cli) >= 4 and from_api == from_cli
    assert {m["document_id"] for _, m in from_api.values()} == {"fridge.html", "kettle.md", "oven.pdf", "toaster.txt"}
    assert {c["metadata"]["source"] for c in svc_store.get_chunks("home")} == {
        "fridge.html",
        "kettle.md",
        "oven.pdf",
        "toaster.txt",
    }  # provenance names the document sent, not a temporary file


async def test_a_viewer_reads_but_cannot_write(client: Any, admin: dict[str, str], viewer: dict[str, str]) -> None:
    assert (await _ingest(client, admin, "home", {"documents": [{"name": "k.md", "text": KETTLE}]})).status_code == 201
    writes = [
        await _ingest(client, viewer, "home", {"documents": [{"name": "t.txt", "text": TOASTER}]}),
        await client.delete("/v1/knowledge/collections/home", headers=viewer),
        await client.delete("/v1/knowledge/collections/home/documents/k.md", headers=viewer),
    ]
    for r in writes:
        assert r.status_code == 403
        assert "admin role" in (await r.get_json())["message"]
    docs = await (await client.get("/v1/knowledge/collections/home/documents", headers=viewer)).get_json()
    assert docs["documents"] == ["k.md"]
    assert (await client.get("/v1/knowledge/collections")).status_code == 401


async def test_a_bad_file_is_a_422_naming_it_and_nothing_is_stored(
    client: Any, admin: dict[str, str], viewer: dict[str, str]
) -> None:
    body = {
        "documents": [
            {"name": "kettle.md", "text": KETTLE},
            {"name": "scan.pdf", "content_base64": base64.b64encode(b"%PDF-1.4 not really").decode()},
        ]
    }
    r = await _ingest(client, admin, "home", body)
    assert r.status_code == 422
    error = await r.get_json()
    assert "scan.pdf" in error["message"] and "nothing was stored" in error["message"]
    assert error["errors"][0]["loc"] == "documents.1.name" and "tda-ingest" not in error["message"]
    assert (await client.get("/v1/knowledge/collections", headers=viewer)).status_code == 200
    assert (await (await client.get("/v1/knowledge/collections", headers=viewer)).get_json())["collections"] == []

    cases = [
        ({"documents": [{"name": "a.pdf", "content_base64": "not base64!"}]}, "documents.0.content_base64"),
        ({"documents": [{"name": "a.md", "text": "x"}, {"name": "a.md", "text": "y"}]}, "documents.1.name"),
        ({"documents": [{"name": "../etc/passwd.txt", "text": "x"}]}, "documents.0.name"),
        ({"documents": [{"name": "a.md", "text": "x"}, {"name": "a.md/b.md", "text": "y"}]}, "documents.0.name"),
        ({"documents": [{"name": "a.md", "text": "x", "content_base64": "eA=="}]}, "documents.0"),
        ({"documents": [{"name": "notes", "text": "x"}]}, "documents.0.name"),  # no reader for it
        ({"documents": []}, "documents"),
    ]
    for sent, loc in cases:
        r = await _ingest(client, admin, "home", sent)
        assert r.status_code == 422, (sent, await r.get_json())
        assert any(e["loc"].startswith(loc) for e in (await r.get_json())["errors"]), (sent, await r.get_json())
    r = await _ingest(client, admin, "a", {"documents": [{"name": "a.md", "text": KETTLE}]})
    assert r.status_code == 422 and "invalid collection name" in (await r.get_json())["message"]
    assert (await (await client.get("/v1/knowledge/collections", headers=viewer)).get_json())["collections"] == []


async def test_a_name_without_a_known_suffix_is_read_as_its_mime_type(client: Any, admin: dict[str, str]) -> None:
    body = {"documents": [{"name": "readme", "text": KETTLE, "mime_type": "text/markdown"}]}
    r = await _ingest(client, admin, "home", body)
    assert r.status_code == 201, await r.get_json()
    r = await client.post("/v1/knowledge/search", json={"query": "descaling", "collections": ["home"]}, headers=admin)
    (hit,) = (await r.get_json())["passages"]
    assert hit["document_id"] == "readme" and hit["title"] == "Kettle"  # read as Markdown: the heading is the title


async def test_delete_a_document_then_the_collection(client: Any, admin: dict[str, str]) -> None:
    body = {"documents": [{"name": "guides/kettle.md", "text": KETTLE}, {"name": "toaster.txt", "text": TOASTER}]}
    assert (await _ingest(client, admin, "home", body)).status_code == 201
    r = await client.delete("/v1/knowledge/collections/home/documents/guides/kettle.md", headers=admin)
    assert r.status_code == 204
    search = {"query": "descale the kettle", "collections": ["home"], "k": 5}
    passages = (await (await client.post("/v1/knowledge/search", json=search, headers=admin)).get_json())["passages"]
    assert [p["document_id"] for p in passages] == ["toaster.txt"]

    r = await client.delete("/v1/knowledge/collections/home/documents/guides/kettle.md", headers=admin)
    assert r.status_code == 404 and "no document 'guides/kettle.md'" in (await r.get_json())["message"]
    assert (await client.delete("/v1/knowledge/collections/home", headers=admin)).status_code == 204
    r = await client.delete("/v1/knowledge/collections/home", headers=admin)
    assert r.status_code == 404 and "no knowledge collection named 'home'" in (await r.get_json())["message"]
    r = await client.post("/v1/knowledge/search", json=search, headers=admin)
    assert r.status_code == 404
    r = await client.get("/v1/knowledge/collections/home/documents", headers=admin)
    assert r.status_code == 404


@pytest.mark.parametrize("budget", [0, 25, 60, 400])
async def test_context_is_what_the_module_adds_within_the_budget(
    client: Any, admin: dict[str, str], viewer: dict[str, str], settings: Settings, budget: int, capsys: Any
) -> None:
    long_text = KETTLE + "".join(
        f"\n## Step {n}\n\nStep {n} of descaling: pour, wait, rinse, repeat.\n" for n in range(20)
    )
    assert (
        await _ingest(client, admin, "home", {"documents": [{"name": "kettle.md", "text": long_text}]})
    ).status_code == 201
    ask = {"query": "how do I descale the kettle", "collections": ["home"], "budget": budget, "model": "gpt-4o"}
    r = await client.post("/v1/knowledge/context", json=ask, headers=viewer)
    assert r.status_code == 200, await r.get_json()
    got = await r.get_json()
    assert got["tokens"] == text_tokens(got["text"], "gpt-4o") <= budget
    if budget >= 60:
        assert "descal" in got["text"].lower() and got["sources"][0]["document_id"] == "kettle.md"
    if budget == 0:
        assert got == {"text": "", "tokens": 0, "sources": []}

    # The CLI on the same store prints the same contribution.
    argv = ["knowledge", "context", "--collection", "home", "--budget", str(budget), "--query", ask["query"]]
    args = build_parser().parse_args([*argv, "--model", "gpt-4o", "--json"])
    assert await asyncio.to_thread(args.func, args, settings) == 0  # the CLI runs its own event loop
    printed = json.loads(capsys.readouterr().out)
    assert printed == {"id": None, **got}


async def test_search_and_context_refuse_what_they_cannot_answer(client: Any, viewer: dict[str, str]) -> None:
    r = await client.post("/v1/knowledge/search", json={"query": "x", "collections": ["nope"]}, headers=viewer)
    assert r.status_code == 404 and "GET /v1/knowledge/collections" in (await r.get_json())["message"]
    r = await client.post(
        "/v1/knowledge/context", json={"query": "x", "collections": ["nope"], "budget": 5}, headers=viewer
    )
    assert r.status_code == 404
    for bad in ({"query": "x", "collections": [], "budget": 5}, {"query": "x", "collections": ["a"], "budget": -1}):
        r = await client.post("/v1/knowledge/context", json=bad, headers=viewer)
        assert r.status_code == 422
    r = await client.post("/v1/knowledge/search", json={"query": "x", "k": 0}, headers=viewer)
    assert r.status_code == 422 and (await r.get_json())["errors"][0]["loc"] == "k"


async def test_concurrent_ingests_of_one_document_leave_one_whole_version(
    client: Any, admin: dict[str, str], settings: Settings
) -> None:
    versions = [KETTLE * n for n in (3, 5, 7, 9)]
    sent = [_ingest(client, admin, "home", {"documents": [{"name": "kettle.md", "text": v}]}) for v in versions]
    assert [r.status_code for r in await asyncio.gather(*sent)] == [201] * 4
    chunks = KnowledgeStore(open_client(settings.data_dir), "hashing").get_chunks("home")
    assert len({c["metadata"]["doc_hash"] for c in chunks}) == 1  # not two versions' chunks mixed
