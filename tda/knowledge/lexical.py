"""BM25 lives in the component's relevance engine (one BM25 in the codebase); re-exported for the knowledge store."""

from components.context_window.relevance import STOPWORDS, BM25Index, stem, terms

__all__ = ["STOPWORDS", "BM25Index", "stem", "terms"]
