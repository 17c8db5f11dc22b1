"""Where built catalogs and indexes live on disk (`$AGENTSIM_CACHE` or `~/.cache/agentsim`)."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

log = logging.getLogger(__name__)


def cache_root() -> Path:
    """The folder holding one sub-folder per built catalog."""
    root = os.environ.get("AGENTSIM_CACHE")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "agentsim"
    return base / "webshop"


def cache_dir(catalog_hash: str) -> Path:
    """One directory per catalog hash: codes, goals and the search index built from them."""
    d = cache_root() / catalog_hash
    d.mkdir(parents=True, exist_ok=True)
    os.utime(d)  # last use, for prune_disk_cache's LRU order
    return d


def _dir_bytes(d: Path) -> int:
    return sum(f.stat().st_size for f in d.rglob("*") if f.is_file() and not f.is_symlink())


def prune_disk_cache(budget_bytes: int, keep: set[str]) -> int:
    """Delete the least recently used catalog folders (never those in `keep`) until the cache fits the budget.

    A server whose clients may pick `catalog_seed` would otherwise fill the disk one catalog at a
    time; returns the bytes freed."""
    root = cache_root()
    if not root.exists():
        return 0
    dirs = sorted((d for d in root.iterdir() if d.is_dir()), key=lambda d: d.stat().st_mtime)
    sizes = {d: _dir_bytes(d) for d in dirs}
    total, freed = sum(sizes.values()), 0
    for d in dirs:
        if total <= budget_bytes:
            break
        if d.name in keep:
            continue
        shutil.rmtree(d, ignore_errors=True)
        total -= sizes[d]
        freed += sizes[d]
        log.info(
            "webshop disk cache: removed %s (%.1f MB, budget %.0f MB)", d.name, sizes[d] / 2**20, budget_bytes / 2**20
        )
    return freed
