"""The service's resident memory: tiktoken's spare rank copies are dropped without changing a count."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tda.memory import FreedMemory

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import json, gc
from tda.config import offline_library_defaults
offline_library_defaults()
import tiktoken
from tda.memory import drop_tiktoken_rank_copies

def rss_mb():
    gc.collect()
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS")) / 1024

texts = ["Hello, world!", "How are refunds handled?", "สวัสดีครับ ขอบคุณมาก", "def f(x):\\n    return x ** 2"]
encodings = [tiktoken.get_encoding(name) for name in ("o200k_base", "cl100k_base")]
before = [[e.encode_ordinary(t) for t in texts] for e in encodings]
loaded = rss_mb()
dropped = drop_tiktoken_rank_copies()
freed = loaded - rss_mb()
after = [[e.encode_ordinary(t) for t in texts] for e in encodings]
decoded = [[e.decode(ids) for ids in row] for e, row in zip(encodings, after)]
print(json.dumps({"dropped": dropped, "freed": freed, "same": before == after, "decoded": decoded, "texts": texts}))
"""


def test_dropping_tiktokens_rank_copies_frees_memory_and_changes_no_token() -> None:
    """In a fresh process (the encodings load there): both encodings give the same ids after the drop, the ids
    still decode to the texts, and the resident memory falls by tens of MB (measured 42)."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True, text=True, check=True, timeout=300
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["dropped"] == 2 and result["same"]
    assert result["decoded"] == [result["texts"], result["texts"]]
    assert result["freed"] > 25, f"only {result['freed']:.0f} MB freed"


_LITELLM_PROBE = """
import gc, json
from pathlib import Path

from tda.memory import FreedMemory
from tokenizers import Tokenizer
from tda.config import offline_library_defaults
from tda.memory import drop_litellm_tokenizer_copy, return_freed_memory
offline_library_defaults()
import litellm, litellm.utils

def rss_mb():
    gc.collect()
    return_freed_memory()
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS")) / 1024

loaded = rss_mb()
dropped = drop_litellm_tokenizer_copy(litellm.utils)
freed = loaded - rss_mb()
from tda.llm import _litellm
_litellm()  # what the service calls: the copy is gone, whichever imported litellm first
texts = ["Hello, world!", "How are refunds handled?", "สวัสดีครับ ขอบคุณมาก", "def f(x):\\n    return x ** 2"]
model = next(m for m in sorted(litellm.anthropic_models) if litellm.utils.uses_anthropic_tokenizer(m))
packaged = Path(litellm.__file__).parent / "litellm_core_utils" / "tokenizers" / "anthropic_tokenizer.json"
oracle = Tokenizer.from_file(str(packaged))
print(json.dumps({
    "dropped": dropped, "again": drop_litellm_tokenizer_copy(litellm.utils), "freed": freed,
    "counts": [litellm.token_counter(model=model, text=t) for t in texts],
    "oracle": [len(oracle.encode(t).ids) for t in texts],
}))
"""


def test_litellms_parsed_tokenizer_copy_is_dropped_and_claude_counts_do_not_change() -> None:
    """litellm keeps its packaged Anthropic tokenizer twice (parsed and as text); the parsed copy goes, and litellm's
    count for a model on that tokenizer still equals the packaged file's own count, read with `tokenizers`."""
    done = subprocess.run(
        [sys.executable, "-c", _LITELLM_PROBE], cwd=ROOT, capture_output=True, text=True, check=True, timeout=300
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["dropped"] and not result["again"]
    assert result["counts"] == result["oracle"] and min(result["counts"]) > 0
    assert result["freed"] > 3, f"only {result['freed']:.1f} MB freed"


_CHROMA_PROBE = """
import json, sys, tempfile
from pathlib import Path

from tda.memory import FreedMemory
from tda.knowledge.store import KnowledgeStore
imported = "grpc" in sys.modules
with tempfile.TemporaryDirectory() as folder:
    store = KnowledgeStore.open(Path(folder), embedder="hashing")
    store.collection("notes", create=True).add(ids=["a"], documents=["refunds within 30 days"])
    found = store.collection("notes").query(query_texts=["refund"], n_results=1)["ids"][0]
    store.close()
after_use = "grpc" in sys.modules
import chromadb.telemetry.opentelemetry as chroma_tracing
built = chroma_tracing.OTLPSpanExporter(endpoint="http://127.0.0.1:4317")
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
print(json.dumps({"imported": imported, "after_use": after_use, "found": found,
                  "real": isinstance(built, OTLPSpanExporter), "grpc": "grpc" in sys.modules}))
"""


def test_chromas_grpc_exporter_loads_only_when_chroma_builds_one() -> None:
    """Opening and using the knowledge store leaves gRPC unimported; Chroma's own tracing, when configured, still
    gets OpenTelemetry's real gRPC exporter."""
    done = subprocess.run(
        [sys.executable, "-c", _CHROMA_PROBE], cwd=ROOT, capture_output=True, text=True, check=True, timeout=300
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"imported": False, "after_use": False, "found": ["a"], "real": True, "grpc": True}


def test_freed_memory_is_given_back_when_idle_at_most_once_per_interval() -> None:
    """A burst of turns trims once; the first idle moment after the interval trims again."""
    now, trims = [100.0], []
    freed = FreedMemory(every_s=10.0, trim=lambda: trims.append(now[0]), clock=lambda: now[0])
    for step in (0.0, 1.0, 8.0, 0.5, 3.0, 9.0, 1.0):
        now[0] += step
        freed.idle()
    assert trims == [100.0, 112.5, 122.5]


_RESENT = """
import resource
from tda.memory import tune_malloc
tune_malloc()

def faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

body = b'{"messages": "' + b"a" * 900_000 + b'"}'
for _ in range(3):  # the first bodies take the heap's pages
    bytes(bytearray(body)).decode()
before = faults()
for _ in range(20):  # a call's copies of its body: a buffer joined, its bytes, its text
    bytes(bytearray(body)).decode()
print((faults() - before) / 20)
"""


def test_a_resent_body_s_copies_reuse_the_heap_s_pages_call_after_call() -> None:
    """A chat client sends its whole conversation on every call (~900 KB at turn 100 of an agent session) and the
    server copies it on its way in: under `tda serve`'s heap settings the copies of one call after another take
    pages the heap holds, not pages mapped and faulted in anew (each fault a kernel entry: ~2 ms of CPU a body).
    The oracle is the kernel's count of the process's page faults; a copy mapped apart faults in ~220 pages."""
    probe = subprocess.run(
        [sys.executable, "-c", _RESENT], capture_output=True, text=True, check=True, cwd=ROOT, timeout=120
    )
    assert float(probe.stdout) < 20  # pages a call: a few for what else runs, never the body's ~220 per copy
