"""Cooperation: the iterated prisoner's dilemma in a round robin of pairs, Axelrod's strategies as rules.

The scenario (`scenario.py`), its rule (`rule.py`) and its parameters (`params.py`); the build function
below registers it as `scenario=cooperation` (`cooperation.<key>=` sets its parameters).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from societies.env import SocietyEnv
from societies.personas import Persona
from societies.scenarios import register_scenario
from societies.scenarios.cooperation.params import DEFAULT_STRATEGIES, CooperationParams
from societies.scenarios.cooperation.rule import STRATEGIES, IPDStrategies
from societies.scenarios.cooperation.scenario import COOPERATE, DEFECT, CooperationScenario

if TYPE_CHECKING:
    from societies.config import SocietyRunConfig
    from societies.rules import Rule


__all__ = [
    "COOPERATE",
    "CooperationParams",
    "CooperationScenario",
    "DEFAULT_STRATEGIES",
    "DEFECT",
    "IPDStrategies",
    "STRATEGIES",
    "build_cooperation",
]


@register_scenario("cooperation", params=CooperationParams)
def build_cooperation(
    cfg: SocietyRunConfig, c: CooperationParams, personas: list[Persona] | None
) -> tuple[SocietyEnv, Rule]:
    """The iterated prisoner's dilemma, strategies cycled over the agents (kept in the personas' traits)."""
    n = cfg.agents
    strategies = [c.strategies[i % len(c.strategies)] for i in range(n)]
    if personas is not None:
        personas = [p.model_copy(update={"traits": {"strategy": s}}) for p, s in zip(personas, strategies)]
    sc = CooperationScenario(n, match_length=c.match_length, personas=personas)
    return SocietyEnv(sc, cfg.rounds), IPDStrategies(strategies)
