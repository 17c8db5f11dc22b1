"""Evidence that an episode earned its reward: how often its actions agree with the env's scripted expert.

An outcome bar alone keeps lucky episodes (a fault-tree diagnosis guessed after two unrelated checks), and a
self-improvement round that trains on them teaches guessing. Replaying an episode (same env, seed and
actions) and asking the env's expert at every state it passed through is a per-step check that any env
with `expert_action()` (`envs.contract.HasExpert`) offers, with no model in the loop.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import gymnasium as gym

import envs  # noqa: F401  (registers the agentsim/ ids a record names)
from agents.trajectories.schema import EpisodeRecord
from envs.contract import HasExpert


@dataclass(frozen=True)
class Agreement:
    """Per episode: steps whose action was the expert's choice in that state, out of all steps."""

    episode_id: str
    agreed: int
    steps: int

    @property
    def share(self) -> float:
        return self.agreed / self.steps if self.steps else 0.0


def expert_agreement(ep: EpisodeRecord, env: gym.Env | None = None) -> Agreement:
    """Replay `ep` and count the steps whose action equals the expert's action in the state it was taken.

    A step with no parsed action counts as disagreement. Raises ValueError when the replay does not reproduce the
    recorded start (other env kwargs or reset options) and TypeError when the env has no expert.
    """
    own = env is None
    env = env if env is not None else gym.make(ep.env_id, **ep.env_kwargs)
    try:
        base = env.unwrapped
        if not isinstance(base, HasExpert):
            raise TypeError(f"{ep.env_id} has no scripted expert (expert_action()), so agreement cannot be measured")
        obs, _ = env.reset(seed=ep.seed, options=ep.meta.get("reset_options"))
        if ep.initial_observation and obs != ep.initial_observation:
            raise ValueError(
                f"episode {ep.episode_id}: reset(seed={ep.seed}) with env_kwargs={ep.env_kwargs} gives another start "
                "than recorded, so its steps cannot be replayed"
            )
        agreed = 0
        for step in ep.steps:
            if step.action is None:
                continue
            agreed += step.action == base.expert_action()
            _, _, terminated, truncated, _ = env.step(step.action)
            if terminated or truncated:
                break
        return Agreement(ep.episode_id, agreed, len(ep.steps))
    finally:
        if own:
            env.close()


def with_evidence(episodes: Iterable[EpisodeRecord], min_agreement: float) -> list[tuple[EpisodeRecord, Agreement]]:
    """The episodes whose expert agreement reaches `min_agreement`, each with its agreement (one env per env id)."""
    made: dict[tuple[str, str], gym.Env] = {}
    kept = []
    try:
        for ep in episodes:
            key = (ep.env_id, repr(sorted(ep.env_kwargs.items())))
            if key not in made:
                made[key] = gym.make(ep.env_id, **ep.env_kwargs)
            a = expert_agreement(ep, made[key])
            if a.share >= min_agreement:
                kept.append((ep, a))
    finally:
        for env in made.values():
            env.close()
    return kept
