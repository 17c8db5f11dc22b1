"""Dense rewards for RL trainers: write the PRM's per-step promise and progress into trajectory records.

`StepRecord.prm_score` = promise Q(s_t, a_t); `StepRecord.prm_progress` = Q_t - Q_{t-1} (0 at the
first step). Progress telescopes, so as a shaping reward it sums to Q_T - Q_0 over an episode.

    python -m prm.dense model=runs/prm/best runs=[runs/webshop-scripted] out=runs/webshop-dense
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from agents.cli import hydra_command
from agents.config import validate_config
from agents.trajectories.schema import EpisodeRecord
from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
from prm.episodes import from_record, trajectory_files
from prm.scoring import PRMScorer
from prm.targets.td import step_progress

log = logging.getLogger("prm.dense")


def annotate(scorer: PRMScorer, episodes: list[EpisodeRecord]) -> list[EpisodeRecord]:
    """Copies of the episodes with prm_score / prm_progress set on every step (one batched pass)."""
    trajs = [from_record(ep) for ep in episodes]
    keep = [i for i, t in enumerate(trajs) if t is not None]
    scores = scorer.score_trajectories([t for t in trajs if t is not None])  # the trajectories at `keep`
    out = list(episodes)
    for i, q in zip(keep, scores):
        prog = step_progress(q, np.array([len(q)]))
        steps = [
            s.model_copy(update={"prm_score": float(a), "prm_progress": float(b)})
            for s, a, b in zip(episodes[i].steps, q, prog)
        ]
        out[i] = episodes[i].model_copy(update={"steps": steps})
    return out


class DenseConfig(BaseModel):
    """`python -m prm.dense` keys (defaults defined here once)."""

    model_config = ConfigDict(extra="forbid")

    model: str  # a PRM saved by python -m prm.train (e.g. runs/prm/best)
    runs: list[str]  # run folders (or .jsonl files) to annotate; one path or a list
    out: str  # a new run folder for the annotated copies
    batch_size: int = Field(16, ge=1)
    chunk: int = Field(256, ge=1)  # episodes scored per batch of work
    log_level: str = "INFO"

    @field_validator("runs", mode="before")
    @classmethod
    def _one_path_is_a_list(cls, v: object) -> object:
        return [v] if isinstance(v, (str, bytes)) else v


def dense(cfg: DenseConfig) -> int:
    """Copy every episode of `cfg.runs` into `cfg.out` with per-step promise and progress; returns the count."""
    from prm.model import PRMModel

    scorer = PRMScorer(PRMModel.from_pretrained(cfg.model), batch_size=cfg.batch_size)
    files = trajectory_files(cfg.runs)
    out = Path(cfg.out)
    store = TrajectoryStore(out / TRAJECTORIES)
    n = 0
    for f in files:
        eps = list(TrajectoryStore(f).read())
        for b in range(0, len(eps), cfg.chunk):
            for ep in annotate(scorer, eps[b : b + cfg.chunk]):
                store.append(ep)
                n += 1
    log.info("wrote %d episodes with prm_score/prm_progress to %s", n, out / TRAJECTORIES)
    return n


def job(plain: dict[str, Any]) -> int:
    """`python -m prm.dense` after Hydra."""
    dense(validate_config(DenseConfig, plain))
    return 0


main = hydra_command(
    str(Path(__file__).parent / "conf"), "dense", job, model=DenseConfig, schemas={"dense_schema": DenseConfig}
)


if __name__ == "__main__":
    main()
