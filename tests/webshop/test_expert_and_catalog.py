"""Synthetic catalog/goal properties and the scripted expert's success rate."""

from __future__ import annotations

import numpy as np
import pytest

from envs.webshop.env import WebShopEnv
from envs.webshop.synth import SyntheticCatalog

from .conftest import run_expert


def test_catalog_is_seeded_and_goals_split_disjoint():
    a, b, c = SyntheticCatalog(3_000, 0), SyntheticCatalog(3_000, 0), SyntheticCatalog(3_000, 1)
    assert a.hash == b.hash != c.hash
    assert [a.product(i) for i in range(0, 3000, 97)] == [b.product(i) for i in range(0, 3000, 97)]
    assert a.product(5).name != c.product(5).name
    asins = {s: {g.asin for g in a.goals(s)} for s in ("train", "eval", "test")}
    assert (
        not asins["train"] & asins["eval"] and not asins["train"] & asins["test"] and not asins["eval"] & asins["test"]
    )
    assert sum(len(a.goals(s)) for s in ("train", "eval", "test")) == 3_000
    assert 0.03 < len(a.goals("test")) / 3000 < 0.07


def test_products_look_like_webshop():
    cat = SyntheticCatalog(3_000, 0)
    for i in range(0, 3000, 150):
        p = cat.product(i)
        assert cat.index_of(p.asin) == i and p.asin.startswith("B0") and len(p.asin) == 10
        assert " › " in p.product_category and p.name and p.description and len(p.bullets) >= 3
        assert 2 <= len(p.attributes) <= 4 and p.pricing[0] <= p.price <= p.pricing[-1]
    with_opts = sum(bool(cat.product(i).options) for i in range(3000))
    assert 0.75 < with_opts / 3000 < 0.95
    assert len({cat.product(i).name for i in range(3000)}) > 2900  # titles are (nearly) unique


def test_goal_is_achievable_on_its_own_product_and_wording_varies():
    cat = SyntheticCatalog(3_000, 0)
    from envs.webshop.expert import best_options
    from envs.webshop.reward import compute_reward

    goals = cat.goals("test")
    for g in goals[:100]:
        p = cat.product(cat.index_of(g.asin))
        assert compute_reward(p, g, best_options(p, g)).reward == 1.0, g
    starts = {" ".join(g.instruction.split()[:2]) for g in goals[:100]}
    assert len(starts) >= 6
    assert all(g.price_upper > cat.product(cat.index_of(g.asin)).price for g in goals[:100])


def test_expert_success_rate(small_kwargs):
    env = WebShopEnv(split="test", **small_kwargs)
    n = min(100, len(env.goals))
    rewards = np.array([run_expert(env, gi)[0] for gi in range(n)])
    assert (rewards >= 1.0).mean() >= 0.9, rewards
    assert rewards.mean() >= 0.95


@pytest.mark.slow
def test_expert_success_rate_default_catalog():
    env = WebShopEnv(split="test")  # the zero-config 10k catalog
    rewards = np.array([run_expert(env, gi)[0] for gi in range(len(env.goals))])
    assert (rewards >= 1.0).mean() >= 0.95, (rewards >= 1.0).mean()
