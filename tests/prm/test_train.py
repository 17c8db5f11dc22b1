"""Training: lowers held-out loss, resumes from its checkpoint, runs as `python -m prm.train`; dense rewards."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.trajectories.store import TrajectoryStore
from prm.config import TDConfig
from prm.dense import annotate
from prm.episodes import load_trajectories
from prm.loss import labels, prm_loss
from prm.model import PRMModel
from prm.scoring import PRMScorer
from prm.train import train
from tests.prm.conftest import collect_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, shop_kwargs):
    d = tmp_path_factory.mktemp("prm-runs")
    collect_run(d / "train", "train", list(range(8)), 2, 0.5, shop_kwargs, seed=1)
    collect_run(d / "heldout", "test", list(range(4)), 2, 0.5, shop_kwargs, seed=2)
    return d


def small_cfg(runs: Path, out: Path, backbone: str, **kw) -> dict:
    cfg = {
        "data": [str(runs / "train")],
        "eval_data": [str(runs / "heldout")],
        "out": str(out),
        "backbone": backbone,
        "text": {"max_length": 128, "obs_tokens": 24, "action_tokens": 12, "instruction_tokens": 40},
        "epochs": 3,
        "batch_size": 4,
        "grad_accum": 1,
        "lr": 1e-3,
        "head_lr": 1e-2,
        "freeze_embeddings": False,
        "progress": False,
        "seed": 0,
        "threads": 2,
    }
    return cfg | kw


def test_loss_matches_the_formula():
    v = torch.tensor([0.2, 0.5, 0.1, 0.4], requires_grad=True)
    q = torch.tensor([0.3, 0.9, 0.0, 1.0])
    parts = prm_loss(v, q, [2, 2], beta=2.0)
    l_q = 0.5 * np.mean((v.detach().numpy() - q.numpy()) ** 2)
    l_a = 0.5 * np.mean(
        [((0.5 - 0.2) - (0.9 - 0.3)) ** 2, ((0.4 - 0.1) - (1.0 - 0.0)) ** 2]
    )  # no pair across trajectories
    assert parts.l_q == pytest.approx(l_q) and parts.l_a == pytest.approx(l_a)
    assert float(parts.loss.detach()) == pytest.approx(l_q + 2.0 * l_a)
    parts.loss.backward()
    assert v.grad is not None and v.grad.abs().sum() > 0


def test_td_labels_use_the_given_values(runs):
    trajs = load_trajectories([runs / "train"])[:3]
    n = sum(len(t) for t in trajs)
    a = labels("td", trajs, np.zeros(n), TDConfig())
    b = labels("td", trajs, np.full(n, 0.5), TDConfig())
    assert a.shape == (n,) and not np.allclose(a, b)  # recomputed from the current model's values
    ends = np.cumsum([len(t) for t in trajs]) - 1
    assert np.allclose(a[ends], [t.outcome for t in trajs]) and np.allclose(b[ends], [t.outcome for t in trajs])
    with pytest.raises(ValueError, match="MC labels"):
        labels("mc", trajs, np.zeros(n), TDConfig())


def test_training_lowers_heldout_loss_and_resumes(runs, tmp_path, tiny_backbone):
    out = tmp_path / "prm"
    first = train(small_cfg(runs, out, tiny_backbone, epochs=2))
    assert [h["epoch"] for h in first] == [0, 1, 2]
    assert first[-1]["mse_vs_return"] < first[0]["mse_vs_return"]
    assert (out / "checkpoint" / "trainer_state.pt").is_file() and (out / "curves.png").is_file()
    assert (out / "best" / "prm_config.json").is_file() and (out / "cache" / "tokens.json").is_file()
    more = train(small_cfg(runs, out, tiny_backbone, epochs=3))  # resumes at epoch 2, trains one more
    assert [h["epoch"] for h in more] == [0, 1, 2, 3]

    def finite(row: dict) -> dict:  # NaN metrics (no MC labels here) never compare equal
        return {k: v for k, v in row.items() if not (isinstance(v, float) and math.isnan(v))}

    assert finite(more[2]) == finite(first[2])  # the resumed run kept the first run's history
    hist = json.loads((out / "history.json").read_text())
    assert len(hist["epochs"]) == 4 and hist["updates"][-1]["update"] == len(
        hist["updates"]
    )  # one log entry per update, across the resume


def test_dense_rewards_are_written_into_records(runs, tiny_backbone):
    from prm.model import PRMConfig

    scorer = PRMScorer(PRMModel.from_backbone(PRMConfig(base_backbone=tiny_backbone)))
    eps = list(TrajectoryStore(runs / "heldout" / "trajectories.jsonl").read())[:3]
    out = annotate(scorer, eps)
    for ep in out:
        q = [s.prm_score for s in ep.steps]
        p = [s.prm_progress for s in ep.steps]
        assert None not in q and p[0] == 0.0
        assert np.allclose(p[1:], np.diff(q))
    assert eps[0].steps[0].prm_score is None  # the inputs are not modified


@pytest.mark.slow
def test_cli_trains_from_an_agents_run_folder(tmp_path, tiny_backbone, shop_kwargs):
    run = tmp_path / "run"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "agents.run",
            "env=webshop",
            "brain=scripted",
            "brain.epsilon=0.5",
            "memory=none",
            "episodes=8",
            f"+env.kwargs.num_products={shop_kwargs['num_products']}",
            f"out={run}",
            "progress=false",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    out = tmp_path / "prm"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "prm.train",
            f"data=[{run}]",
            f"out={out}",
            f"backbone={tiny_backbone}",
            "epochs=1",
            "eval_fraction=0.3",
            "text.max_length=128",
            "text.obs_tokens=48",
            "progress=false",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert (out / "final" / "head.safetensors").is_file() and "AgentPRM training" in res.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "prm.train", f"data=[{tmp_path / 'nope'}]", f"out={out}2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and "no trajectories" in bad.stderr and "Traceback" not in bad.stderr


def _traj(group: str, actions: list[str], obs: list[str] | None = None):
    from prm.episodes import Trajectory

    n = len(actions)
    return Trajectory(
        episode_id=f"{group}-{'-'.join(actions)}",
        instruction=group,
        observations=obs or [f"s{i}" for i in range(n)],
        actions=actions,
        rewards=np.zeros(n),
        terminal=True,
        outcome=0.0,
        success=False,
        group=group,
    )


def test_sibling_pairs_are_steps_that_share_a_prefix_and_differ_in_the_action():
    from prm.loss import sibling_pairs

    trajs = [
        _traj("a", ["x", "y", "z"]),  # steps 0..2
        _traj("a", ["x", "w"]),  # 3..4: sibling of step 1 (same prefix x, same state s1)
        _traj("a", ["v"]),  # 5: sibling of step 0 of both
        _traj("b", ["x", "q"]),  # another task: never a sibling of task a
        _traj("a", ["x", "k"], obs=["s0", "other state"]),  # 8..9: the env went elsewhere: not a sibling at 1
    ]
    q = np.array([0.5, 0.9, 1.0, 0.5, 0.2, 0.0, 0.5, 0.7, 0.5, 0.3])
    better, worse = sibling_pairs(trajs, 0.01, q)
    pairs = set(zip(better.tolist(), worse.tolist()))
    assert pairs == {(1, 4), (0, 5), (3, 5), (8, 5)}
    assert len(sibling_pairs(trajs, 0.6, q)[0]) == 1  # only |0.9 - 0.2| = 0.7 clears 0.6


def test_rank_loss_falls_when_the_better_sibling_scores_higher():
    from prm.loss import rank_loss

    better, worse = np.array([0]), np.array([1])
    right = rank_loss(torch.tensor([0.8, 0.2]), better, worse, 20.0)
    wrong = rank_loss(torch.tensor([0.2, 0.8]), better, worse, 20.0)
    assert float(right) < 0.01 < 10.0 < float(wrong)
    assert float(rank_loss(torch.tensor([0.5]), better[:0], worse[:0], 20.0)) == 0.0


def _sibling_store(folder: Path, shop_kwargs: dict) -> Path:
    """Sibling sets on 3 WebShop goals (a low-noise path, then up to 4 siblings at 2 of its states, continued)."""
    from envs.webshop.env import WebShopEnv
    from prm.policy import sibling_rollouts, start, to_episode
    from tests.prm.conftest import scripted_sampler

    env = WebShopEnv(split="train", **shop_kwargs)
    store = TrajectoryStore(folder / "trajectories.jsonl")
    for g in range(3):
        ends, _ = sibling_rollouts(
            env,
            scripted_sampler(0.2),
            scripted_sampler(0.0),
            start(env, options={"goal_index": g}),
            states=2,
            max_siblings=4,
            seed=g,
            max_steps=15,
        )
        for j, end in enumerate(ends):
            store.append(
                to_episode(
                    end,
                    episode_id=f"{g}-{j}",
                    env_name="webshop",
                    env_id="agentsim/WebShop-v0",
                    seed=0,
                    brain="scripted",
                )
            )
    return folder


@pytest.mark.parametrize(
    ("branch_training", "rank_among"), [("whole", "siblings"), ("at_branch", "siblings"), ("at_branch", "branches")]
)
def test_training_with_the_sibling_ranking_loss_batches_by_task(
    tmp_path, tiny_backbone, shop_kwargs, branch_training, rank_among
):
    """batch_by=task keeps a task's trajectories (and so a state's siblings) in one micro-batch; l_r is logged."""
    data = _sibling_store(tmp_path / "sib", shop_kwargs)
    out = tmp_path / "prm"
    cfg = small_cfg(
        tmp_path,
        out,
        tiny_backbone,
        data=[str(data)],
        eval_data=None,
        eval_fraction=0.3,
        epochs=1,
        rank_weight=1.0,
        batch_by="task",
        max_task_batch=6 if branch_training == "whole" else 32,
        branch_training=branch_training,
        rank_among=rank_among,
    )
    train(cfg)
    hist = json.loads((out / "history.json").read_text())
    assert any(u["l_r"] > 0 for u in hist["updates"])  # sibling pairs were found inside the task batches


def test_at_branch_training_scores_one_window_and_labels_it_with_the_own_return(tmp_path, tiny_backbone, shop_kwargs):
    """A sibling is trained where it left its path only: one window ending there, its discounted return as label;
    the path it left is trained whole."""
    from prm.train import Trainer, batch_scores

    data = _sibling_store(tmp_path / "sib", shop_kwargs)
    gamma = 0.9
    cfg = small_cfg(
        tmp_path,
        tmp_path / "prm",
        tiny_backbone,
        data=[str(data)],
        eval_data=None,
        eval_fraction=0.0,
        branch_training="at_branch",
        outcome="success",
        td={"gamma": gamma},
    )
    from prm.config import TrainConfig

    trainer = Trainer(TrainConfig(**cfg))
    trainer.setup()
    trajs = trainer.train_trajs
    branched = [i for i, t in enumerate(trajs) if t.branch_step is not None]
    paths = [i for i, t in enumerate(trajs) if t.branch_step is None]
    assert branched and paths  # every sibling set keeps its base path
    for i in branched:
        t, k = trajs[i], trajs[i].branch_step
        assert len(trainer.windows[i]) == 1 and trainer.windows[i][0].steps[-1] == k
    for i in paths:
        assert sorted(s for w in trainer.windows[i] for s in w.steps) == list(range(len(trajs[i])))
    idx = np.array([branched[0], paths[0], branched[-1]])
    batch = [trajs[i] for i in idx]
    values, scored = batch_scores(trainer.model, batch, [trainer.windows[i] for i in idx])
    q = torch.zeros(len(values), dtype=values.dtype)
    trained = trainer.trained_mask(idx, scored, q)
    offsets = np.cumsum([0] + [len(t) for t in batch])
    expect = np.zeros(len(values), dtype=bool)
    for j, t in enumerate(batch):
        if t.branch_step is None:
            expect[offsets[j] : offsets[j + 1]] = True
        else:
            k = t.branch_step
            expect[offsets[j] + k] = True
            assert float(q[offsets[j] + k]) == pytest.approx(gamma ** (len(t) - 1 - k) * float(t.success))
    assert trained.numpy().tolist() == expect.tolist()
    branch_only = [(t.branch_step is not None and s == t.branch_step) for t in batch for s in range(len(t))]
    assert trainer.branch_mask(idx).numpy().tolist() == branch_only
    assert bool(scored[torch.as_tensor(expect)].all())  # every trained step was scored


def test_prm_loss_ignores_steps_it_does_not_train():
    v = torch.tensor([0.1, 0.9, 0.4])
    q = torch.tensor([0.1, 0.0, 0.4])  # wrong only at the step left out
    parts = prm_loss(v, q, [3], beta=1.0, trained=torch.tensor([True, False, True]))
    assert parts.l_q == 0.0 and parts.l_a == 0.0  # no progress term across an untrained step
    assert prm_loss(v, q, [3], beta=1.0).l_q > 0.1


def test_records_mark_where_a_branch_left_its_path(tmp_path, shop_kwargs):
    from prm.episodes import load_trajectories

    trajs = load_trajectories([_sibling_store(tmp_path / "sib", shop_kwargs)])
    marked = [t for t in trajs if t.branch_step is not None]
    assert len(marked) == len(trajs) - 3  # all but the 3 base paths
    for t in marked:
        assert 0 <= t.branch_step < len(t)
