"""What knowledge_context contributes to a turn, outside a turn: the CLI's ``tda knowledge context``.

The same code path as a turn: the built-in module loaded as the registry loads it, the service's
``LiveKnowledge`` provider on the same store, the model's token estimator, and the module options a
window type would set. Only the orchestrator is left out: the budget is the one given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from components.context_window.base import AssemblyContext, ContextModule, Directives, Profile, Session
from components.context_window.token_estimator import estimator_for

from ..builtins import module_registry
from .providers import LiveKnowledge


class KnowledgeContextRunner:
    def __init__(
        self,
        data_dir: Path,
        chroma_url: str | None = None,
        *,
        embedder: str,
        collections: Sequence[str],
        model: str,
        config: Mapping[str, Any] | None = None,
        knowledge: LiveKnowledge | None = None,
        module: ContextModule | None = None,
    ) -> None:
        """``knowledge``: a running service's store (the HTTP API), left open by ``close``; else one is opened.
        ``module``: the running service's knowledge_context; else the built-in one is loaded."""
        self.owns_knowledge = knowledge is None
        self.knowledge = knowledge or LiveKnowledge(data_dir, chroma_url, embedder=embedder)
        self.module = module or module_registry(entry_point_group=None).load().modules["knowledge_context"]
        self.collections = tuple(collections)
        self.model = model
        self.tokens = estimator_for(model)
        self.config = dict(config or {})

    def check_collections(self) -> None:
        """A clear error for a misspelt collection (a turn would quietly find nothing)."""
        store = self.knowledge._open().store
        for name in self.collections:
            store.collection(name)

    async def context(self, query: str, budget: int) -> dict[str, Any]:
        """``{"text", "tokens", "sources"}``: the contribution's text as sent, its tokens, its sources."""
        ctx = AssemblyContext(
            query=query,
            profile=Profile(id="tda-knowledge-context", type="rag_focused", knowledge_collections=self.collections),
            session=Session(id="tda-knowledge-context"),
            model=self.model,
            knowledge=self.knowledge,
        ).for_module(Directives(config=self.config), self.tokens)
        contribution = await self.module.contribute(budget, ctx)
        text = contribution.text()
        return {"text": text, "tokens": self.tokens.count(text), "sources": contribution.metadata.get("sources", [])}

    def close(self) -> None:
        if self.owns_knowledge:
            self.knowledge.close()
