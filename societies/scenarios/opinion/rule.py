"""The opinion scenario's rules: Deffuant's bounded confidence and DeGroot's averaging (and DeGroot's limit)."""

from __future__ import annotations

import numpy as np

from societies.env import Moves, Scenario
from societies.scenarios.opinion.scenario import COMPROMISE, KEEP, STATE, OpinionScenario


def _per_agent(value: float | np.ndarray, idx: np.ndarray) -> np.ndarray | float:
    return value[idx] if isinstance(value, np.ndarray) else value


class Deffuant:
    """Bounded confidence: compromise only with partners closer than `threshold` (per agent or one value)."""

    name = "deffuant"

    def __init__(self, threshold: float | np.ndarray) -> None:
        self.threshold = threshold

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, OpinionScenario)
        j = sc.partner[idx]
        close = (j >= 0) & (np.abs(sc.x[idx] - sc.x[np.maximum(j, 0)]) < _per_agent(self.threshold, idx))
        return Moves(idx, np.where(close, COMPROMISE, KEEP).astype(np.int8))


class DeGroot:
    """Averaging: each agent states the mean opinion of itself and its neighbours (row-stochastic W = D^-1 (A + I))."""

    name = "degroot"

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, OpinionScenario)
        g = sc.graph
        if g.complete:
            target = np.full(idx.size, sc.x.mean())
        else:
            rows = np.repeat(np.arange(g.n), np.diff(g.indptr))
            sums = np.bincount(rows, weights=sc.x[g.indices], minlength=g.n)
            target = ((sums + sc.x) / (g.degree + 1))[idx]
        return Moves(idx, np.full(idx.size, STATE, np.int8), target)


def degroot_limit(sc: OpinionScenario, x0: np.ndarray) -> float:
    """DeGroot's consensus on a connected graph: the stationary distribution of W applied to x0.

    For W = D^-1 (A + I), pi_i is proportional to deg_i + 1 (W is reversible)."""
    w = sc.graph.degree + 1.0
    return float(np.dot(w / w.sum(), x0))
