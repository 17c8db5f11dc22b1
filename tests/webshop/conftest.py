"""Shared fixtures: a small synthetic shop built once per test session in a private cache dir."""

from __future__ import annotations

import os
import tempfile

import pytest

# Build catalogs and indexes under a throwaway dir unless the caller chose one.
os.environ.setdefault("AGENTSIM_CACHE", tempfile.mkdtemp(prefix="agentsim-webshop-tests-"))

import envs  # noqa: E402,F401  (registers agentsim/WebShop-v0)
from envs.webshop.env import WebShopEnv  # noqa: E402

SMALL = 2_000


@pytest.fixture(scope="session")
def small_kwargs() -> dict:
    return {"num_products": SMALL}


@pytest.fixture
def env(small_kwargs) -> WebShopEnv:
    return WebShopEnv(split="test", **small_kwargs)


def run_expert(env: WebShopEnv, goal_index: int) -> tuple[float, list[str], dict]:
    env.reset(options={"goal_index": goal_index})
    actions, info = [], {}
    while True:
        a = env.expert_action()
        actions.append(a)
        _, r, term, trunc, info = env.step(a)
        if term or trunc:
            return r, actions, info
