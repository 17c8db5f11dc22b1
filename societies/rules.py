"""Rule brains, vectorised: one call decides a whole round for every active agent that follows the rule.

A rule reads the scenario's arrays (not the text) and returns `Moves`, so 100k agents cost a
few numpy operations. `text_actions` writes the same moves as text, which drives the Parallel
API exactly as an LLM agent would (tests check that both paths give the same run).
`Population` mixes rules (e.g. one strategy per persona).

Each scenario's own rules live with it, in `societies/scenarios/<name>/rule.py`:
- opinion: `Deffuant(threshold)` (bounded confidence), `DeGroot()` (averaging);
- diffusion: `IndependentCascade(p)` (`key=`: one keyed trial per edge, the same on any number of shards);
- cooperation: the IPD strategies of Axelrod's tournaments (`STRATEGIES`, `IPDStrategies`);
- public_goods: `FreeRider`, `Cooperator`, `ConditionalCooperator(bias)` (Fischbacher & Gächter 2010),
  `ReputationConditional(bias)`, mixed by name with `PublicGoodsStrategies`;
- feed: `FeedRule(p_repost, p_like, p_follow, p_post)`, a feed user;
- town: `TownRoutine(cooldown)`, a small-town day.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from societies.env import NOOP, Moves, Scenario, SocietyEnv, agent_id


class Rule(Protocol):
    """A vectorised brain: the moves of agents `idx` this round."""

    name: str

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves: ...


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
