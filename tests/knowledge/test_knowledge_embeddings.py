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
