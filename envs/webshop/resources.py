"""Process-wide shared catalog + index, keyed by catalog options, with a byte budget.

AgentGym's WebShop server loads a catalog and index per env instance and runs out of memory
under RL load; here every env built from the same catalog options gets the same objects.
Catalogs are kept in an LRU ordered by last use and sized in (estimated) bytes: when a new one
would take the total over the budget, the least recently used ones that no env holds any more
are dropped (an env that still holds one keeps it alive, and a later request reuses that same
object instead of building a twin). If the catalogs in use alone fill the budget, a new one is
refused (`CatalogBudgetExceeded`) rather than growing the process without bound.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from .catalog import Catalog
from .paths import prune_disk_cache
from .search import Backend, SearchIndex, open_index

log = logging.getLogger(__name__)

DEFAULT_BUDGET_BYTES = 4 << 30  # in-process users (scripts, tests) rarely need more; the server sets its own
# measured per synthetic product: codes + split rows (~45 B) plus the rendered-product LRU
# (up to 8,192 products, ~2.3 kB each) and goal/query caches; see docs/server.md
BYTES_PER_PRODUCT = 48
BYTES_PER_RENDERED = 2_400
RENDER_CACHE = 8192
BASE_BYTES = 1 << 20  # index searcher, query cache, object overhead


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


class CatalogBudgetExceeded(RuntimeError):
    """Every catalog in memory is in use and one more would pass the byte budget."""


def estimate_bytes(spec: CatalogSpec) -> int:
    """Bytes a synthetic catalog of `spec` will hold once warm (before it is built)."""
    n = spec.num_products
    return BASE_BYTES + n * BYTES_PER_PRODUCT + min(n, RENDER_CACHE) * BYTES_PER_RENDERED


def catalog_bytes(spec: CatalogSpec, catalog: Catalog) -> int:
    """Bytes `catalog` holds: its numpy columns when it has them, else the estimate for its size."""
    arrays = [a for a in vars(catalog).values() if isinstance(a, np.ndarray)]
    for v in vars(catalog).values():
        if isinstance(v, dict):
            arrays += [a for a in v.values() if isinstance(a, np.ndarray)]
    n = len(catalog)
    columns = sum(a.nbytes for a in arrays) if arrays else n * BYTES_PER_PRODUCT
    return BASE_BYTES + columns + min(n, RENDER_CACHE) * BYTES_PER_RENDERED


def _load_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to trim
        return None


_MALLOC_TRIM = _load_trim()


def trim_heap() -> None:
    """Give freed heap back to the OS. Why: building a search index (tantivy's writer arena) in a worker
    thread leaves tens of MB free-but-mapped in that thread's malloc arena; without this every new catalog
    raised the server's RSS by ~6 MB for good (measured: 30 builds, +151 MB without, +32 MB with)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


@dataclass
class _Entry:
    catalog: weakref.ref
    index: weakref.ref
    nbytes: int

    def shop(self) -> Shop | None:
        c, i = self.catalog(), self.index()
        return None if c is None or i is None else Shop(c, i)


class ShopCache:
    """LRU of shops by bytes. `_held` keeps the recently used ones alive; `_known` sees every live one."""

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES, disk_budget_bytes: int | None = None) -> None:
        self.budget_bytes = budget_bytes
        self.disk_budget_bytes = disk_budget_bytes  # None: built catalogs stay on disk (in-process users)
        self._held: OrderedDict[CatalogSpec, Shop] = OrderedDict()
        self._known: dict[CatalogSpec, _Entry] = {}
        self._lock = threading.RLock()
        self.built = self.evicted = 0

    def live_bytes(self) -> int:
        """Bytes of every catalog still alive (held by the cache or by an env)."""
        with self._lock:
            self._forget_dead()
            return sum(e.nbytes for e in self._known.values())

    def stats(self) -> tuple[int, int]:
        """(catalogs alive, their bytes). Lock-free: the server's event loop calls it while a worker
        thread may hold the lock for seconds building a catalog."""
        alive = [e for e in list(self._known.values()) if e.shop() is not None]
        return len(alive), sum(e.nbytes for e in alive)

    def held(self) -> list[CatalogSpec]:
        with self._lock:
            return list(self._held)

    def in_use(self) -> list[CatalogSpec]:
        """Catalogs alive although the cache does not hold them (some env does)."""
        with self._lock:
            self._forget_dead()
            return [s for s in self._known if s not in self._held]

    def get(self, spec: CatalogSpec, build) -> Shop:
        shop = self._held.get(spec)  # fast path, no lock: a dict read is atomic; LRU order is refreshed below
        if shop is not None and self._held and next(reversed(self._held)) == spec:
            return shop
        with self._lock:
            shop = self._held.get(spec)
            if shop is not None:
                self._held.move_to_end(spec)
                return shop
            entry = self._known.get(spec)
            shop = entry.shop() if entry is not None else None
            if shop is not None:  # evicted from the LRU but an env still holds it: reuse, never build a twin
                self._held[spec] = shop
                self._trim(keep=spec)
                return shop
            need = estimate_bytes(spec) if spec.catalog_path is None else 0
            self._make_room(need, spec)
            shop = build(spec)
            nbytes = catalog_bytes(spec, shop.catalog)
            self._held[spec] = shop
            self._known[spec] = _Entry(weakref.ref(shop.catalog), weakref.ref(shop.index), nbytes)
            self.built += 1
            self._trim(keep=spec)
            trim_heap()
            if self.disk_budget_bytes is not None:
                self._forget_dead()
                alive = {c.hash for e in self._known.values() if (c := e.catalog()) is not None}
                prune_disk_cache(self.disk_budget_bytes, keep=alive)
            return shop

    def _forget_dead(self) -> None:
        for spec in [s for s, e in self._known.items() if e.shop() is None]:
            del self._known[spec]

    def _drop_lru(self, keep: CatalogSpec | None) -> bool:
        for spec in self._held:
            if spec != keep:
                del self._held[spec]
                self.evicted += 1
                gc.collect()  # catalogs hold reference cycles (bound-method LRU caches): free them now
                self._forget_dead()
                log.info("webshop catalog %s evicted (LRU, budget %.0f MB)", spec, self.budget_bytes / 2**20)
                return True
        return False

    def _make_room(self, need: int, spec: CatalogSpec) -> None:
        while self.live_bytes() + need > self.budget_bytes:
            if not self._drop_lru(keep=None):
                break
        live = self.live_bytes()
        if live + need > self.budget_bytes and live > 0:
            raise CatalogBudgetExceeded(
                f"cannot build a catalog of {spec.num_products:,} products (~{need / 2**20:.0f} MB): the "
                f"{len(self._known)} catalog(s) in use by open sessions already hold {live / 2**20:.0f} MB of this "
                f"server's {self.budget_bytes / 2**20:.0f} MB catalog budget; close sessions, reuse a catalog_seed "
                "already in use, or retry later"
            )

    def _trim(self, keep: CatalogSpec) -> None:
        while self.live_bytes() > self.budget_bytes and self._drop_lru(keep=keep):
            pass

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            gc.collect()
            self._forget_dead()
            trim_heap()


_CACHE = ShopCache()


def configure(budget_bytes: int, disk_budget_bytes: int | None = None) -> ShopCache:
    """Set the byte budgets of the process-wide cache (the env server does, from --catalog-budget-mb and
    --disk-budget-mb): memory for catalogs alive, disk for catalogs built (catalogs in use are never removed)."""
    _CACHE.budget_bytes = budget_bytes
    _CACHE.disk_budget_bytes = disk_budget_bytes
    return _CACHE


def cache() -> ShopCache:
    return _CACHE


def _build(spec: CatalogSpec) -> Shop:
    catalog: Catalog
    if spec.catalog_path is not None:
        from .loader import load_original

        catalog = load_original(spec.catalog_path, spec.attributes_path, spec.human_goals_path)
    else:
        from .synth import SyntheticCatalog

        catalog = SyntheticCatalog.load_or_build(spec.num_products, spec.catalog_seed)
    shop = Shop(catalog, open_index(catalog, spec.search_backend))
    log.info("webshop catalog %s ready: %d products", catalog.hash, len(catalog))
    return shop


def get_shop(spec: CatalogSpec) -> Shop:
    """The shared (catalog, index) for `spec`, loaded or built on first use in this process."""
    return _CACHE.get(spec, _build)
