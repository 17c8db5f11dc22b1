"""A trained AgentPRM as a per-step reward for RL: `PRMProgress`, a `step_reward` hook of
`agents.policy.trl_env.environment_factory` (docs/rl.md). It lives with the PRM, above the agents it rewards."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from agents.policy.trl_env import StepContext
from prm.episodes import env_compactor
from prm.scoring import PRMScorer


@lru_cache(maxsize=4)
def _load_scorer(path: str) -> PRMScorer:
    from prm.model import PRMModel  # torch: loaded when a saved PRM is first used

    return PRMScorer(PRMModel.from_pretrained(path))


class PRMProgress:
    """A `step_reward` hook: a trained AgentPRM's progress Q_t - Q_{t-1} at each step (0 at the first).

    Q_t is the PRM's promise of (s_t, a_t) given the instruction and the steps before, read on the
    env's compact observations as in training (`prm.episodes.env_compactor`); what `prm.dense`
    writes as `prm_progress`. Over an episode the progress telescopes to Q_T - Q_1, a shaping term
    toward states the PRM rates well. A saved PRM is loaded once per process (on first use) and
    shared, with its score cache, by every rollout."""

    def __init__(self, prm: str | Path | PRMScorer) -> None:
        self.source: str | PRMScorer = str(Path(prm).resolve()) if isinstance(prm, (str, Path)) else prm

    @property
    def scorer(self) -> PRMScorer:
        """The scorer (a saved PRM is loaded on first use)."""
        return _load_scorer(self.source) if isinstance(self.source, str) else self.source

    def promise(self, ctx: StepContext, steps: int) -> float:
        """Q of step `steps - 1`: the promise of the first `steps` actions."""
        compact = env_compactor(ctx.env)
        obs = [compact(o) for o in ctx.observations[:steps]]
        return float(self.scorer.score_last([(ctx.instruction, obs, ctx.actions[:steps])])[0])

    def __call__(self, ctx: StepContext) -> float:
        t = len(ctx.actions)
        if t < 2:
            return 0.0
        return self.promise(ctx, t) - self.promise(ctx, t - 1)  # the previous promise is a cache hit
