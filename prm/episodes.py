"""Trajectory records -> what the PRM needs per step: the state text, the action, the reward, the end.

The trajectory store keeps everything an agent saw and did; a PRM needs less: the state s_t
the agent acted in (the observation *before* step t), the action a_t, the reward after it, and
whether the episode really ended (terminal) or was merely cut. States are read in the env's compact
form when its class offers one (`envs.contract.CompactsObservations`, found from the recorded env id).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import load_env_creator

from agents.trajectories.schema import EpisodeRecord
from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
from envs.contract import CompactsObservations

log = logging.getLogger(__name__)
OutcomeMode = Literal["reward", "success"]
MC_LABELS = "mc_labels.jsonl"
# The raw output `prm.policy` records for an action a data generator chose instead of the policy: the step where a
# branch, a sibling or an ending branch left the path it shares a prefix with.
BRANCH_OUTPUTS = ("(branch)", "(sibling)", "(ending branch)")
Compactor = Callable[[str], str]


@dataclass
class Trajectory:
    """One episode as the PRM reads it: per-step state text, action and reward, and how it ended."""

    episode_id: str
    instruction: str
    observations: list[str]  # s_t: what the agent saw before acting at step t (compacted, see the module doc)
    actions: list[str]  # a_t as text (an unparsed output is kept, marked, so the PRM can judge it)
    rewards: np.ndarray  # r_t after a_t
    terminal: bool  # nothing to bootstrap after the last step
    outcome: float  # the final outcome the labels converge to
    success: bool
    group: str  # the task (instruction); steps of one task are comparable
    mc_q: np.ndarray | None = None  # Monte Carlo promise labels, when computed
    meta: dict = field(default_factory=dict)
    branch_step: int | None = None  # where it left the path it shares a prefix with (`BRANCH_OUTPUTS`), if it did

    def __len__(self) -> int:
        return len(self.actions)


def unchanged(text: str) -> str:
    """The identity compactor, for envs without `compact_observation`."""
    return text


def env_compactor(env: gym.Env) -> Compactor:
    """The `compact_observation` of a live env (unwrapped), else `unchanged`."""
    base = env.unwrapped
    return base.compact_observation if isinstance(base, CompactsObservations) else unchanged


@cache
def observation_compactor(env_id: str) -> Compactor:
    """The `compact_observation` of the env class registered as `env_id` (the env is not made), else `unchanged`."""
    import envs  # noqa: F401  (registers the project's envs)

    try:
        entry = gym.spec(env_id).entry_point
    except gym.error.Error:
        return unchanged
    cls = load_env_creator(entry) if isinstance(entry, str) else entry
    return cls.compact_observation if isinstance(cls, CompactsObservations) else unchanged


def step_action_text(step) -> str:
    """A step's action as the PRM reads it: the action, or the unparsed output, marked."""
    if step.action is not None:
        return step.action
    return f"(unparsed output) {step.raw_output[:120]}"


def branch_step(steps) -> int | None:
    """The index of the last step whose raw output marks a branch (`BRANCH_OUTPUTS`), else None."""
    marked = [i for i, s in enumerate(steps) if s.raw_output in BRANCH_OUTPUTS]
    return marked[-1] if marked else None


def from_record(
    ep: EpisodeRecord, *, outcome: OutcomeMode = "reward", truncated_as_failure: bool = True, reward_scale: float = 1.0
) -> Trajectory | None:
    """One episode record as a PRM trajectory; None for an episode with no steps. Rewards are divided by
    `reward_scale` (payoffs of a society game run to 5 a round; the PRM's promise scale is 0..1 per unit)."""
    if not ep.steps:
        return None
    compact = observation_compactor(ep.env_id)
    observations = [compact(o) for o in [ep.initial_observation] + [s.observation for s in ep.steps[:-1]]]
    actions = [step_action_text(s) for s in ep.steps]
    rewards = np.array([s.reward for s in ep.steps], dtype=np.float64) / reward_scale
    terminated = ep.outcome.terminated
    terminal = terminated or (ep.outcome.truncated and truncated_as_failure)
    success = bool(ep.outcome.success)
    if outcome == "success":
        rewards = np.zeros(len(ep.steps))
        rewards[-1] = 1.0 if success else 0.0
    elif not terminated and truncated_as_failure:
        rewards = np.where(np.arange(len(rewards)) == len(rewards) - 1, 0.0, rewards)  # a cut is a failure
    final = float(rewards.sum())
    return Trajectory(
        episode_id=ep.episode_id,
        instruction=ep.instruction,
        observations=observations,
        actions=actions,
        rewards=rewards,
        terminal=terminal,
        outcome=final,
        success=success,
        group=ep.instruction,
        meta=dict(ep.meta),
        branch_step=branch_step(ep.steps),
    )


def trajectory_files(paths: Iterable[str | Path]) -> list[Path]:
    """A run folder (with trajectories.jsonl) or a .jsonl file, for each path given."""
    files = []
    for p in paths:
        p = Path(p)
        f = p / TRAJECTORIES if p.is_dir() else p
        if not f.is_file():
            raise FileNotFoundError(
                f"no trajectories at {p}: expected a run folder made by agents.run "
                f"(holding {TRAJECTORIES}) or a .jsonl file"
            )
        files.append(f)
    return files


def load_trajectories(
    paths: Iterable[str | Path],
    *,
    outcome: OutcomeMode = "reward",
    truncated_as_failure: bool = True,
    reward_scale: float = 1.0,
) -> list[Trajectory]:
    """Every episode in the given run folders / files, with MC labels attached where a sibling mc_labels.jsonl has them."""
    out: list[Trajectory] = []
    for f in trajectory_files(paths):
        mc = read_mc_labels(f.parent / MC_LABELS)
        for ep in TrajectoryStore(f).read():
            t = from_record(ep, outcome=outcome, truncated_as_failure=truncated_as_failure, reward_scale=reward_scale)
            if t is None:
                continue
            q = mc.get(t.episode_id)
            if q is not None and len(q) == len(t):
                t.mc_q = q
            out.append(t)
    log.info("loaded %d trajectories (%d steps)", len(out), sum(len(t) for t in out))
    return out


def read_mc_labels(path: Path) -> dict[str, np.ndarray]:
    """Monte Carlo promise labels by episode id, from an mc_labels.jsonl ({} when there is none)."""
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            out[row["episode_id"]] = np.asarray(row["q"], dtype=np.float64)
    return out


def flatten(trajs: list[Trajectory]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rewards, lengths, terminal) as the flat arrays `prm.targets.td_targets` takes."""
    rewards = np.concatenate([t.rewards for t in trajs]) if trajs else np.zeros(0)
    lengths = np.array([len(t) for t in trajs], dtype=np.int64)
    terminal = np.array([t.terminal for t in trajs], dtype=bool)
    return rewards, lengths, terminal
