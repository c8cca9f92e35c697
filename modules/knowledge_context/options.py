"""knowledge_context's options (a window type's slot ``config``); the handler reads them into its ``Options``."""

from __future__ import annotations

from pydantic import Field

from components.context_window.options import ModuleOptions


class KnowledgeOptions(ModuleOptions):
    k: int = Field(6, ge=1, description="Hits packed first; also the least retrieval depth.")
    depth_tokens: int = Field(60, ge=1, description="Budget tokens per hit retrieved beyond k (depth grows with it).")
    max_depth: int = Field(80, ge=1, description="Hits retrieved at most, however large the budget.")
    tail_ratio: float = Field(
        0.8,
        ge=0,
        le=1,
        description="Beyond the first k, a hit is packed only when its similarity or its BM25 score is at least this "
        "share of the best hit's (0: every hit retrieved).",
    )
    abstain_below: float = Field(
        0.25,
        ge=0,
        le=1,
        description="Send nothing when the best hit's similarity is below this and it shares under half the "
        "question's words, or (above 0) when the question names what no chunk of the collections holds; 0: never.",
    )
    min_score: float = Field(0.0, ge=0, le=1, description="Passages scoring below this are left out.")
    collections: list[str] | None = Field(None, description="Collections searched; default: the profile's.")
    max_expansion: int = Field(4, ge=0, description="Neighbouring chunks added in total, over all hits.")
    expand_ratio: float = Field(0.8, ge=0, le=1, description="Only hits scoring this share of the best widen.")
    neighbour_decay: float = Field(0.85, ge=0, le=1, description="A neighbour's score factor per chunk of distance.")
    reformulate: bool = Field(True, description="Rewrite a follow-up question for profiles with query_rewrite.")
    history_messages: int = Field(3, ge=1, description="Recent messages a follow-up is rewritten from.")
    llm_filter: bool = Field(False, description="Let the model keep the relevant passages of a larger pool.")
    filter_pool: int = Field(15, ge=2, description="Passages the model filter chooses from.")
    sentence_windows: bool = Field(
        True,
        description="Send windows of the sentences that match the question best across the collections: most of a "
        "budget that cannot hold the first two hits whole and a window, window_share of a larger one (needs a sentence "
        "index: collections ingested since it was added).",
    )
    sentence_radius: int = Field(1, ge=0, description="Sentences sent on each side of a sentence found.")
    chunk_weight: float = Field(
        1.5, ge=0, description="How much the rank of the chunk holding a found sentence counts beside its own."
    )
    window_share: float = Field(
        0.12,
        ge=0,
        le=1,
        description="When the budget holds the first two hits whole, the share of it kept for sentence windows "
        "(none when that is under 100 tokens).",
    )
