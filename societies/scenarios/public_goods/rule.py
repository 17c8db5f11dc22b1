"""The public-goods scenario's rules: free riders, cooperators and (reputation-reading) conditional cooperators."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from societies.env import Moves, Scenario
from societies.rules import Population, Rule
from societies.scenarios.public_goods.scenario import CONTRIBUTE, PublicGoodsScenario


def _contribute(sc: PublicGoodsScenario, idx: np.ndarray, share: np.ndarray) -> Moves:
    """Shares of the endowment as `contribute[tokens]` moves."""
    tokens = np.clip(share, 0.0, 1.0) * sc.endowment
    return Moves(idx, np.full(idx.size, CONTRIBUTE, np.int8), tokens)


def _first_share(idx: np.ndarray, start: float, spread: float, rng: np.random.Generator) -> np.ndarray:
    """First-round shares: `start`, spread uniformly by +-`spread` (drawn only when spread > 0)."""
    if spread <= 0 or idx.size == 0:
        return np.full(idx.size, start)
    return np.clip(start + spread * (2 * rng.random(idx.size) - 1), 0.0, 1.0)


class FreeRider:
    """Contributes nothing: the dominant strategy of each round when r / G < 1."""

    name = "free_rider"

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, PublicGoodsScenario)
        return _contribute(sc, idx, np.zeros(idx.size))


class Cooperator:
    """Contributes the whole endowment every round, whatever the others do."""

    name = "cooperator"

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, PublicGoodsScenario)
        return _contribute(sc, idx, np.ones(idx.size))


class ConditionalCooperator:
    """Gives `bias` times what the others in its last group gave on average; `start` in its first round.

    Fischbacher & Gächter (2010, "Social preferences, beliefs, and the dynamics of free riding in
    public goods experiments", AER 100): most people are conditional cooperators, but imperfect ones
    whose contributions lie below what they expect of the others (a self-serving bias, slope < 1).
    Matched with free riders, that bias alone makes contributions decay round after round."""

    name = "conditional"

    def __init__(self, bias: float = 0.8, start: float = 0.5, spread: float = 0.0) -> None:
        if not 0 <= bias <= 1 or not 0 <= start <= 1 or spread < 0:
            raise ValueError(f"need bias, start in [0, 1] and spread >= 0; got {bias}, {start}, {spread}")
        self.bias, self.start, self.spread = bias, start, spread

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, PublicGoodsScenario)
        prev = sc.others_seen[idx]
        share = self.bias * prev
        first = np.isnan(prev)
        share[first] = _first_share(idx[first], self.start, self.spread, rng)
        return _contribute(sc, idx, share)


class ReputationConditional(ConditionalCooperator):
    """A conditional cooperator that reads reputations when they are public (else it is `ConditionalCooperator`).

    It conditions on its current partners' public image b (known before it gives) instead of last
    round's strangers, and when the partners are at least as reputable as itself it holds its own
    image: share = max(bias * b, min(own image, b)). Under contribution-based grouping its image
    decides its next group, so letting it slip costs more than it saves (Gunnthorsdottir et al. 2010:
    near-efficient equilibria under competitive grouping); partners with a worse record are matched
    down to their level."""

    name = "reputation_conditional"

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, PublicGoodsScenario)
        if not sc.reputation:
            return super().decide(sc, idx, rng)
        own = sc.image[idx]
        b = sc.partner_image(idx)
        b = np.where(np.isnan(b), own, b)  # partners without a record: assumed to be like oneself
        share = np.maximum(self.bias * b, np.minimum(own, b))
        first = np.isnan(own)
        share[first] = _first_share(idx[first], self.start, self.spread, rng)
        return _contribute(sc, idx, share)


PG_STRATEGIES = ("free_rider", "cooperator", "conditional", "reputation_conditional")


class PublicGoodsStrategies(Population):
    """One public-goods strategy per agent (`strategies[i]`, names from `PG_STRATEGIES`), as a `Population`."""

    name = "public_goods"

    def __init__(self, strategies: Sequence[str], bias: float = 0.8, start: float = 0.5, spread: float = 0.0) -> None:
        unknown = sorted(set(strategies) - set(PG_STRATEGIES))
        if unknown:
            raise ValueError(f"unknown public goods strategies {unknown}; known: {', '.join(PG_STRATEGIES)}")
        rules: list[Rule] = [
            FreeRider(),
            Cooperator(),
            ConditionalCooperator(bias, start, spread),
            ReputationConditional(bias, start, spread),
        ]
        super().__init__(rules, np.array([PG_STRATEGIES.index(s) for s in strategies], dtype=np.int64))
        self.names = list(strategies)
