"""End to end: a real store and retriever feed knowledge_context inside a full assembly."""

from __future__ import annotations

from pathlib import Path

from components.context_window.base import AssemblyContext, Profile, Session
from components.context_window.handler import ContextWindowHandler
from components.context_window.module_registry import ModuleRegistry
from components.context_window.window_type import DEFAULT_TYPES
from tda.knowledge.ingest import ingest_paths
from tda.knowledge.retrieval import ChromaKnowledgeRetriever
from tda.knowledge.store import KnowledgeStore


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
