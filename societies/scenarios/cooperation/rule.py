"""The cooperation scenario's rules: the IPD strategies of Axelrod's tournaments, one per agent."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from societies.env import Moves, Scenario
from societies.scenarios.cooperation.scenario import COOPERATE, DEFECT, CooperationScenario

Strategy = Callable[[CooperationScenario, np.ndarray, np.random.Generator], np.ndarray]  # -> cooperate? (bool)


def _last(sc: CooperationScenario, who: np.ndarray, t: np.ndarray, back: int = 1) -> np.ndarray:
    """Move `back` steps ago in the current match (0 if none)."""
    col = t - back
    out = sc.hist[who, np.maximum(col, 0)]
    return np.where(col >= 0, out, 0)


def _opp_last(sc: CooperationScenario, idx: np.ndarray, back: int = 1) -> np.ndarray:
    return _last(sc, sc.opp[idx], sc.t[idx], back)


def tit_for_tat(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return _opp_last(sc, idx) != DEFECT


def always_cooperate(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.ones(idx.size, dtype=bool)


def always_defect(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.zeros(idx.size, dtype=bool)


def grudger(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Cooperate until the opponent defects once, then defect for the rest of the match (Friedman)."""
    return ~np.any(sc.hist[sc.opp[idx]] == DEFECT, axis=1)


def tit_for_two_tats(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return ~((_opp_last(sc, idx, 1) == DEFECT) & (_opp_last(sc, idx, 2) == DEFECT))


def pavlov(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Win-stay, lose-shift: cooperate first, then iff both played the same move last time."""
    mine, theirs = _last(sc, idx, sc.t[idx]), _opp_last(sc, idx)
    return (sc.t[idx] == 0) | (mine == theirs)


def random_strategy(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return rng.random(idx.size) < 0.5


def suspicious_tit_for_tat(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return (sc.t[idx] > 0) & (_opp_last(sc, idx) != DEFECT)


def joss(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Tit-for-tat that defects instead of cooperating 10% of the time (Axelrod's first tournament)."""
    return tit_for_tat(sc, idx, rng) & (rng.random(idx.size) >= 0.1)


def generous_tit_for_tat(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Tit-for-tat that forgives a defection a third of the time."""
    return tit_for_tat(sc, idx, rng) | (rng.random(idx.size) < 1 / 3)


STRATEGIES: dict[str, Strategy] = {
    "tit_for_tat": tit_for_tat,
    "always_cooperate": always_cooperate,
    "always_defect": always_defect,
    "grudger": grudger,
    "tit_for_two_tats": tit_for_two_tats,
    "pavlov": pavlov,
    "random": random_strategy,
    "suspicious_tit_for_tat": suspicious_tit_for_tat,
    "joss": joss,
    "generous_tit_for_tat": generous_tit_for_tat,
}


class IPDStrategies:
    """One Axelrod strategy per agent (`strategies[i]`), decided strategy by strategy, vectorised."""

    name = "ipd"

    def __init__(self, strategies: Sequence[str]) -> None:
        unknown = sorted(set(strategies) - set(STRATEGIES))
        if unknown:
            raise ValueError(f"unknown IPD strategies {unknown}; known: {', '.join(STRATEGIES)}")
        self.names = list(strategies)
        self._codes = np.array([list(STRATEGIES).index(s) for s in strategies], dtype=np.int64)

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, CooperationScenario)
        coop = np.zeros(idx.size, dtype=bool)
        which = self._codes[idx]
        for k, fn in enumerate(STRATEGIES.values()):  # fixed order: the shared generator's draws stay seeded
            sel = which == k
            if sel.any():
                coop[sel] = fn(sc, idx[sel], rng)
        return Moves(idx, np.where(coop, COOPERATE, DEFECT).astype(np.int8))
