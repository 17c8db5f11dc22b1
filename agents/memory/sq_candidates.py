"""Candidate generation for exact retrieval: a faiss 8-bit scalar quantizer with a per-row error bound.

Why: at 100k x 384 the exact float32 mat-vec is ~5 ms; scanning 8-bit codes is ~2 ms. The quantized scores
only *propose* candidates — `VectorMatrix.search` rescores them with the float32 rows and proves, with the
bounds kept here, that no other row can beat the k-th result (else it widens, and finally scans exactly).

Rows are stored as ``[vector, importance, 0...]`` (padded to a multiple of 16 dims, which faiss's SIMD
scanner needs: 385 dims measured 29 ms, 400 dims 2.4 ms), so the query ``[w_rel*q, w_imp, 0...]`` makes the
approximate inner product the relevance + importance part of the score. For every row we keep the true
quantization error (from ``sa_encode``/``sa_decode``), so for any query

    |approx_i - (w_rel*<x_i,q> + w_imp*imp_i)| <= |w_rel|*||q||*err_vec_i + |w_imp|*err_imp_i  (+ rounding).

Rows whose error exceeds the bound fixed at training time (values outside the trained range, later data
drift) are listed in `exact_rows` and always rescored exactly, so one bad row never loosens the bound.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from functools import lru_cache

import numpy as np

log = logging.getLogger(__name__)

SIMD_DIMS = 16  # faiss's SQ scanner takes its SIMD path only for d % 16 == 0 (see module docstring)


@lru_cache(maxsize=1)
def faiss_module():
    """faiss if installed (the `prm` extra pulls faiss-cpu), else None."""
    try:
        import faiss
    except ImportError:
        return None
    return faiss


@contextlib.contextmanager
def faiss_threads(n: int = 1) -> Iterator[None]:
    """One OpenMP thread for this call: on a shared 2-core machine the OMP team only adds jitter."""
    faiss = faiss_module()
    prev = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(n)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(prev)


class SQCandidates:
    """faiss IndexScalarQuantizer(QT_8bit, inner product) over ``[vector, importance]`` plus error bounds."""

    def __init__(self, dim: int) -> None:
        faiss = faiss_module()
        if faiss is None:
            raise RuntimeError("the quantized index needs faiss: `pip install faiss-cpu` (in the `prm` extra)")
        self.dim = dim
        self.width = -(-(dim + 1) // SIMD_DIMS) * SIMD_DIMS
        self.index = faiss.IndexScalarQuantizer(self.width, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
        self.tau_vec = 0.0  # max quantization error (L2, vector part) of a non-exact row
        self.tau_imp = 0.0  # same for the importance component
        self._exact: list[np.ndarray] = []
        self._exact_arr = np.empty(0, dtype=np.int64)
        self.imp_abs_max = 0.0
        self.norm_max = 0.0  # largest row norm (rows are normally unit length): scales the rounding slack

    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)

    @property
    def exact_rows(self) -> np.ndarray:
        """Rows (sorted) whose quantization error is above the bound: always rescored exactly."""
        if self._exact:
            self._exact_arr = np.concatenate([self._exact_arr, *self._exact])
            self._exact = []
        return self._exact_arr

    def _augment(self, vecs: np.ndarray, imp: np.ndarray) -> np.ndarray:
        out = np.zeros((len(vecs), self.width), dtype=np.float32)
        out[:, : self.dim] = vecs
        out[:, self.dim] = imp
        return out

    def build(self, vecs: np.ndarray, imp: np.ndarray) -> None:
        """Fit per-dimension ranges on these rows and add them; the importance range always covers [0, 1].

        The error bounds are the largest errors among these rows, so none of them is an exact row.
        """
        lo, hi = min(0.0, float(imp.min())), max(1.0, float(imp.max()))
        extra = self._augment(np.repeat(vecs[:1], 2, axis=0), np.array([lo, hi], dtype=np.float32))
        self.index.train(np.vstack([self._augment(vecs, imp), extra]))  # per-dim min/max: one cheap pass
        self.tau_vec = self.tau_imp = np.inf
        err_vec, err_imp = self._add_codes(vecs, imp)
        # ulp slack: later rows' errors are computed the same way, the bound must not reject equal ones
        self.tau_vec = float(err_vec.max()) * (1 + 1e-6) + 1e-9
        self.tau_imp = max(float(err_imp.max()), (hi - lo) / 255 / 2) * (1 + 1e-6) + 1e-9

    def add(self, vecs: np.ndarray, imp: np.ndarray) -> None:
        """Append rows (their row numbers continue from `ntotal`); rows beyond the error bound go to exact_rows."""
        if len(vecs):
            self._add_codes(vecs, imp)

    def _add_codes(self, vecs: np.ndarray, imp: np.ndarray, chunk: int = 8192) -> tuple[np.ndarray, np.ndarray]:
        """Encode in chunks (cache-sized temporaries), keep each row's true error, add the codes."""
        errs = []
        for s in range(0, len(vecs), chunk):
            aug = self._augment(vecs[s : s + chunk], imp[s : s + chunk])
            codes = self.index.sa_encode(aug)
            diff = (self.index.sa_decode(codes) - aug).astype(np.float64)
            err_vec = np.sqrt(np.einsum("ij,ij->i", diff[:, : self.dim], diff[:, : self.dim]))
            err_imp = np.abs(diff[:, self.dim])  # padding dims are 0 in rows and query: they never contribute
            self.norm_max = max(
                self.norm_max, float(np.sqrt(np.einsum("ij,ij->i", aug[:, : self.dim], aug[:, : self.dim]).max()))
            )
            bad = np.flatnonzero((err_vec > self.tau_vec) | (err_imp > self.tau_imp))
            if bad.size:
                self._exact.append(bad.astype(np.int64) + self.ntotal)
            self.index.add_sa_codes(codes)
            errs.append((err_vec, err_imp))
        self.imp_abs_max = max(self.imp_abs_max, float(np.abs(imp).max()))
        return np.concatenate([e for e, _ in errs]), np.concatenate([i for _, i in errs])

    def search(self, q: np.ndarray, w_rel: float, w_imp: float, c: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-c rows by approximate ``w_rel*<x,q> + w_imp*imp``: (scores descending, rows)."""
        qa = np.zeros((1, self.width), dtype=np.float32)
        qa[0, : self.dim] = w_rel * q
        qa[0, self.dim] = w_imp
        with faiss_threads(1):
            d, i = self.index.search(qa, c)
        keep = i[0] >= 0
        return d[0][keep], i[0][keep].astype(np.int64)

    def error_bound(self, q_norm: float, w_rel: float, w_imp: float) -> float:
        """Max |approx - true| of relevance+importance over non-exact rows, incl. float32 rounding slack.

        Rounding: a float32 dot of length <= 400 with |terms| summing to S errs by < 400 * 2^-24 * S ~ 2.4e-5 S,
        once in faiss and once in the exact rescoring; 1e-4 S covers both with a 2x margin.
        """
        s = abs(w_rel) * q_norm * (self.norm_max + self.tau_vec) + abs(w_imp) * (self.imp_abs_max + self.tau_imp)
        return abs(w_rel) * q_norm * self.tau_vec + abs(w_imp) * self.tau_imp + 1e-4 * s + 1e-7
