"""Where built catalogs and indexes live on disk (`$AGENTSIM_CACHE` or `~/.cache/agentsim`)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    root = os.environ.get("AGENTSIM_CACHE")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "agentsim"
    return base / "webshop"


def cache_dir(catalog_hash: str) -> Path:
    """One directory per catalog hash: codes, goals and the search index built from them."""
    d = cache_root() / catalog_hash
    d.mkdir(parents=True, exist_ok=True)
    return d
