"""Demo data for `make run`: the four shipped types, one profile per profile type, a session with history,
and a knowledge collection made of the project's user-facing documentation (README.md and docs/*.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import Conflict, NotFound
from .store import Store

if TYPE_CHECKING:
    from .config import Settings
    from .knowledge.ingest import IngestReport
    from .knowledge.store import KnowledgeStore

ACTOR = "demo"
DEMO_SESSION = "demo"
DEMO_COLLECTION = "demo"
DOCS = Path(__file__).resolve().parents[1] / "docs"
README = DOCS.parent / "README.md"
LAB_NOTEBOOKS = frozenset({"benchmarks.md", "knowledge.md"})
"""docs/ pages that are measurement logs: each session adds its figures (2,500-3,000 lines each, 728 of 1,010 chunks),
which is not what a user asks the demo about, and made the demo's windows and `make bench`'s demo turn change with no
code change (959 -> 1,010 chunks in one session). The reference they hold is in the other pages too."""

_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_orders",
            "description": "Find customer orders by status and date range.",
            "parameters": {
                "type": "object",
                "properties": {
                    "status": {"type": "string", "enum": ["open", "shipped", "returned"]},
                    "since": {"type": "string", "description": "ISO date"},
                },
                "required": ["status"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_sql",
            "description": "Run a read-only SQL query against the sales warehouse.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "plot_series",
            "description": "Draw a line chart from a result set.",
            "parameters": {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "string"}}},
        },
    },
]

PROFILES: list[dict[str, Any]] = [
    {
        "id": "demo-tools",
        "name": "Sales analyst (tools)",
        "type": "tool_enabled",
        "context_window_type_id": "balanced",
        "knowledge_collections": [DEMO_COLLECTION],
        "system_prompt": "You are a sales analyst. Use the tools to answer with figures, and say which query you ran.",
        "tools": _TOOLS,
        "components": ["charting", "tables"],
    },
    {
        "id": "demo-chat",
        "name": "Chat assistant",
        "type": "llm_only",
        "context_window_type_id": "conversation_first",
        "knowledge_collections": [DEMO_COLLECTION],
        "system_prompt": "You are a concise, friendly assistant.",
    },
    {
        "id": "demo-rag",
        "name": "Policy librarian (RAG)",
        "type": "rag_focused",
        "context_window_type_id": "knowledge_heavy",
        "knowledge_collections": [DEMO_COLLECTION],
        "system_prompt": "Answer from the knowledge base and cite the document for every claim.",
    },
    {
        "id": "demo-genie",
        "name": "Coordinator (genie)",
        "type": "genie",
        "context_window_type_id": "token_efficient",
        "system_prompt": "You coordinate specialist agents and keep their answers short.",
    },
]

_HISTORY = [
    (
        "How many orders shipped last week?",
        "412 orders shipped between 3 and 9 November (search_orders, status=shipped).",
    ),
    ("And how many were returned?", "27 of them were returned, a 6.6% return rate."),
    ("Which region had the most returns?", "The North region: 14 of the 27 returns (run_sql over returns by region)."),
    ("Plot weekly returns for the North since September.", "Done: returns rose from 6 to 14 a week since mid-October."),
]


COMPONENT_INSTRUCTIONS: dict[str, dict[str, str]] = {
    "charting": {
        "full": "To show a chart, answer with a fenced ```chart block holding a Vega-Lite v5 spec: inline data "
        "values, a title, and a label with units on every axis. Prefer bars for categories and lines for time.",
        "medium": "Charts: a ```chart block with a Vega-Lite v5 spec; title and labelled axes.",
        "light": "Charts: ```chart with Vega-Lite.",
    },
    "tables": {
        "full": "To show a table, use a Markdown table with a header row; right-align numbers, at most 20 rows, "
        "and say how many rows were left out.",
        "light": "Tables: Markdown, at most 20 rows.",
    },
}


async def seed_demo(store: Store) -> dict[str, Any]:
    """Idempotent: creates what is missing, leaves what exists (including edits) alone."""
    types = await store.types.seed_defaults(ACTOR)
    profiles = 0
    for p in PROFILES:
        try:
            await store.profiles.create(p["id"], {k: v for k, v in p.items() if k != "id"}, ACTOR)
            profiles += 1
        except Conflict:
            pass
    for component, texts in COMPONENT_INSTRUCTIONS.items():
        try:
            await store.components.get(component)
        except NotFound:  # an admin's own texts stay
            await store.components.put(component, texts, ACTOR)
    session = await _seed_session(store)
    return {"types_created": types, "profiles_created": profiles, "session": session}


def demo_documents() -> list[Path]:
    """What the demo's knowledge holds: the README and the docs/ pages a user reads, not the measurement logs."""
    return [README, *(page for page in sorted(DOCS.glob("*.md")) if page.name not in LAB_NOTEBOOKS)]


def seed_demo_knowledge(settings: Settings) -> IngestReport:
    """``demo_documents`` into the demo collection (~300 chunks), and the docs/ pages it no longer seeds (the
    measurement logs an earlier demo held, a page since removed) out of it. Unchanged files are skipped before any
    embedding, so running the demo again costs next to nothing."""
    from .knowledge.ingest import ingest_paths
    from .knowledge.store import KnowledgeStore

    # no sentence index: the demo's windows give knowledge thousands of tokens, where sentence windows never apply
    store = KnowledgeStore.open(settings.data_dir, settings.chroma_url, embedder=settings.embedder, sentences=False)
    try:
        report = ingest_paths(store, demo_documents(), DEMO_COLLECTION, base=DOCS.parent)
        _drop_unseeded_pages(store)
        return report
    finally:
        store.close()


def _drop_unseeded_pages(store: KnowledgeStore) -> None:
    """Deletes the docs/ pages the demo collection holds that ``demo_documents`` no longer names (a user's own
    documents in it stay)."""
    seeded = {path.relative_to(DOCS.parent).as_posix() for path in demo_documents()}
    for document in store.document_ids(DEMO_COLLECTION):
        if document.startswith("docs/") and document not in seeded:
            store.delete_document(DEMO_COLLECTION, document)


async def _seed_session(store: Store) -> str:
    try:
        await store.sessions.create(
            {"id": DEMO_SESSION, "profile_id": "demo-tools", "user_id": "demo-user", "title": "Returns analysis"}, ACTOR
        )
    except Conflict:
        return DEMO_SESSION
    for turn, (query, answer) in enumerate(_HISTORY, start=1):
        await store.sessions.record_turn(
            DEMO_SESSION,
            {"turn": turn, "query": query, "answer": answer, "tokens_in": 900 + 150 * turn, "tokens_out": 60},
            [{"role": "user", "content": query}, {"role": "assistant", "content": answer}],
        )
    await store.sessions.add_attachment(
        DEMO_SESSION,
        {
            "name": "returns-policy.txt",
            "text": "Returns are accepted within 30 days of delivery. Damaged items are refunded in full; "
            "other returns are refunded less shipping. Regional managers review return rates weekly.",
        },
        ACTOR,
    )
    return DEMO_SESSION
