"""PRM test fixtures: a small WebShop, scripted-policy trajectories (the tiny BERT backbone is in tests/conftest.py)."""

from __future__ import annotations

import os
import tempfile

import pytest

os.environ.setdefault("AGENTSIM_CACHE", tempfile.mkdtemp(prefix="agentsim-prm-tests-"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import envs  # noqa: F401

SMALL = 2_000
MAX_STEPS = 15  # the step limit every search and rollout here applies (`prm.policy.apply` cuts at it)


@pytest.fixture(scope="session")
def shop_kwargs() -> dict:
    return {"num_products": SMALL}


@pytest.fixture
def webshop(shop_kwargs):
    from envs.webshop.env import WebShopEnv

    return WebShopEnv(split="test", **shop_kwargs)


def scripted_sampler(epsilon: float):
    from agents.brains.scripted import ScriptedBrain
    from prm.policy import BrainSampler

    return BrainSampler(ScriptedBrain(epsilon=epsilon), temperature=1.0, agent_cfg={"mode": "choose"})


def collect_run(folder, split: str, goals: list[int], per_goal: int, epsilon: float, shop_kwargs: dict, seed: int = 0):
    """A run folder (trajectories.jsonl) of scripted-policy episodes, as agents.run would write."""
    from agents.trajectories.store import TrajectoryStore
    from envs.webshop.env import WebShopEnv
    from prm.policy import rollout, start, to_episode

    env = WebShopEnv(split=split, **shop_kwargs)
    sampler = scripted_sampler(epsilon)
    store = TrajectoryStore(folder / "trajectories.jsonl")
    eps = []
    for g in goals:
        root = start(env, options={"goal_index": g})
        for j in range(per_goal):
            end, _ = rollout(env, sampler, root, seed=seed * 1000 + g * 10 + j, max_steps=MAX_STEPS)
            ep = to_episode(
                end,
                episode_id=f"{split}-{g}-{j}",
                env_name="webshop",
                env_id="agentsim/WebShop-v0",
                seed=0,
                brain="scripted",
                env_kwargs={"split": split, **shop_kwargs},
                meta={"reset_options": {"goal_index": g}},
            )
            store.append(ep)
            eps.append(ep)
    return eps
