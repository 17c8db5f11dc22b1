"""Exact in-memory vector index: a growable float32 matrix, the per-row columns the scorer needs, and an exact
top-k by recency + importance + relevance that is fast at 100k rows.

Measured (bench/memory_speed.py, 100k x 384, one thread): the numpy float32 mat-vec over all rows takes ~5 ms;
faiss IndexFlatIP is no faster, HNSW is approximate and slow to build, sqlite-vec cannot load into Pythons
built without loadable SQLite extensions. Above `min_rows` rows (and with faiss installed) a faiss 8-bit
scalar quantizer (`sq_candidates`, ~2 ms) proposes candidates, which are rescored with the float32 rows; a
bound proves that no other row can beat the k-th result, else the candidate set widens and, as a last
resort, every row is scored. So results are always those of the full float32 scan (same rows, same order).

Bit-for-bit equality with the full scan needs care: BLAS computes a row's dot product with a different
kernel when it falls in the last ``rows % 4`` of a call, so every mat-vec here runs over a multiple of
`ROW_PAD` rows (zero rows pad the end); ties are broken by row number.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from agents.memory.scoring import ScoreWeights, combined, top_k
from agents.memory.sq_candidates import SQCandidates, faiss_module, faiss_threads

log = logging.getLogger(__name__)

ROW_PAD = 16  # every mat-vec covers a multiple of this many rows (see module docstring)


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


def _padded(m: int) -> int:
    return -(-m // ROW_PAD) * ROW_PAD


@dataclass
class Hits:
    rows: np.ndarray  # row numbers in the matrix, best first
    scores: np.ndarray
    sims: np.ndarray


@dataclass
class SearchStats:
    """How queries were answered: `fallback` counts quantized searches that had to scan every row."""

    exact: int = 0  # below min_rows / exact index / tail too long: full scan by design
    quantized: int = 0  # answered from candidates
    widened: int = 0  # of those, after widening the candidate set at least once
    fallback: int = 0  # the bound never held: full scan

    def as_dict(self) -> dict[str, float]:
        tried = self.quantized + self.fallback
        return {
            "exact": self.exact,
            "quantized": self.quantized,
            "widened": self.widened,
            "fallback": self.fallback,
            "fallback_rate": self.fallback / tried if tried else 0.0,
        }


class VectorMatrix:
    """Rows of (id, vector, clock, importance); append-only, cleared as a whole.

    `index`: "exact" always scans every row; "sq8" uses the quantized candidates above `min_rows` rows (faiss
    required); "auto" is "sq8" when faiss is installed. `tail_half_lives`: rows newer than this many recency
    half-lives are always rescored exactly (recency is large there); older rows get a recency upper bound.
    When the bound fails, the candidate set grows 8x up to `max_widenings` times (each costs another ~2 ms
    quantized scan at 100k), then every row is scanned (`stats.fallback`).
    """

    def __init__(
        self,
        dim: int,
        capacity: int = 1024,
        index: str = "auto",
        min_rows: int = 20_000,
        initial_candidates: int = 64,
        tail_half_lives: float = 10.0,
        max_widenings: int = 2,
    ) -> None:
        if index not in ("auto", "exact", "sq8"):
            raise ValueError(f"index must be 'auto', 'exact' or 'sq8', got {index!r}")
        if index == "sq8" and faiss_module() is None:
            raise RuntimeError("index='sq8' needs faiss: `pip install faiss-cpu` (in the `prm` extra)")
        if index == "auto" and faiss_module() is None:
            log.info(
                "faiss not installed: episodic retrieval scans every row (pip install faiss-cpu for the "
                "quantized candidate index)"
            )
        self.dim = dim
        self.n = 0
        self.mode = "sq8" if index == "sq8" or (index == "auto" and faiss_module() is not None) else "exact"
        self.min_rows = min_rows
        self.initial_candidates = initial_candidates
        self.tail_half_lives = tail_half_lives
        self.max_widenings = max_widenings
        self.stats = SearchStats()
        self._sq: SQCandidates | None = None
        cap = _padded(capacity) + ROW_PAD
        self._vecs = np.zeros((cap, dim), dtype=np.float32)  # rows >= n stay zero: they pad mat-vecs
        self._ids = np.empty(cap, dtype=np.int64)
        self._clock = np.empty(cap, dtype=np.float64)
        self._clock_max = np.empty(cap, dtype=np.float64)  # running max of clock: bounds recency of a prefix
        self._imp = np.empty(cap, dtype=np.float32)

    def _grow(self, need: int) -> None:
        cap = len(self._ids)
        need = _padded(need) + ROW_PAD  # a padded mat-vec may read up to ROW_PAD - 1 rows past n
        if need <= cap:
            return
        new = max(need, cap * 2)
        for name in ("_vecs", "_ids", "_clock", "_clock_max", "_imp"):
            old = getattr(self, name)
            arr = (np.zeros if name == "_vecs" else np.empty)((new, *old.shape[1:]), dtype=old.dtype)
            arr[: self.n] = old[: self.n]
            setattr(self, name, arr)

    def add(self, ids: np.ndarray, vecs: np.ndarray, clock: np.ndarray, importance: np.ndarray) -> None:
        m = len(ids)
        if vecs.shape != (m, self.dim):
            raise ValueError(f"expected vectors of shape ({m}, {self.dim}), got {vecs.shape}")
        if m == 0:
            return
        self._grow(self.n + m)
        s = slice(self.n, self.n + m)
        self._vecs[s], self._ids[s], self._clock[s], self._imp[s] = vecs, ids, clock, importance
        prev = self._clock_max[self.n - 1] if self.n else -np.inf
        self._clock_max[s] = np.maximum.accumulate(np.maximum(self._clock[s], prev))
        self.n += m
        self._index_new_rows(s)

    def _index_new_rows(self, s: slice) -> None:
        if self.mode != "sq8" or self.n < self.min_rows:
            return
        if self._sq is None:
            self._build()
            return
        with faiss_threads(1):
            self._sq.add(self._vecs[s], self._imp[s])
        if len(self._sq.exact_rows) > max(1024, self.n // 100):  # data drifted from the trained ranges
            log.info(
                "episodic index: %d of %d rows exceed the quantization bound; retraining",
                len(self._sq.exact_rows),
                self.n,
            )
            self._build()

    def _build(self) -> None:
        """Train the quantizer on every row present now and encode them."""
        sq = SQCandidates(self.dim)
        with faiss_threads(1):
            sq.build(self.vectors, self.importance)
        self._sq = sq
        log.info("episodic index: quantized %d rows (vector error bound %.4f)", self.n, sq.tau_vec)

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

    @property
    def quantized(self) -> bool:
        return self._sq is not None

    # -- exact float32 similarities -------------------------------------------------------------
    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of the (normalised) query with every row."""
        return self._sims_range(0, self.n, query)

    def _sims_range(self, start: int, stop: int, q: np.ndarray) -> np.ndarray:
        with _single_thread():
            return (self._vecs[start : start + _padded(stop - start)] @ q)[: stop - start]

    def _sims_rows(self, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
        buf = np.zeros((_padded(len(rows)), self.dim), dtype=np.float32)
        np.take(self._vecs, rows, axis=0, out=buf[: len(rows)])
        with _single_thread():
            return (buf @ q)[: len(rows)]

    # -- top-k ------------------------------------------------------------------------------------
    def search(self, query: np.ndarray, k: int, w: ScoreWeights) -> Hits:
        """The k best rows by `combined` score, exactly as a full float32 scan would rank them."""
        q = np.asarray(query, dtype=np.float32)
        if k <= 0 or self.n == 0:
            return Hits(np.empty(0, np.int64), np.empty(0, np.float32), np.empty(0, np.float32))
        if self._sq is not None and k < self.n:
            hits = self._search_quantized(q, k, w)
            if hits is not None:
                return hits
        else:
            self.stats.exact += 1
        return self._search_exact(q, k, w)

    def _search_exact(self, q: np.ndarray, k: int, w: ScoreWeights) -> Hits:
        sims = self.similarities(q)
        scores = combined(sims, self.clock, self.importance, w)
        best = top_k(scores, k)
        return Hits(best.astype(np.int64), scores[best], sims[best])

    def _tail_start(self, w: ScoreWeights) -> int:
        """First row of the tail rescored exactly: rows before it are older than tail_half_lives half-lives."""
        if w.recency == 0:
            return self.n
        cutoff = self._clock_max[self.n - 1] - self.tail_half_lives * w.half_life
        return int(np.searchsorted(self._clock_max[: self.n], cutoff, side="right"))

    def _head_recency_bound(self, h: int, w: ScoreWeights) -> float:
        """Upper bound of w_rec * recency over rows [0, h)."""
        if w.recency == 0 or h == 0:
            return 0.0
        newest = self._clock_max[self.n - 1]
        old = self._clock_max[h - 1] if w.recency > 0 else float(self._clock[:h].min())
        return float(w.recency * np.exp2(-(newest - old) / w.half_life))

    def _search_quantized(self, q: np.ndarray, k: int, w: ScoreWeights) -> Hits | None:
        sq = self._sq
        assert sq is not None  # only called once the quantized index is built
        h = self._tail_start(w)
        if self.n - h > self.n // 4:  # recency reaches most rows: scanning them all is as cheap
            self.stats.exact += 1
            return None
        q_norm = float(np.linalg.norm(q))
        rest = self._head_recency_bound(h, w)
        slack = sq.error_bound(q_norm, w.relevance, w.importance) + 1e-4 * abs(w.recency) + 1e-7
        tail = np.arange(h, self.n)
        tail_sims = self._sims_range(h, self.n, q)
        exact_rows = sq.exact_rows
        c = min(max(self.initial_candidates, 4 * k), self.n)
        for attempt in range(1 + self.max_widenings):
            approx, cand = sq.search(q, w.relevance, w.importance, c)
            head = np.union1d(cand[cand < h], exact_rows[exact_rows < h])
            rows = np.concatenate([head, tail])
            sims = np.concatenate([self._sims_rows(head, q), tail_sims])
            scores = combined(sims, self._clock[rows], self._imp[rows], w)
            best = top_k(scores, k, rows)
            # Any row not scored here is older than the tail, outside the top-c approximate scores and not an
            # exact row, so its score is at most approx[-1] + quantization/rounding slack + recency bound.
            if len(best) == k and (
                len(cand) == self.n  # faiss returned every row: all were scored
                or scores[best[-1]] > approx[-1] + slack + rest
            ):
                self.stats.quantized += 1
                self.stats.widened += attempt > 0
                return Hits(rows[best], scores[best], sims[best])
            if attempt == self.max_widenings or c * 8 >= self.n:  # a plain full scan is cheaper then
                break
            c *= 8
        self.stats.fallback += 1
        log.debug("episodic index: bound failed with %d candidates; scanning all %d rows", c, self.n)
        return None

    def clear(self) -> None:
        self._vecs[: _padded(self.n)] = 0
        self.n = 0
        self._sq = None
        self.stats = SearchStats()
