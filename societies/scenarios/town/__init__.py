"""The small town: a day in the style of Generative Agents, and the news of a party passed on.

The scenario (`scenario.py`), its rule (`rule.py`) and its parameters (`params.py`); the build function
below registers it as `scenario=town` (`town.<key>=` sets its parameters).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from societies.env import SocietyEnv
from societies.personas import Persona
from societies.scenarios import register_scenario
from societies.scenarios.town.params import TownParams
from societies.scenarios.town.rule import TownRoutine
from societies.scenarios.town.scenario import TownScenario
from societies.scenarios.town.world import PLACES, RoutineStep, TownTraits, town_personas

if TYPE_CHECKING:
    from societies.config import SocietyRunConfig
    from societies.rules import Rule


__all__ = [
    "PLACES",
    "RoutineStep",
    "TownParams",
    "TownRoutine",
    "TownScenario",
    "TownTraits",
    "build_town",
    "town_personas",
]


@register_scenario("town", params=TownParams)
def build_town(cfg: SocietyRunConfig, params: TownParams, personas: list[Persona] | None) -> tuple[SocietyEnv, Rule]:
    """The small town: its own cast of personas (occupation, home, routine, acquaintances in the traits)."""
    t = params
    sc = TownScenario(
        town_personas(cfg.agents, cfg.seed, activity=cfg.activity),
        start_hour=t.start_hour,
        end_hour=t.end_hour,
        step_minutes=t.step_minutes,
        news=t.news,
        news_keywords=t.news_keywords,
        informed=t.informed,
        party_location=t.party_location,
        party_hour=t.party_hour,
        party_hours=t.party_hours,
        max_conversation_turns=t.max_conversation_turns,
        max_say_chars=t.max_say_chars,
    )
    return SocietyEnv(sc, cfg.rounds), TownRoutine(t.talk_cooldown)
