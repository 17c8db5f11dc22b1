"""Opinion dynamics: opinions in [0, 1], one neighbour met per round; Deffuant or DeGroot updates.

The scenario (`scenario.py`), its rule (`rule.py`) and its parameters (`params.py`); the build function
below registers it as `scenario=opinion` (`opinion.<key>=` sets its parameters).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from societies.env import SocietyEnv
from societies.graphs import build_graph
from societies.keyed import PAIRING_STREAM, stream_key
from societies.personas import Persona
from societies.scenarios import register_scenario
from societies.scenarios.opinion.params import OpinionParams
from societies.scenarios.opinion.rule import Deffuant, DeGroot, degroot_limit
from societies.scenarios.opinion.scenario import CHOICES, COMPROMISE, KEEP, STATE, TEMPLATE, OpinionScenario

if TYPE_CHECKING:
    from societies.config import SocietyRunConfig
    from societies.rules import Rule


__all__ = [
    "CHOICES",
    "COMPROMISE",
    "DeGroot",
    "Deffuant",
    "KEEP",
    "OpinionParams",
    "OpinionScenario",
    "STATE",
    "TEMPLATE",
    "build_opinion",
    "degroot_limit",
]


@register_scenario("opinion", params=OpinionParams, shardable=True)
def build_opinion(cfg: SocietyRunConfig, o: OpinionParams, personas: list[Persona] | None) -> tuple[SocietyEnv, Rule]:
    """Opinion dynamics on the configured graph (complete by default), Deffuant or DeGroot updates."""
    graph = build_graph(cfg.graph, cfg.agents, cfg.seed, default="complete")
    rule = Deffuant(o.threshold) if o.model == "deffuant" else DeGroot()
    op = OpinionScenario(
        graph,
        mu=o.mu,
        personas=personas if personas and len(personas) == graph.n else None,
        pairing_key=stream_key(cfg.seed, PAIRING_STREAM) if cfg.keyed_randomness else None,
    )
    if op.personas is None and cfg.activity < 1:
        op.activity = np.full(op.n, cfg.activity)
    return SocietyEnv(op, cfg.rounds), rule
