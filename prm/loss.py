"""The AgentPRM objective and its labels for one batch of whole trajectories.

L = L_Q + beta * L_A with L_Q = 1/2 (M_t - Q_t)^2 and L_A = 1/2 ((M_t - M_{t-1}) - (Q_t - Q_{t-1}))^2
(the progress term over steps that have a predecessor), both averaged over steps.
TD labels are recomputed from the batch's own forward pass (detached): the current model, as
in the paper's algorithm, at no extra forward cost.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from prm.config import TDConfig
from prm.episodes import Trajectory, flatten
from prm.targets.td import monte_carlo_returns, td_targets


@dataclass
class LossParts:
    """The batch loss to backpropagate and its two terms as numbers, for logging."""

    loss: torch.Tensor
    l_q: float
    l_a: float


def labels(kind: str, trajs: list[Trajectory], values: np.ndarray, td: TDConfig) -> np.ndarray:
    """Flat promise labels for `trajs` (concatenated in order); `values` = the current model's M_t, flat."""
    rewards, lengths, terminal = flatten(trajs)
    if kind == "td":
        return td_targets(values, rewards, lengths, terminal, gamma=td.gamma, lam=td.lam, mode=td.mode).q
    if kind == "mc":
        missing = [t.episode_id for t in trajs if t.mc_q is None]
        if missing:
            raise ValueError(
                f"labels=mc but {len(missing)} trajectories have no MC labels (e.g. {missing[0]}); "
                "compute them first (prm.targets.mc / bench/prm_experiment.py writes mc_labels.jsonl)"
            )
        return np.concatenate([t.mc_q for t in trajs])
    if kind == "return":
        return monte_carlo_returns(rewards, lengths, gamma=td.gamma)
    raise ValueError(f"unknown labels kind {kind!r}; valid: td, mc, return")


def prm_loss(values: torch.Tensor, q: torch.Tensor, lengths: list[int], beta: float) -> LossParts:
    """values, q: flat over the batch's trajectories in order; lengths: steps per trajectory."""
    l_q = 0.5 * (values - q).pow(2).mean()
    has_prev = torch.ones_like(values, dtype=torch.bool)
    starts = np.cumsum([0] + list(lengths[:-1]))
    has_prev[torch.as_tensor(starts, dtype=torch.long)] = False
    dm = values[1:] - values[:-1]
    dq = q[1:] - q[:-1]
    mask = has_prev[1:]
    l_a = 0.5 * (dm[mask] - dq[mask]).pow(2).mean() if bool(mask.any()) else values.sum() * 0.0
    return LossParts(l_q + beta * l_a, float(l_q.detach()), float(l_a.detach()))
