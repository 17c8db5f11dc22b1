"""Society metrics as plain functions on arrays, and a recorder that keeps them as time series.

- polarization index: 4 * variance of opinions in [0, 1] (0 = consensus, 1 = two equal camps at 0 and 1);
- number of clusters: sorted opinions split where the gap exceeds `gap`; clusters holding less
  than `min_share` of the agents are left out (the "major clusters" the 1/(2*threshold) rule counts);
- cascade size / depth / breadth: adopters, generations, the largest generation;
- cooperation rate: share of moves that cooperated;
- partition modularity: Newman's Q of a graph split into given groups (echo chambers of a feed's follow graph;
  for opinions, the graph split by opinion cluster, `cluster_labels`);
- neighbour assortativity: Pearson correlation of a node value across the graph's edges (Newman 2003).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from envs.util import atomic_write_text


def polarization(x: np.ndarray) -> float:
    """4 * Var(x) for opinions in [0, 1]: 0 at consensus, 1 when split evenly between 0 and 1."""
    return float(4.0 * np.var(x)) if len(x) else 0.0


def clusters(x: np.ndarray, gap: float = 0.02) -> list[np.ndarray]:
    """Groups of agent indices whose sorted opinions are closer than `gap` to the next one."""
    if len(x) == 0:
        return []
    order = np.argsort(x, kind="stable")
    cuts = np.flatnonzero(np.diff(x[order]) > gap) + 1
    return np.split(order, cuts)


def cluster_labels(x: np.ndarray, gap: float = 0.02) -> np.ndarray:
    """Each agent's cluster index (0 = lowest opinions): the partition `clusters` gives, without a list of arrays."""
    x = np.asarray(x)
    labels = np.zeros(len(x), dtype=np.int64)
    if len(x) == 0:
        return labels
    order = np.argsort(x, kind="stable")
    labels[order] = np.concatenate([[0], np.cumsum(np.diff(x[order]) > gap)])
    return labels


def n_clusters(x: np.ndarray, gap: float = 0.02, min_share: float = 0.0) -> int:
    """How many opinion clusters hold at least `min_share` of the agents."""
    need = min_share * len(x)
    return sum(1 for c in clusters(x, gap) if len(c) >= max(need, 1))


def cascade_stats(generation: np.ndarray) -> dict[str, float]:
    """Size, depth and breadth of a cascade from each adopter's generation (-1 = never adopted).

    Generation 0 are the seeds; depth is the last generation reached; breadth the largest one."""
    g = generation[generation >= 0]
    if g.size == 0:
        return {"size": 0.0, "depth": 0.0, "breadth": 0.0}
    counts = np.bincount(g)
    return {"size": float(g.size), "depth": float(g.max()), "breadth": float(counts.max())}


def partition_modularity(
    indptr: np.ndarray, indices: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None
) -> float:
    """Newman modularity of a partition of a graph given as CSR (row i -> its out-neighbours `indices`).

    Q = sum_c [ e_cc / m - K_out(c) K_in(c) / m^2 ]: e_cc is the weight of edges inside group c,
    m the total weight, K_out / K_in the groups' out- and in-degree sums. This is the directed
    form (Leicht & Newman 2008). An undirected graph stored both ways gives the undirected value,
    so it matches `networkx.community.modularity` on either. 0 for a graph without edges."""
    labels = np.asarray(labels)
    _, lab = np.unique(labels, return_inverse=True)
    lab = lab.astype(np.int64)
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    w = np.ones(indices.size) if weights is None else np.asarray(weights, dtype=np.float64)
    m = float(w.sum())
    if m == 0:
        return 0.0
    src, dst = lab[rows], lab[np.asarray(indices, dtype=np.int64)]
    inside = float(w[src == dst].sum())
    k = int(lab.max()) + 1 if lab.size else 0
    k_out = np.bincount(src, weights=w, minlength=k)
    k_in = np.bincount(dst, weights=w, minlength=k)
    return inside / m - float(np.dot(k_out, k_in)) / m**2


def neighbor_assortativity(indptr: np.ndarray, indices: np.ndarray, x: np.ndarray) -> float:
    """Pearson correlation of `x` at the two ends of every CSR edge (Newman's numeric assortativity).

    Near 1: neighbours hold alike values (echo chambers); 0: no relation; NaN without edges or spread."""
    if indices.size == 0:
        return float("nan")
    x = np.asarray(x, dtype=np.float64)
    a = np.repeat(x, np.diff(indptr))  # the edge's source value (no row-index array)
    b = x[indices]
    if a.max() == a.min() or b.max() == b.min():  # no spread at one end (a consensus): undefined
        return float("nan")
    a -= a.mean()
    b -= b.mean()
    denom = np.sqrt(_dot(a, a) * _dot(b, b))
    return float(_dot(a, b) / denom) if denom > 0 else float("nan")


def _dot(u: np.ndarray, v: np.ndarray) -> float:
    """A dot product without BLAS: np.dot's threads made it 10x slower on this busy 2-core machine."""
    return float(np.einsum("i,i->", u, v))


def cooperation_rate(moves: np.ndarray) -> float:
    """Share of cooperations among played moves (1 = cooperate, 2 = defect; others ignored)."""
    played = moves[(moves == 1) | (moves == 2)]
    return float(np.mean(played == 1)) if played.size else float("nan")


class MetricSeries(BaseModel):
    """Metric time series of one run: `series[name][k]` is the value after `rounds[k]`."""

    scenario: str
    rounds: list[int] = Field(default_factory=list)
    series: dict[str, list[float]] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)

    def add(self, round: int, values: dict[str, float]) -> None:
        """Append one round's values (a metric first seen late is padded with NaN)."""
        k = len(self.rounds)
        self.rounds.append(round)
        for name, v in values.items():
            self.series.setdefault(name, [float("nan")] * k).append(float(v))
        for vals in self.series.values():
            if len(vals) < k + 1:
                vals.append(float("nan"))

    def last(self) -> dict[str, float]:
        return {k: v[-1] for k, v in self.series.items()}

    def write(self, path: str | Path) -> None:
        # NaN is written as JSON null, so any JSON reader loads it
        data = self.model_dump()
        data["series"] = {k: [None if np.isnan(v) else v for v in vals] for k, vals in self.series.items()}
        atomic_write_text(Path(path), json.dumps(data, indent=1))
