"""The cooperation scenario's parameters (`cooperation.<key>=`)."""

from __future__ import annotations

from pydantic import Field

from agents.config import Strict

DEFAULT_STRATEGIES = [
    "tit_for_tat", "always_cooperate", "always_defect", "grudger", "tit_for_two_tats", "pavlov", "random",
]  # fmt: skip


class CooperationParams(Strict):
    match_length: int = Field(default=50, ge=1)  # moves per pair
    strategies: list[str] = Field(default_factory=lambda: list(DEFAULT_STRATEGIES))  # cycled over the agents
