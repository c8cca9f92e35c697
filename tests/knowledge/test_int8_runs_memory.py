"""The int8 embedder's runs keep a turn's scratch out of the C heap (docs/history/benchmarks-log.md,
"Session 55 (arena55)"): onnxruntime's tensors in its own arena, given back after a large run; a small run's input and
LayerNorm in buffers mapped apart; the pooling in place. The vectors stay those of a session with the arena off and
numpy's expressions made anew."""

from __future__ import annotations

import functools
import tempfile
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tda.knowledge.embeddings import MiniLMInt8Embedding
from tda.knowledge.minilm import HIDDEN, read_safetensors
from tda.knowledge.minilm_int8 import GIVE_BACK, SMALL_RUN_PIECES, built_graph
from tda.knowledge.model_files import model_folder

Encoder = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _model() -> Any:
    return MiniLMInt8Embedding.runtime()[0]


@functools.cache
def _arena_off() -> Encoder:
    """The oracle: the same graph in a session with onnxruntime's arena off (as before session 55), its input and
    pooling written out here as numpy expressions, each making its arrays anew."""
    weights = model_folder() / "model.safetensors"
    w = read_safetensors(weights)
    words, positions = w["embeddings.word_embeddings.weight"], w["embeddings.position_embeddings.weight"]
    token_type = w["embeddings.token_type_embeddings.weight"][0]
    gain, shift = w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"]
    graph = Path(tempfile.mkdtemp(prefix="tda-test-int8-")) / "layers.onnx"
    built_graph(weights, graph)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = False
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = onnxruntime.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
    graph.unlink()

    def encode(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        x = (words[ids] + positions[: ids.shape[1]] + token_type).astype(np.float32)
        centred = x - x.mean(axis=-1, keepdims=True)
        x = centred / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + 1e-12) * gain + shift
        (hidden,) = session.run(None, {"x": x, "mask": mask.astype(np.int32)})
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    return encode


def _run(batch: int, length: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Token ids of real word pieces and a mask whose rows end in padding of their own lengths, [CLS] first."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, 30000, size=(batch, length), dtype=np.int64)
    ids[:, 0] = 101
    mask = np.zeros((batch, length), dtype=np.int64)
    for row, kept in enumerate(rng.integers(1, length + 1, size=batch)):
        mask[row, :kept] = 1
        ids[row, kept:] = 0
    return ids, mask


def test_the_session_runs_in_its_arena_and_a_large_run_gives_it_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails before session 55 (the arena was off): the arena is on, a run over SMALL_RUN_PIECES asks onnxruntime to
    free the arena's regions no tensor holds once it is done, and a small run keeps them for the next."""
    model = _model()
    assert model.session.get_session_options().enable_cpu_mem_arena
    asked: list[str | None] = []
    run = model.session.run

    def spy(outputs: Any, feeds: Any, options: Any = None) -> Any:
        asked.append(options.get_run_config_entry(GIVE_BACK) if options is not None else None)
        return run(outputs, feeds, options)

    monkeypatch.setattr(model.session, "run", spy)
    for batch, length in ((1, 20), (2, SMALL_RUN_PIECES // 2), (2, SMALL_RUN_PIECES // 2 + 1), (1, 512)):
        model.encode(*_run(batch, length, seed=length))
    assert asked == [None, None, "cpu:0", "cpu:0"]


@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 4), length=st.integers(2, 90), seed=st.integers(0, 2**32 - 1))
def test_the_vectors_are_the_arena_off_ones_bit_for_bit(batch: int, length: int, seed: int) -> None:
    ids, mask = _run(batch, length, seed)
    assert _model().encode(ids, mask).tobytes() == _arena_off()(ids, mask).tobytes()


@pytest.mark.parametrize(("batch", "length"), [(1, 512), (4, 128), (16, 32)])
def test_a_large_runs_vectors_are_the_arena_off_ones_bit_for_bit(batch: int, length: int) -> None:
    ids, mask = _run(batch, length, seed=batch)
    assert _model().encode(ids, mask).tobytes() == _arena_off()(ids, mask).tobytes()


def test_runs_side_by_side_share_the_scratch_safely() -> None:
    """One run at a time writes into the scratch; the others make their arrays: every thread gets its own vectors."""
    runs = [_run(1 + i % 3, 10 + 7 * i, seed=i) for i in range(24)]
    expected = [_arena_off()(*r) for r in runs]
    got: dict[int, np.ndarray] = {}

    def work(start: int) -> None:
        for i in range(start, len(runs), 4):
            for _ in range(3):
                got[i] = _model().encode(*runs[i])
                assert got[i].tobytes() == expected[i].tobytes()

    threads = [threading.Thread(target=work, args=(start,)) for start in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(got) == list(range(len(runs)))


def test_a_small_run_makes_no_array_of_its_states_size() -> None:
    """Fails before session 55 (the token embeddings' sums, their LayerNorm's temporaries and the pooling's product
    were each a new (batch, length, 384) array of the heap): numpy's allocations during a small run, traced, peak
    below half of one such array (what is left: per-token arrays, and the 32 KiB buffer numpy's broadcasting
    operations take)."""
    model = _model()
    ids, mask = _run(2, 60, seed=7)
    model.encode(ids, mask)  # the arena's regions for this size, made once
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        model.encode(ids, mask)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < ids.size * HIDDEN * 4 // 2, peak
