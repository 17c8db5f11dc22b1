"""Monte Carlo promise labels (Math-Shepherd style), the baseline the paper compares TD/GAE against.

For every step t of a recorded episode: replay the episode to the state after a_t, snapshot it,
and finish the task K times with the policy; the label is the mean outcome of those rollouts.
A step that ended the episode is labelled by its own outcome (a cut scored as failure: 0).
Every sampled rollout step is counted, so TD and MC can be compared at equal sampling cost.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np

from agents.trajectories.schema import EpisodeRecord
from prm.policy import ActionSampler, Node, Sample, apply, rollout, start

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MCLabels:
    """Monte Carlo promise labels of one episode and the policy steps they cost."""

    episode_id: str
    q: np.ndarray  # per step: mean outcome of K rollouts from the state after a_t
    sampled_steps: int  # policy steps spent on the rollouts


def replay(env: gym.Env, ep: EpisodeRecord, max_steps: int, sampler: ActionSampler | None = None) -> list[Node]:
    """The node after each recorded step (same seed + same actions = same trajectory); a `sampler` with history
    also gives each node the agent state of that path, so rollouts from it read the recorded turns."""
    node = start(env, seed=ep.seed, options=ep.meta.get("reset_options"))
    if ep.instruction and node.instruction != ep.instruction:
        raise ValueError(
            f"episode {ep.episode_id}: reset(seed={ep.seed}) gives a different task than recorded; "
            "was it made with other env kwargs or reset options?"
        )
    nodes = []
    for s in ep.steps:
        node = apply(env, node, Sample(s.action, s.raw_output, error=s.parse_error), max_steps, sampler)
        nodes.append(node)
    return nodes


def mc_labels(
    env: gym.Env,
    ep: EpisodeRecord,
    sampler: ActionSampler,
    *,
    k: int,
    seed: int,
    max_steps: int,
    outcome: str = "reward",
    success_threshold: float = 1.0,
    gamma: float = 1.0,
) -> MCLabels:
    """`gamma` discounts an outcome reached n steps after a_t by gamma**n, the value TD targets with that gamma estimate."""
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")

    def value(n: Node) -> float:
        r = n.outcome()
        return float(r >= success_threshold) if outcome == "success" else r

    q, spent = [], 0
    for t, node in enumerate(replay(env, ep, max_steps, sampler)):
        if node.done:
            q.append(value(node))
            continue
        outs = []
        for j in range(k):
            end, n = rollout(env, sampler, node, seed=(seed * 7919 + t) * 101 + j, max_steps=max_steps)
            spent += n
            outs.append(value(end) * gamma**n)
        q.append(float(np.mean(outs)))
    return MCLabels(ep.episode_id, np.array(q), spent)


def write_mc_labels(path: Path, labels: list[MCLabels], k: int) -> None:
    """Append one JSON line per episode: {episode_id, q, k, sampled_steps} (read back by prm.episodes)."""
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(
            json.dumps({"episode_id": lab.episode_id, "q": lab.q.tolist(), "k": k, "sampled_steps": lab.sampled_steps})
            + "\n"
            for lab in labels
        )
