"""Rule brains, vectorised: one call decides a whole round for every active agent that follows the rule.

A rule reads the scenario's arrays (not the text) and returns `Moves`, so 100k agents cost a
few numpy operations. `text_actions` writes the same moves as text, which drives the Parallel
API exactly as an LLM agent would (tests check that both paths give the same run).
`Population` mixes rules (e.g. one IPD strategy per persona).

Known models as rules:
- `Deffuant(threshold)`: compromise with the partner iff |x_i - x_j| < threshold (bounded confidence);
- `DeGroot()`: state the mean of oneself and one's neighbours, i.e. x <- D^-1 (A + I) x;
- `IndependentCascade(p)`: share with probability 1 - (1 - p)^k after k exposures;
- the IPD strategies of Axelrod's tournaments: `STRATEGIES`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from societies.env import NOOP, Moves, Scenario, SocietyEnv, agent_id
from societies.scenarios.cooperation import COOPERATE, DEFECT, CooperationScenario
from societies.scenarios.diffusion import IGNORE, SHARE, DiffusionScenario
from societies.scenarios.opinion import COMPROMISE, KEEP, STATE, OpinionScenario


class Rule(Protocol):
    """A vectorised brain: the moves of agents `idx` this round."""

    name: str

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves: ...


def _per_agent(value: float | np.ndarray, idx: np.ndarray) -> np.ndarray | float:
    return value[idx] if isinstance(value, np.ndarray) else value


# ------------------------------------------------------------------------------------- opinions
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


# ------------------------------------------------------------------------------------ diffusion
class IndependentCascade:
    """Share with probability 1 - (1 - p)^k after k exposures: each exposing edge succeeds independently with p."""

    name = "independent_cascade"

    def __init__(self, p: float) -> None:
        if not 0 <= p <= 1:
            raise ValueError(f"p must be in [0, 1], got {p}")
        self.p = p

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, DiffusionScenario)
        k = sc.exposures[idx]
        share = rng.random(idx.size) < 1.0 - (1.0 - self.p) ** k
        return Moves(idx, np.where(share, SHARE, IGNORE).astype(np.int8))


# ---------------------------------------------------------------------------------- cooperation
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


# ------------------------------------------------------------------------------------- helpers
class Population:
    """Several rules in one society: `assign[i]` is agent i's rule (an index into `rules`)."""

    name = "population"

    def __init__(self, rules: Sequence[Rule], assign: np.ndarray) -> None:
        self.rules = list(rules)
        self.assign = np.asarray(assign, dtype=np.int64)

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        return Moves.concat([r.decide(sc, idx[self.assign[idx] == k], rng) for k, r in enumerate(self.rules)])


def text_actions(env: SocietyEnv, moves: Moves) -> dict[str, str]:
    """The moves as the text actions an agent would send (no-moves become `wait`)."""
    sc = env.scenario
    vals = moves.values()
    return {
        agent_id(int(i)): sc.move_text(int(i), int(c), float(v))
        for i, c, v in zip(moves.idx, moves.code, vals)
        if c != NOOP
    }


def play_round(env: SocietyEnv, rule: Rule, rng: np.random.Generator):
    """One round of a rule society on the fast path."""
    return env.step_moves(rule.decide(env.scenario, env.scenario.active, rng))
