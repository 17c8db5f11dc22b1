"""The diffusion scenario's rule: the independent cascade, with ordinary or keyed (shard-invariant) draws."""

from __future__ import annotations

import numpy as np

from societies.env import Moves, Scenario
from societies.keyed import edge_trials
from societies.scenarios.diffusion.scenario import IGNORE, SHARE, DiffusionScenario


class IndependentCascade:
    """Share with probability 1 - (1 - p)^k after k exposures: each exposing edge succeeds independently with p.

    With `key` (keyed randomness, `societies.keyed`), the trial of edge source -> target is one
    fixed uniform, a hash of (key, source, target), and an agent shares iff any edge that exposed
    it this round succeeded: the same model (each edge is tried once, when its source has just
    shared), but the draws no longer depend on the order of decisions, so a sharded run
    (`societies.sharding`) makes exactly the same trials on any number of shards."""

    name = "independent_cascade"

    def __init__(self, p: float, key: int | None = None) -> None:
        if not 0 <= p <= 1:
            raise ValueError(f"p must be in [0, 1], got {p}")
        self.p = p
        self.key = key

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, DiffusionScenario)
        if self.key is None:
            k = sc.exposures[idx]
            share = rng.random(idx.size) < 1.0 - (1.0 - self.p) ** k
        else:
            share = self._keyed(sc, np.asarray(idx, dtype=np.int64))
        return Moves(idx, np.where(share, SHARE, IGNORE).astype(np.int8))

    def _keyed(self, sc: DiffusionScenario, idx: np.ndarray) -> np.ndarray:
        """Any success among this round's exposing edges of each agent (exposure pairs are sorted by target)."""
        assert self.key is not None
        ok = edge_trials(self.key, sc.exp_src, sc.exp_dst, self.p)
        hits = np.concatenate([[0], np.cumsum(ok)])
        lo = np.searchsorted(sc.exp_dst, idx, side="left")
        hi = np.searchsorted(sc.exp_dst, idx, side="right")
        return hits[hi] > hits[lo]
