"""Society metrics as plain functions on arrays, and a recorder that keeps them as time series.

- polarization index: 4 * variance of opinions in [0, 1] (0 = consensus, 1 = two equal camps at 0 and 1);
- number of clusters: sorted opinions split where the gap exceeds `gap`; clusters holding less
  than `min_share` of the agents are left out (the "major clusters" the 1/(2*threshold) rule counts);
- cascade size / depth / breadth: adopters, generations, the largest generation;
- cooperation rate: share of moves that cooperated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from agents.trajectories.store import atomic_write_text


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
