"""Fixtures for the fault-tree tests: small, fast trees and envs."""

from __future__ import annotations

import copy

import gymnasium as gym
import pytest

import envs  # noqa: F401  (registers agentsim/*)
from envs.faulttree.generator import generate_tree
from envs.faulttree.schema import EXAMPLE


@pytest.fixture
def example() -> dict:
    return copy.deepcopy(EXAMPLE)


@pytest.fixture(scope="session")
def vehicle_tree():
    return generate_tree("vehicle", 7)


@pytest.fixture
def make_env():
    made = []

    def _make(**kwargs):
        env = gym.make("agentsim/FaultTree-v0", **kwargs)
        made.append(env)
        return env

    yield _make
    for env in made:
        env.close()
