"""Small seeded societies shared by the tests."""

from __future__ import annotations

import numpy as np
import pytest

from societies.env import SocietyEnv
from societies.graphs import complete_graph, gnm
from societies.personas import make_personas
from societies.scenarios.cooperation import CooperationScenario
from societies.scenarios.diffusion import DiffusionScenario
from societies.scenarios.opinion import OpinionScenario


def opinion_env(n: int = 8, rounds: int = 6) -> SocietyEnv:
    return SocietyEnv(OpinionScenario(complete_graph(n)), rounds)


def diffusion_env(n: int = 12, rounds: int = 8) -> SocietyEnv:
    return SocietyEnv(DiffusionScenario(gnm(n, 4, np.random.default_rng(0)), n_seeds=2), rounds)


def cooperation_env(n: int = 5, rounds: int = 60) -> SocietyEnv:
    return SocietyEnv(CooperationScenario(n, match_length=3), rounds)


def sparse_opinion_env(n: int = 10, rounds: int = 6) -> SocietyEnv:
    """Half the agents active per round on average (sparse activation by persona activity)."""
    return SocietyEnv(OpinionScenario(complete_graph(n), personas=make_personas(n, activity=0.5)), rounds)


MAKERS = {
    "opinion": opinion_env,
    "diffusion": diffusion_env,
    "cooperation": cooperation_env,
    "sparse_opinion": sparse_opinion_env,
}


@pytest.fixture(params=sorted(MAKERS))
def make_env(request):
    return MAKERS[request.param]
