"""TD targets with GAE for the promise Q and the progress A, vectorised over many trajectories.

Trajectories are concatenated into flat per-step arrays plus one length per trajectory, so
a million steps are a handful of numpy operations (no Python loop over steps or episodes).

Notation (one trajectory, steps t = 0..T): M_t = model promise for (s_t, a_t); r_t = reward
received after a_t (sparse: the outcome at the last step).

`paper` (AgentPRM, Xi et al. 2025):
    delta_t = r_t + gamma * M_t - M_{t-1}            (M_{-1} cancels out; we use 0)
    A_t     = sum_k (gamma * lambda)^k delta_{t+k}
    Q_t     = A_t + M_{t-1}
  and at a real end the bootstrap term gamma * M_T is dropped, so Q_T = r_T = outcome.
  With gamma = 1 this is Q_t = (1 - lambda) sum_k lambda^k M_{t+k} + lambda^(T-t) * outcome.

`sarsa` (standard SARSA(lambda) / GAE on Q):
    delta_t = r_t + gamma * M_{t+1} - M_t,  A_t = sum_k (gamma * lambda)^k delta_{t+k},  Q_t = A_t + M_t
  with M_{T+1} = 0 after a real end, else the given bootstrap value (default M_T).

A trajectory is *terminal* when nothing follows its last step: it terminated, or it was cut by
a step limit that the benchmark scores as failure (then its outcome is 0, nothing is
bootstrapped). Only a cut that is *not* a failure (an outside interruption) bootstraps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

TDMode = Literal["paper", "sarsa"]


@dataclass(frozen=True)
class Targets:
    """Per-step labels, flat like the inputs."""

    q: np.ndarray  # promise labels Q-hat_t
    progress: np.ndarray  # progress labels Q-hat_t - Q-hat_{t-1} (0 at each trajectory's first step)
    advantage: np.ndarray  # the GAE sums A-hat_t


def _offsets(lengths: np.ndarray, n_steps: int) -> np.ndarray:
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.ndim != 1 or (lengths < 1).any():
        raise ValueError("lengths must be a 1-D array of positive trajectory lengths")
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] != n_steps:
        raise ValueError(f"lengths sum to {offsets[-1]} but there are {n_steps} steps")
    return offsets


def discounted_reverse_cumsum(x: np.ndarray, coef: float, lengths: np.ndarray) -> np.ndarray:
    """y_t = sum_k coef^k x_{t+k} within each trajectory.

    Walks back from every trajectory's end at once: iteration k updates the k-th-from-last step
    of all trajectories longer than k, so the work is O(steps) in O(max length) numpy calls, exact
    for any coef (no coef^-t rescaling that would overflow on long trajectories).
    """
    x = np.asarray(x, dtype=np.float64)
    offsets = _offsets(lengths, len(x))
    lengths = np.diff(offsets)
    out = x.copy()
    if len(lengths) == 0:
        return out
    order = np.argsort(-lengths, kind="stable")
    ends = (offsets[1:] - 1)[order]
    neg_sorted = -lengths[order]  # ascending
    max_len = int(lengths.max())
    active = np.searchsorted(neg_sorted, -np.arange(max_len), side="left")  # trajectories longer than k
    for k in range(1, max_len):
        idx = ends[: active[k]] - k
        out[idx] += coef * out[idx + 1]
    return out


def _first_last(offsets: np.ndarray, n_steps: int) -> tuple[np.ndarray, np.ndarray]:
    first = np.zeros(n_steps, dtype=bool)
    last = np.zeros(n_steps, dtype=bool)
    first[offsets[:-1]] = True
    last[offsets[1:] - 1] = True
    return first, last


def step_progress(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """x_t - x_{t-1} within each trajectory; 0 at first steps (they have no predecessor)."""
    values = np.asarray(values, dtype=np.float64)
    offsets = _offsets(lengths, len(values))
    first, _ = _first_last(offsets, len(values))
    out = np.empty_like(values)
    out[1:] = values[1:] - values[:-1]
    out[:1] = 0.0
    out[first] = 0.0
    return out


def td_targets(
    values: np.ndarray,
    rewards: np.ndarray,
    lengths: np.ndarray,
    terminal: np.ndarray,
    *,
    gamma: float = 1.0,
    lam: float = 0.95,
    mode: TDMode = "paper",
    bootstrap: np.ndarray | None = None,
) -> Targets:
    """Promise and progress labels for flat, concatenated trajectories.

    values, rewards: per step; lengths, terminal (and optional bootstrap): per trajectory.
    `bootstrap` is the value after the last step of a non-terminal trajectory (sarsa mode only;
    paper mode bootstraps from M_T itself, as its formula does).
    """
    if not 0.0 <= gamma <= 1.0 or not 0.0 <= lam <= 1.0:
        raise ValueError(f"gamma and lam must be in [0, 1]; got gamma={gamma}, lam={lam}")
    if mode not in ("paper", "sarsa"):
        raise ValueError(f"mode must be 'paper' or 'sarsa', got {mode!r}")
    values = np.asarray(values, dtype=np.float64)
    rewards = np.asarray(rewards, dtype=np.float64)
    if values.shape != rewards.shape or values.ndim != 1:
        raise ValueError(f"values and rewards must be 1-D and the same length; got {values.shape} and {rewards.shape}")
    offsets = _offsets(lengths, len(values))
    terminal = np.asarray(terminal, dtype=bool)
    if terminal.shape != (len(offsets) - 1,):
        raise ValueError(f"terminal must have one flag per trajectory ({len(offsets) - 1}), got shape {terminal.shape}")
    first, _ = _first_last(offsets, len(values))
    ends = offsets[1:] - 1
    if mode == "paper":
        boot = values.copy()  # gamma * M_t
        boot[ends[terminal]] = 0.0  # no bootstrap past a real end
        prev = np.empty_like(values)
        prev[1:] = values[:-1]
        prev[:1] = 0.0
        prev[first] = 0.0
        delta = rewards + gamma * boot - prev
        adv = discounted_reverse_cumsum(delta, gamma * lam, lengths)
        q = adv + prev
    else:
        nxt = np.empty_like(values)
        nxt[:-1] = values[1:]
        nxt[-1:] = 0.0
        tail = values[ends].copy() if bootstrap is None else np.asarray(bootstrap, dtype=np.float64).copy()
        if tail.shape != ends.shape:
            raise ValueError(f"bootstrap must have one value per trajectory ({len(ends)}), got shape {tail.shape}")
        tail[terminal] = 0.0
        nxt[ends] = tail
        delta = rewards + gamma * nxt - values
        adv = discounted_reverse_cumsum(delta, gamma * lam, lengths)
        q = adv + values
    return Targets(q=q, progress=step_progress(q, lengths), advantage=adv)


def monte_carlo_returns(rewards: np.ndarray, lengths: np.ndarray, gamma: float = 1.0) -> np.ndarray:
    """The discounted return-to-go of the sampled trajectory itself (lambda = 1, no model)."""
    return discounted_reverse_cumsum(rewards, gamma, lengths)
