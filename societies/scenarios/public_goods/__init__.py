"""Public goods: a linear public-goods game in groups, with or without public reputations.

The scenario (`scenario.py`), its rule (`rule.py`) and its parameters (`params.py`); the build function
below registers it as `scenario=public_goods` (`public_goods.<key>=` sets its parameters).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from societies.env import SocietyEnv
from societies.personas import Persona
from societies.scenarios import register_scenario
from societies.scenarios.public_goods.params import DEFAULT_PG_STRATEGIES, PublicGoodsParams
from societies.scenarios.public_goods.rule import (
    PG_STRATEGIES,
    ConditionalCooperator,
    Cooperator,
    FreeRider,
    PublicGoodsStrategies,
    ReputationConditional,
)
from societies.scenarios.public_goods.scenario import ALL, CONTRIBUTE, HALF, NONE, PublicGoodsScenario

if TYPE_CHECKING:
    from societies.config import SocietyRunConfig
    from societies.rules import Rule


__all__ = [
    "ALL",
    "CONTRIBUTE",
    "ConditionalCooperator",
    "Cooperator",
    "DEFAULT_PG_STRATEGIES",
    "FreeRider",
    "HALF",
    "NONE",
    "PG_STRATEGIES",
    "PublicGoodsParams",
    "PublicGoodsScenario",
    "PublicGoodsStrategies",
    "ReputationConditional",
    "build_public_goods",
]


@register_scenario("public_goods", params=PublicGoodsParams)
def build_public_goods(
    cfg: SocietyRunConfig, params: PublicGoodsParams, personas: list[Persona] | None
) -> tuple[SocietyEnv, Rule]:
    """Public goods: strategies cycled over the agents, kept in the personas' traits and the metrics' labels."""
    p, n = params, cfg.agents
    strategies = [p.strategies[i % len(p.strategies)] for i in range(n)]
    if personas is not None:
        personas = [q.model_copy(update={"traits": {**q.traits, "strategy": s}}) for q, s in zip(personas, strategies)]
    sc = PublicGoodsScenario(
        n,
        group_size=p.group_size,
        r=p.r,
        endowment=p.endowment,
        reputation=p.reputation,
        recency=p.recency,
        personas=personas,
        labels=strategies,
    )
    if personas is None and cfg.activity < 1:
        sc.activity = np.full(n, cfg.activity)
    return SocietyEnv(sc, cfg.rounds), PublicGoodsStrategies(strategies, bias=p.bias, start=p.start, spread=p.spread)
