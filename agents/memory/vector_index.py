"""Exact in-memory vector index: a growable float32 matrix plus the per-row columns the scorer needs.

Chosen by measurement (bench/memory_speed.py, 100k x 384, 2 cores): one numpy mat-vec over all rows takes
3-5 ms, faster than faiss IndexFlatIP (7-24 ms), exact unlike HNSW (0.6 ms but approximate and ~24 s to
build), and far faster than sqlite-vec's brute-force vec0 scan — which also cannot load into Pythons built
without loadable SQLite extensions. Computing *every* similarity also makes the recency + importance +
relevance score exact over all memories, with no candidate cut-off.
"""

from __future__ import annotations

import contextlib
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=1)
def _blas_limiter():
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # optional: without it the mat-vec uses BLAS's own threading
        return None
    return ThreadpoolController().select(user_api="blas")


def _single_thread():
    lim = _blas_limiter()
    return lim.limit(limits=1) if lim is not None else contextlib.nullcontext()


class VectorMatrix:
    """Rows of (id, vector, clock, importance); append-only, cleared as a whole."""

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        self.n = 0
        self._vecs = np.empty((capacity, dim), dtype=np.float32)
        self._ids = np.empty(capacity, dtype=np.int64)
        self._clock = np.empty(capacity, dtype=np.float64)
        self._imp = np.empty(capacity, dtype=np.float32)

    def _grow(self, need: int) -> None:
        cap = len(self._ids)
        if need <= cap:
            return
        new = max(need, cap * 2)
        for name in ("_vecs", "_ids", "_clock", "_imp"):
            old = getattr(self, name)
            arr = np.empty((new, *old.shape[1:]), dtype=old.dtype)
            arr[: self.n] = old[: self.n]
            setattr(self, name, arr)

    def add(self, ids: np.ndarray, vecs: np.ndarray, clock: np.ndarray, importance: np.ndarray) -> None:
        m = len(ids)
        if vecs.shape != (m, self.dim):
            raise ValueError(f"expected vectors of shape ({m}, {self.dim}), got {vecs.shape}")
        self._grow(self.n + m)
        s = slice(self.n, self.n + m)
        self._vecs[s], self._ids[s], self._clock[s], self._imp[s] = vecs, ids, clock, importance
        self.n += m

    @property
    def ids(self) -> np.ndarray:
        return self._ids[: self.n]

    @property
    def clock(self) -> np.ndarray:
        return self._clock[: self.n]

    @property
    def importance(self) -> np.ndarray:
        return self._imp[: self.n]

    @property
    def vectors(self) -> np.ndarray:
        return self._vecs[: self.n]

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of the (normalised) query with every row."""
        with _single_thread():
            return self._vecs[: self.n] @ query.astype(np.float32, copy=False)

    def clear(self) -> None:
        self.n = 0
