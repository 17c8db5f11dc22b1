"""Run the scripted expert through episodes; used by tests and the benchmark."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import gymnasium as gym

from envs.contract import HasExpert


@dataclass(frozen=True)
class EpisodeResult:
    success: bool
    score: float
    turns: int
    rollbacks_seen: int
    used_retracted_fact: bool
    truncated: bool
    steps: int


def run_expert(env: gym.Env, seed: int, options: dict[str, Any] | None = None) -> EpisodeResult:
    env.reset(seed=seed, options=options)
    expert = cast(HasExpert, env.unwrapped)  # a FaultTreeEnv (or another env with an expert)
    steps = 0
    while True:
        _, reward, terminated, truncated, info = env.step(expert.expert_action())
        steps += 1
        if terminated or truncated:
            return EpisodeResult(
                success=bool(info["success"]),
                score=float(reward),
                turns=int(info["turns"]),
                rollbacks_seen=int(info["rollbacks_seen"]),
                used_retracted_fact=bool(info["used_retracted_fact"]),
                truncated=bool(truncated),
                steps=steps,
            )
