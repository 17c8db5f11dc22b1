"""Process-wide shared catalog + index, keyed by catalog hash, so 64 envs cost what one does.

AgentGym's WebShop server loads a catalog and index per env instance and runs out of memory
under RL load; here every env built from the same catalog options gets the same objects.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from .catalog import Catalog
from .search import Backend, SearchIndex, open_index

log = logging.getLogger(__name__)


class CatalogSpec(BaseModel):
    """Which catalog to use: synthetic (size + seed) or the original WebShop files."""

    model_config = ConfigDict(frozen=True)

    num_products: int = Field(10_000, ge=10, le=5_000_000)
    catalog_seed: int = 0
    catalog_path: Path | None = None  # items_shuffle*.json; when set, the original files are used
    attributes_path: Path | None = None  # items_ins_v2*.json
    human_goals_path: Path | None = None  # items_human_ins.json
    search_backend: Backend | None = None


@dataclass(frozen=True)
class Shop:
    catalog: Catalog
    index: SearchIndex


_SHOPS: dict[CatalogSpec, Shop] = {}
_LOCK = threading.Lock()


def _build_catalog(spec: CatalogSpec) -> Catalog:
    if spec.catalog_path is not None:
        from .loader import load_original

        return load_original(spec.catalog_path, spec.attributes_path, spec.human_goals_path)
    from .synth import SyntheticCatalog

    return SyntheticCatalog.load_or_build(spec.num_products, spec.catalog_seed)


def get_shop(spec: CatalogSpec) -> Shop:
    """The shared (catalog, index) for `spec`, loaded or built on first use in this process."""
    shop = _SHOPS.get(spec)
    if shop is not None:
        return shop
    with _LOCK:
        shop = _SHOPS.get(spec)
        if shop is None:
            catalog = _build_catalog(spec)
            shop = Shop(catalog, open_index(catalog, spec.search_backend))
            _SHOPS[spec] = shop
            log.info("webshop catalog %s ready: %d products", catalog.hash, len(catalog))
    return shop
