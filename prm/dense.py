"""Dense rewards for RL trainers: write the PRM's per-step promise and progress into trajectory records.

`StepRecord.prm_score` = promise Q(s_t, a_t); `StepRecord.prm_progress` = Q_t - Q_{t-1} (0 at the
first step). Progress telescopes, so as a shaping reward it sums to Q_T - Q_0 over an episode.

    python -m prm.dense model=runs/prm/best runs=[runs/webshop-scripted] out=runs/webshop-dense
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import hydra
import numpy as np
from omegaconf import DictConfig, OmegaConf

from agents.trajectories.schema import EpisodeRecord
from agents.trajectories.store import TrajectoryStore
from prm.episodes import TRAJECTORIES, from_record, trajectory_files
from prm.scoring import PRMScorer
from prm.targets.td import step_progress

log = logging.getLogger("prm.dense")


def annotate(scorer: PRMScorer, episodes: list[EpisodeRecord]) -> list[EpisodeRecord]:
    """Copies of the episodes with prm_score / prm_progress set on every step (one batched pass)."""
    trajs = [from_record(ep) for ep in episodes]
    keep = [i for i, t in enumerate(trajs) if t is not None]
    scores = scorer.score_trajectories([trajs[i] for i in keep])
    out = list(episodes)
    for i, q in zip(keep, scores):
        prog = step_progress(q, np.array([len(q)]))
        steps = [s.model_copy(update={"prm_score": float(a), "prm_progress": float(b)})
                 for s, a, b in zip(episodes[i].steps, q, prog)]
        out[i] = episodes[i].model_copy(update={"steps": steps})
    return out


@hydra.main(version_base="1.3", config_path="conf", config_name="dense")
def main(cfg: DictConfig) -> None:
    from prm.model import PRMModel

    c = OmegaConf.to_container(cfg, resolve=True)
    try:
        scorer = PRMScorer(PRMModel.from_pretrained(c["model"]), batch_size=int(c["batch_size"]))
        files = trajectory_files(c["runs"])
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    out = Path(c["out"])
    store = TrajectoryStore(out / TRAJECTORIES)
    n = 0
    for f in files:
        eps = list(TrajectoryStore(f).read())
        for b in range(0, len(eps), int(c["chunk"])):
            for ep in annotate(scorer, eps[b: b + int(c["chunk"])]):
                store.append(ep)
                n += 1
    log.info("wrote %d episodes with prm_score/prm_progress to %s", n, out / TRAJECTORIES)


if __name__ == "__main__":
    main()
