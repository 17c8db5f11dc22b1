"""Held-out reward of a training checkpoint, as the embedded brain will serve it.

Held-out action loss is cheap but it is not what a user gets: a checkpoint can lower the loss and still play
worse (a policy that grows surer of its favourite action loops). So `agents.train` can pick `best/` by playing:
the checkpoint's LoRA is converted to a llama.cpp adapter, loaded by the local brain, and played on the same fixed
goals of held-out splits at every evaluation, so checkpoints are compared on identical goals (paired).
"""

from __future__ import annotations

import logging
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.config import AgentConfig

log = logging.getLogger(__name__)


@dataclass
class SelectionResult:
    """Mean final reward and success over all episodes, and the mean reward per env."""

    reward: float
    success: float
    per_env: dict[str, float] = field(default_factory=dict)


def play_checkpoint(
    peft_dir: Path,
    *,
    model: str,
    envs: list[dict[str, Any]],
    episodes: int,
    agent: AgentConfig,
    seed: int,
    temperature: float,
    threads: int | None = None,
) -> SelectionResult:
    """Play `episodes` goals (seeds seed..seed+episodes-1) of every env with the LoRA in `peft_dir`."""
    from agents.brains.local import LocalBrain
    from agents.config import EnvConfig
    from agents.core import run_episode
    from agents.core.factory import build_agent, make_env
    from agents.policy.gguf_adapter import convert_peft_to_gguf
    from agents.resolve import resolve_agent, resolve_env

    gguf = convert_peft_to_gguf(peft_dir, peft_dir / "adapter.gguf", model=model)
    brain = LocalBrain(model=model, adapter=str(gguf), temperature=temperature, n_threads=threads)
    rewards: list[float] = []
    successes: list[float] = []
    per_env: dict[str, float] = {}
    for env_cfg in envs:
        env = make_env(resolve_env(EnvConfig.model_validate(env_cfg)))
        name = str(env_cfg.get("name") or env_cfg["id"])
        got = []
        try:
            for i in range(episodes):
                rec = run_episode(env, build_agent(brain, resolve_agent(agent), None), seed=seed + i)
                got.append(rec.outcome.reward)
                successes.append(float(rec.outcome.success))
        finally:
            env.close()
        per_env[name] = statistics.mean(got)
        rewards.extend(got)
        log.info("checkpoint on %s: mean reward %.3f over %d goals", name, per_env[name], episodes)
    return SelectionResult(statistics.mean(rewards), statistics.mean(successes), per_env)
