"""The session file read by ``tda assemble``: one JSON document describing a turn to assemble.

Format (every key but ``query`` is optional)::

    {
      "model": "gpt-4o",
      "query": "What changed in Q3?",
      "profile":  {"id", "type", "name", "system_prompt", "components": [...], "context_limit",
                   "knowledge_collections": [...]},
      "session":  {"id", "user_id", "phase", "context_limit"},
      "messages": [OpenAI chat dicts, optionally with "turn", "valid", "phase"],
      "tools":    [OpenAI function tools: {"type": "function", "function": {name, description, parameters}}],
      "documents": [{"id", "name", "text"}],
      "turns":    [{"turn", "query", "plan", "answer", "outcome", "tokens_in", "tokens_out", "results", "phase"}],
      "knowledge": [{"text", "score", "document_id", "title", "section", "page", "chunk_index", "collection"}],
      "rag_cases": [{"id", "query", "score", "plan", "answer", "tokens", "feedback"}],
      "component_instructions": {"<component>": {"full": "...", "medium": "...", "light": "..."}}
    }
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from components.context_window.base import (
    AssemblyContext,
    ChampionCase,
    Document,
    Embedder,
    Message,
    Passage,
    Profile,
    ProfileType,
    Session,
    ToolSchema,
    TurnRecord,
)
from components.context_window.providers import StaticCases, StaticKnowledge


class SessionFileError(ValueError):
    """The session file is unreadable or invalid; the message says where."""


class _ProfileIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = "example"
    type: ProfileType = "tool_enabled"
    name: str = ""
    system_prompt: str = "You are a helpful assistant."
    components: list[str] = Field(default_factory=list)
    context_limit: int | None = Field(None, gt=0)
    knowledge_collections: list[str] = Field(default_factory=list)


class _SessionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = "example-session"
    user_id: str = "anonymous"
    phase: str | None = None
    context_limit: int | None = Field(None, gt=0)


class SessionFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = "gpt-4o"
    query: str
    profile: _ProfileIn = Field(default_factory=_ProfileIn)
    session: _SessionIn = Field(default_factory=_SessionIn)
    messages: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)
    documents: list[dict[str, Any]] = Field(default_factory=list)
    turns: list[dict[str, Any]] = Field(default_factory=list)
    knowledge: list[dict[str, Any]] = Field(default_factory=list)
    rag_cases: list[dict[str, Any]] = Field(default_factory=list)
    component_instructions: dict[str, dict[str, str]] = Field(default_factory=dict)

    def to_context(
        self, model: str | None = None, model_limit: int | None = None, embedder: Embedder | None = None
    ) -> AssemblyContext:
        """The context to assemble; ``embedder`` ranks history and tools by meaning as the service does (None: by
        words only)."""
        p, s = self.profile, self.session
        turns = [TurnRecord(**{**t, "results": tuple(t.get("results", ()))}) for t in self.turns]
        return AssemblyContext(
            query=self.query,
            model=model or self.model,
            model_limit=model_limit,
            profile=Profile(
                p.id,
                p.type,
                p.name,
                p.system_prompt,
                tuple(p.components),
                p.context_limit,
                tuple(p.knowledge_collections),
            ),
            session=Session(
                s.id,
                s.user_id,
                messages=[Message.from_chat(m) for m in self.messages],
                turns=turns,
                documents=[Document(**d) for d in self.documents],
                context_limit=s.context_limit,
                phase=s.phase,
            ),
            tools=[ToolSchema.from_openai(t) for t in self.tools],
            knowledge=StaticKnowledge([Passage(**k) for k in self.knowledge]) if self.knowledge else None,
            cases=StaticCases([ChampionCase(**c) for c in self.rag_cases]) if self.rag_cases else None,
            extras={"component_instructions": self.component_instructions},
            embedder=embedder,
        )


def load_session_file(
    path: Path, *, model: str | None = None, model_limit: int | None = None, embedder: Embedder | None = None
) -> AssemblyContext:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return SessionFile.model_validate(data).to_context(model, model_limit, embedder)
    except OSError as exc:
        raise SessionFileError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise SessionFileError(f"{path} is not valid JSON: {exc}") from None
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        raise SessionFileError(f"{path}: {where}") from None
    except (TypeError, KeyError) as exc:
        raise SessionFileError(f"{path}: {exc}") from None
