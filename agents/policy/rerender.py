"""Rebuild a trajectory store's prompts under another agent config by replaying each episode's actions.

Adapters learn the prompt turns they are trained on (docs/policy.md, Compact turns), so episodes collected with
full turns (a stronger policy's successes, say) train a compact-turn policy only once their prompts are rebuilt.
Each episode is replayed in its env (same id, kwargs and seed) with the recorded actions and the new agent; a
replay that does not reproduce the recorded outcome is skipped and reported, never kept.

`python -m agents.policy.rerender IN OUT [--turn-style compact] [--min-reward R] [--success-only]`
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

from agents.brains.base import Brain, BrainError
from agents.brains.scripted import ScriptedBrain
from agents.config import EnvConfig
from agents.core import run_episode
from agents.core.factory import build_agent, make_env
from agents.resolve import resolve_agent
from agents.trajectories.schema import EpisodeRecord
from agents.trajectories.store import TrajectoryStore

log = logging.getLogger(__name__)


class ReplayBrain(ScriptedBrain):
    """Chooses the recorded actions in order, whatever the prompt says."""

    name = "replay"

    def __init__(self, actions: list[str]) -> None:
        super().__init__(0.0)
        self.model = "replay"
        self._plan = list(actions)

    def bind_env(self, env: gym.Env) -> None:  # needs no expert: the plan is the policy
        self._env = env.unwrapped

    def _expert(self, candidates: list[str] | None = None) -> str:
        if not self._plan:
            raise BrainError("the replay ran out of recorded actions before the episode ended")
        return self._plan.pop(0)


@dataclass
class RerenderReport:
    read: int = 0
    filtered: int = 0  # below --min-reward / not a success
    kept: int = 0
    not_reproduced: list[str] = field(default_factory=list)  # episode ids whose replay ended differently


def _reproduces(old: EpisodeRecord, new: EpisodeRecord) -> bool:
    return (
        len(new.steps) == len(old.steps)
        and abs(new.outcome.reward - old.outcome.reward) < 1e-9
        and new.outcome.success == old.outcome.success
    )


def replay(
    old: EpisodeRecord, brain: Brain, agent_cfg: dict[str, Any], envs: dict[tuple[str, str], gym.Env]
) -> EpisodeRecord | None:
    """`old` played again by `brain` (which must take the recorded actions) in an agent from `agent_cfg`; None if
    the replay does not reproduce the recorded outcome. `envs` caches one env per (id, kwargs); the caller closes them.
    """
    key = (old.env_id, repr(sorted(old.env_kwargs.items())))
    if key not in envs:
        envs[key] = make_env(EnvConfig(name=old.env, id=old.env_id, kwargs=old.env_kwargs), 10_000)
    agent = build_agent(brain, resolve_agent(agent_cfg), None)
    try:
        new = run_episode(
            envs[key],
            agent,
            seed=old.seed,
            max_steps=len(old.steps),
            env_name=old.env,
            env_kwargs=old.env_kwargs,
            episode_id=old.episode_id,
            reset_options=old.meta.get("reset_options"),  # as agents.policy.evidence replays
        )
    except BrainError as e:
        log.warning("episode %s: %s", old.episode_id, e)
        return None
    return new if _reproduces(old, new) else None


def recorded_actions(ep: EpisodeRecord) -> list[str] | None:
    """The actions `ep` took, or None if a step named none (a reply that did not parse: nothing to replay it with)."""
    actions = [s.action for s in ep.steps if s.action is not None]
    return actions if len(actions) == len(ep.steps) else None


def rerender(
    episodes: list[EpisodeRecord],
    agent_cfg: dict[str, Any],
    out: TrajectoryStore,
    *,
    min_reward: float | None = None,
    success_only: bool = False,
) -> RerenderReport:
    """Replay `episodes` with an agent built from `agent_cfg`; append the reproduced ones to `out`."""
    report = RerenderReport()
    envs: dict[tuple[str, str], gym.Env] = {}
    try:
        for old in episodes:
            report.read += 1
            if (success_only and not old.outcome.success) or (
                min_reward is not None and old.outcome.reward < min_reward
            ):
                report.filtered += 1
                continue
            actions = recorded_actions(old)
            new = replay(old, ReplayBrain(actions), agent_cfg, envs) if actions else None
            if new is None:
                report.not_reproduced.append(old.episode_id)
                continue
            out.append(new.model_copy(update={"meta": {**old.meta, "rerendered_from": old.brain}}))
            report.kept += 1
    finally:
        for env in envs.values():
            env.close()
    return report


def main(argv: list[str] | None = None) -> int:
    """CLI; exit 2 on bad input (a missing store, nothing reproduced)."""
    ap = argparse.ArgumentParser(prog="python -m agents.policy.rerender", description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", help="trajectory stores (folders with trajectories.jsonl) to replay")
    ap.add_argument("out", help="the store to write (a folder; its trajectories.jsonl is appended to)")
    ap.add_argument("--turn-style", choices=["full", "compact"], default="compact")
    ap.add_argument("--min-reward", type=float, default=None, help="keep only episodes with at least this reward")
    ap.add_argument("--success-only", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from agents.policy.sft_data import read_episodes

    missing = [p for p in args.inputs if not (Path(p) / "trajectories.jsonl").exists()]
    if missing:
        log.error("error: no trajectories.jsonl in %s", ", ".join(missing))
        return 2
    report = rerender(
        list(read_episodes(args.inputs)),
        {"perception": {"turn_style": args.turn_style}},
        TrajectoryStore(Path(args.out) / "trajectories.jsonl"),
        min_reward=args.min_reward,
        success_only=args.success_only,
    )
    log.info(
        "read %d, filtered %d, kept %d, not reproduced %d%s",
        report.read,
        report.filtered,
        report.kept,
        len(report.not_reproduced),
        f" ({', '.join(report.not_reproduced[:5])}...)" if report.not_reproduced else "",
    )
    return 0 if report.kept else 2


if __name__ == "__main__":
    sys.exit(main())
