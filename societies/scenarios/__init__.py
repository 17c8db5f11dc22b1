"""Society scenarios, each declared where it is defined with its parameters model and its build function:

    @register_scenario("rumour", params=RumourParams)
    def build_rumour(cfg: SocietyRunConfig, params: RumourParams, personas: list[Persona] | None):
        return SocietyEnv(RumourScenario(...), cfg.rounds), RumourRule(params.p)

`scenario=rumour rumour.p=0.3` then works in `python -m societies.run`: the parameters are validated by
the model under the scenario's name (a key meant for another scenario is still checked). The project's
scenarios are the modules of `societies/scenarios/` that use the decorator; third-party packages name
their build function in the entry-point group `agentsim.scenarios`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from envs.plugins import PartSpec, Registry

SCENARIO_GROUP = "agentsim.scenarios"


@dataclass(frozen=True)
class ScenarioSpec(PartSpec):
    """A scenario's registration: `target(cfg, params, personas) -> (SocietyEnv, Rule)`; `options`: its params;
    `shardable`: its rule society runs over Ray actors by graph partition (`shards > 1`, societies/sharding.py)."""

    shardable: bool = False


def _default_spec(name: str, target: Any) -> ScenarioSpec:
    return ScenarioSpec(name=name, target=target)


SCENARIO_REGISTRY: Registry[ScenarioSpec] = Registry(
    "scenario", SCENARIO_GROUP, ("societies.scenarios",), "@register_scenario(", _default_spec
)

F = TypeVar("F", bound=Callable[..., Any])


def register_scenario(name: str, *, params: type[BaseModel] | None = None, shardable: bool = False) -> Callable[[F], F]:
    """Declare a scenario's build function under `name`, with its parameters model and facts."""

    def deco(build: F) -> F:
        SCENARIO_REGISTRY.add(ScenarioSpec(name=name, target=build, options=params, shardable=shardable))
        return build

    return deco


def scenario_names() -> list[str]:
    """Every scenario `scenario=` accepts: the project's, then installed plugins'."""
    return SCENARIO_REGISTRY.names()


def scenario_spec(name: str) -> ScenarioSpec:
    """The spec of scenario `name`; ValueError naming the valid ones (and the closest) if unknown."""
    return SCENARIO_REGISTRY.get(name)  # PluginError is a ValueError
