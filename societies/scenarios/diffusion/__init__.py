"""Information diffusion: an independent cascade on a social graph.

The scenario (`scenario.py`), its rule (`rule.py`) and its parameters (`params.py`); the build function
below registers it as `scenario=diffusion` (`diffusion.<key>=` sets its parameters).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from societies.env import SocietyEnv
from societies.graphs import build_graph
from societies.keyed import IC_STREAM, stream_key
from societies.personas import Persona
from societies.scenarios import register_scenario
from societies.scenarios.diffusion.params import DiffusionParams
from societies.scenarios.diffusion.rule import IndependentCascade
from societies.scenarios.diffusion.scenario import IGNORE, SHARE, DiffusionScenario

if TYPE_CHECKING:
    from societies.config import SocietyRunConfig
    from societies.rules import Rule


__all__ = [
    "DiffusionParams",
    "DiffusionScenario",
    "IGNORE",
    "IndependentCascade",
    "SHARE",
    "build_diffusion",
]


@register_scenario("diffusion", params=DiffusionParams, shardable=True)
def build_diffusion(
    cfg: SocietyRunConfig, d: DiffusionParams, personas: list[Persona] | None
) -> tuple[SocietyEnv, Rule]:
    """An independent cascade on the configured graph (Erdos-Renyi by default)."""
    graph = build_graph(cfg.graph, cfg.agents, cfg.seed, default="erdos_renyi")
    di = DiffusionScenario(
        graph,
        n_seeds=d.seeds,
        personas=personas if personas and len(personas) == graph.n else None,
        activity=cfg.activity,
    )
    ic_key = stream_key(cfg.seed, IC_STREAM) if cfg.keyed_randomness else None
    return SocietyEnv(di, cfg.rounds), IndependentCascade(d.p, key=ic_key)
