"""Aggregate a run's episodes into the numbers people compare: success, score, steps, tokens."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from agents.trajectories.schema import EpisodeRecord


class RunSummary(BaseModel):
    episodes: int
    success_rate: float
    mean_score: float  # mean final reward x 100 (WebShop's "score")
    mean_reward: float
    mean_steps: float
    invalid_action_rate: float  # (env-rejected actions + unparseable outputs) / steps
    parse_failure_rate: float
    truncated_rate: float
    tokens_in: int
    tokens_out: int
    brain_time_s: float
    wall_time_s: float
    steps_per_s: float


def summarize(episodes: Iterable[EpisodeRecord], wall_time_s: float) -> RunSummary:
    eps = list(episodes)
    n = len(eps)
    steps = sum(e.stats.steps for e in eps)
    bad = sum(e.stats.invalid_actions + e.stats.parse_failures for e in eps)
    return RunSummary(
        episodes=n,
        success_rate=sum(e.outcome.success for e in eps) / n if n else 0.0,
        mean_score=100.0 * sum(e.outcome.reward for e in eps) / n if n else 0.0,
        mean_reward=sum(e.outcome.reward for e in eps) / n if n else 0.0,
        mean_steps=steps / n if n else 0.0,
        invalid_action_rate=bad / steps if steps else 0.0,
        parse_failure_rate=sum(e.stats.parse_failures for e in eps) / steps if steps else 0.0,
        truncated_rate=sum(e.outcome.truncated for e in eps) / n if n else 0.0,
        tokens_in=sum(e.stats.tokens_in for e in eps),
        tokens_out=sum(e.stats.tokens_out for e in eps),
        brain_time_s=sum(e.stats.brain_time_s for e in eps),
        wall_time_s=wall_time_s,
        steps_per_s=steps / wall_time_s if wall_time_s > 0 else 0.0,
    )
