"""The AgentPRM objective and its labels for one batch of whole trajectories.

L = L_Q + beta * L_A with L_Q = 1/2 (M_t - Q_t)^2 and L_A = 1/2 ((M_t - M_{t-1}) - (Q_t - Q_{t-1}))^2
(the progress term over steps that have a predecessor), both averaged over steps; optionally
+ rank_weight * L_R, a pairwise logistic loss over *sibling* steps (two trajectories of one task that
share every step before t and differ at t) whose labels differ by more than a margin.
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
    l_r: float = 0.0


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


def prm_loss(
    values: torch.Tensor, q: torch.Tensor, lengths: list[int], beta: float, trained: torch.Tensor | None = None
) -> LossParts:
    """values, q: flat over the batch's trajectories in order; lengths: steps per trajectory; `trained` (bool, flat):
    the steps the loss covers (default all; a branch trained only where it left its path covers one step)."""
    trained = torch.ones_like(values, dtype=torch.bool) if trained is None else trained
    l_q = 0.5 * (values[trained] - q[trained]).pow(2).mean()
    has_prev = torch.ones_like(values, dtype=torch.bool)
    starts = np.cumsum([0] + list(lengths[:-1]))
    has_prev[torch.as_tensor(starts, dtype=torch.long)] = False
    dm = values[1:] - values[:-1]
    dq = q[1:] - q[:-1]
    mask = has_prev[1:] & trained[1:] & trained[:-1]
    l_a = 0.5 * (dm[mask] - dq[mask]).pow(2).mean() if bool(mask.any()) else values.sum() * 0.0
    return LossParts(l_q + beta * l_a, float(l_q.detach()), float(l_a.detach()))


def sibling_pairs(trajs: list[Trajectory], min_gap: float, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat step indices (better, worse) of sibling steps in `trajs` whose labels `q` differ by more than `min_gap`.

    Siblings: two trajectories of the same task with the same states and actions before step t and a different
    action at t (sibling sets, branches, or two samples that happened to share a prefix). Why: beam search and
    reranking compare exactly these, and their values often differ by less than a squared error notices (a wrong
    choice the policy repairs costs one discounted step), so the ranking is asked for directly.
    """
    offsets = np.cumsum([0] + [len(t) for t in trajs])
    by_group: dict[str, list[int]] = {}
    for i, t in enumerate(trajs):
        by_group.setdefault(t.group, []).append(i)
    seen: set[tuple[int, int]] = set()
    hi: list[int] = []
    lo: list[int] = []
    for members in by_group.values():
        for x, i in enumerate(members):
            for j in members[x + 1 :]:
                a, b = trajs[i], trajs[j]
                k = 0
                n = min(len(a), len(b))
                while k < n and a.actions[k] == b.actions[k] and a.observations[k] == b.observations[k]:
                    k += 1
                if k >= n or a.observations[k] != b.observations[k]:
                    continue  # identical so far, or they diverged in the env (not the same state)
                fa, fb = int(offsets[i] + k), int(offsets[j] + k)
                if abs(q[fa] - q[fb]) <= min_gap or (min(fa, fb), max(fa, fb)) in seen:
                    continue
                seen.add((min(fa, fb), max(fa, fb)))
                hi.append(fa if q[fa] > q[fb] else fb)
                lo.append(fb if q[fa] > q[fb] else fa)
    return np.asarray(hi, dtype=np.int64), np.asarray(lo, dtype=np.int64)


def rank_loss(values: torch.Tensor, better: np.ndarray, worse: np.ndarray, scale: float) -> torch.Tensor:
    """Mean pairwise logistic loss log(1 + exp(-scale * (M_better - M_worse))); 0 when there are no pairs."""
    if len(better) == 0:
        return values.sum() * 0.0
    diff = values[torch.as_tensor(better)] - values[torch.as_tensor(worse)]
    return torch.nn.functional.softplus(-scale * diff).mean()
