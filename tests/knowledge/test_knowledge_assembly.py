"""End to end: a real store and retriever feed knowledge_context inside a full assembly."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

from components.context_window.base import AssemblyContext, Directives, Profile, Session
from components.context_window.handler import ContextWindowHandler
from components.context_window.module_registry import ModuleRegistry, load_folder
from components.context_window.token_estimator import estimator_for
from modules.knowledge_context.handler import HEADER
from tda.builtins import DEFAULT_TYPES
from tda.knowledge.chunking import chunk_document
from tda.knowledge.ingest import ingest_paths
from tda.knowledge.readers import read_document
from tda.knowledge.retrieval import ChromaKnowledgeRetriever
from tda.knowledge.store import KnowledgeStore, sentences_of

TOKENS = estimator_for("gpt-4o")
ANSWER = "Pass the -V flag twice to see every record."


async def test_the_answering_passage_reaches_the_assembled_window(
    store: KnowledgeStore, tmp_path: Path, builtin_registry: ModuleRegistry
) -> None:
    (tmp_path / "faq.md").write_text(
        "# Support FAQ\n\n## Billing\n\nInvoices are emailed on the first working day of each month.\n\n"
        "## Accounts\n\nTwo-factor authentication can be reset by an administrator from the security page.\n"
    )
    ingest_paths(store, [tmp_path / "faq.md"], "support")
    ctx = AssemblyContext(
        query="When are invoices emailed?",
        profile=Profile("p", "rag_focused", knowledge_collections=("support",)),
        session=Session("s"),
        model="gpt-4o",
        model_limit=6000,
        knowledge=ChromaKnowledgeRetriever(store),
    )
    result = await ContextWindowHandler(builtin_registry).assemble(ctx, DEFAULT_TYPES["balanced"])
    usage = result.snapshot.module("knowledge_context")
    assert usage.status == "ok" and usage.used > 0
    sent = "\n".join(str(m.get("content", "")) for m in result.messages)
    assert "[SOURCE 1] Support FAQ › Billing" in sent
    assert "Invoices are emailed on the first working day of each month." in sent
    assert result.snapshot.total_used <= result.snapshot.available_budget


def frob_page(steps: int = 12) -> str:
    """A man page as `man -P cat | col -bx` renders it: every line indented by 7 spaces, wrapped at 80. The
    question's words open the section; its answer closes it, sharing none of them."""
    wrapper = textwrap.TextWrapper(width=80, initial_indent=" " * 7, subsequent_indent=" " * 7)
    step = "Step {} of the frobnicator pipeline reads a record and writes it back unchanged."
    body = " ".join(["The frobnicator can be made verbose.", *map(step.format, range(steps)), ANSWER])
    title = "FROB(1)                         User Commands                        FROB(1)"
    return f"{title}\n\nDESCRIPTION\n{wrapper.fill(body)}\n"


async def test_a_wrapped_man_page_section_reaches_a_300_token_window_whole(
    store: KnowledgeStore, tmp_path: Path
) -> None:
    """Sent unwrapped, the section fits 300 tokens whole, answer included; sent as rendered (the indentation and
    line breaks cost ~10% more) it would not, and a window around the question's words would cut the answer."""
    (tmp_path / "frob.txt").write_text(frob_page())
    ingest_paths(store, [tmp_path / "frob.txt"], "manuals")
    retriever = ChromaKnowledgeRetriever(store)
    (chunk,) = retriever.search("frobnicator verbose", collections=["manuals"], k=5)
    doc = read_document(tmp_path / "frob.txt")
    (as_rendered,) = chunk_document(
        replace(doc, blocks=tuple(replace(b, wrapped=False) for b in doc.blocks)), TOKENS.count
    )
    label = f"[SOURCE 1] {chunk.title}"
    assert (
        TOKENS.count(f"{HEADER}\n\n{label}\n{chunk.text}")
        <= 300
        < TOKENS.count(f"{HEADER}\n\n{label}\n{as_rendered.text}")
    )

    definition = load_folder(Path(__file__).resolve().parents[2] / "modules" / "knowledge_context", "builtin")
    module = definition.cls(definition.manifest)
    for budget in range(40, 720, 7):
        ctx = AssemblyContext(
            query="How do I make the frobnicator verbose?",
            profile=Profile("p", "rag_focused", knowledge_collections=("manuals",)),
            session=Session("s"),
            model="gpt-4o",
            knowledge=retriever,
        ).for_module(Directives(config={}), TOKENS)
        text = (await module.contribute(budget, ctx)).text()
        assert TOKENS.count(text) <= budget
        if budget >= 300:
            assert ANSWER in text and "\n       " not in text


async def test_a_store_without_a_sentence_index_still_fills_a_small_window(
    store: KnowledgeStore, tmp_path: Path
) -> None:
    """A collection ingested before sentence indexes (none beside it) is packed as before at small budgets: a window
    of its first hit, never over budget; with its index, the window is made of the index's sentences."""
    (tmp_path / "frob.txt").write_text(frob_page(steps=30))
    ingest_paths(store, [tmp_path / "frob.txt"], "manuals")
    definition = load_folder(Path(__file__).resolve().parents[2] / "modules" / "knowledge_context", "builtin")
    module = definition.cls(definition.manifest)

    async def sent(budget: int) -> str:
        ctx = AssemblyContext(
            query="How do I make the frobnicator verbose?",
            profile=Profile("p", "rag_focused", knowledge_collections=("manuals",)),
            session=Session("s"),
            model="gpt-4o",
            knowledge=ChromaKnowledgeRetriever(store),
        ).for_module(Directives(config={}), TOKENS)
        return (await module.contribute(budget, ctx)).text()

    with_index = await sent(120)
    store.client.delete_collection(sentences_of("manuals"))
    without = await sent(120)
    for text in (with_index, without):
        assert text.startswith(HEADER) and "The frobnicator can be made verbose." in text and TOKENS.count(text) <= 120
    assert with_index != without
