"""A society run's per-agent trajectories train a PRM like any other run (issue 15's last "done when")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.config import validate_config
from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
from societies.config import SocietyRunConfig
from societies.run import run_society

pytest.importorskip("torch")


def society(out: Path, seed: int) -> Path:
    """An iterated prisoner's dilemma tournament of Axelrod rule agents, every agent's trajectory kept."""
    cfg = validate_config(
        SocietyRunConfig,
        {
            "out": str(out),
            "scenario": "cooperation",
            "agents": 12,
            "rounds": 16,
            "seed": seed,
            "plots": False,
            "trajectory_agents": 12,
        },
    )
    run_society(cfg)
    return out


def test_society_trajectories_train_a_prm_like_any_other_run(tmp_path: Path, tiny_backbone: str):
    from prm.episodes import load_trajectories
    from prm.model import PRMModel
    from prm.scoring import PRMScorer
    from prm.train import train

    train_run, heldout_run = society(tmp_path / "train", 0), society(tmp_path / "heldout", 1)
    episodes = list(TrajectoryStore(train_run / TRAJECTORIES).read(strict=True))
    payoff = max(s.reward for ep in episodes for s in ep.steps)
    assert payoff > 1  # raw payoffs are not on the promise scale: hence reward_scale
    out = tmp_path / "prm"
    history = train(
        {
            "data": [str(train_run)],
            "eval_data": [str(heldout_run)],
            "out": str(out),
            "backbone": tiny_backbone,
            "text": {"max_length": 128, "obs_tokens": 24, "action_tokens": 8, "instruction_tokens": 32},
            "reward_scale": payoff,
            "td": {"gamma": 0.8},
            "truncated_as_failure": False,  # a society ends by its round limit, which is no failure
            "epochs": 3,
            "batch_size": 4,
            "lr": 1e-3,
            "head_lr": 1e-2,
            "freeze_embeddings": False,
            "progress": False,
            "threads": 2,
        }
    )
    assert history[-1]["mse_vs_return"] < history[0]["mse_vs_return"]  # held-out fit improves on another seed
    assert (out / "best" / "prm_config.json").is_file()
    heldout = load_trajectories([str(heldout_run)], truncated_as_failure=False, reward_scale=payoff)
    assert all(t.rewards.max() <= 1.0 for t in heldout) and len(heldout) == 12
    scores = PRMScorer(PRMModel.from_pretrained(out / "best")).score_trajectories(heldout)
    assert [len(s) for s in scores] == [len(t) for t in heldout] and all(np.isfinite(s).all() for s in scores)
