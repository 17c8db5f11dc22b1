"""Agent personas: who each agent is, validated at the boundary (pydantic).

A persona gives an LLM agent its voice (name, bio in the instruction) and a rule agent its
parameters (`traits`: e.g. a bounded-confidence threshold or an IPD strategy), and sets how often
the agent is active (`activity`, the probability of being asked in a round: sparse activation).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

FIRST_NAMES = (
    "Ada", "Ben", "Chloe", "Dev", "Elif", "Femi", "Gus", "Hana", "Ivo", "Jia", "Kofi", "Lena", "Mo", "Nia",
    "Omar", "Pia", "Quinn", "Rui", "Sana", "Tomas", "Uma", "Vik", "Wen", "Xavi", "Yara", "Zeno",
)  # fmt: skip


class Persona(BaseModel):
    """One agent's identity and dispositions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    bio: str = ""
    activity: float = Field(default=1.0, ge=0.0, le=1.0)  # chance of being active in a round
    traits: dict[str, Any] = Field(default_factory=dict)  # rule parameters (threshold, strategy, ...)

    def describe(self) -> str:
        """The persona as the first sentence of the agent's instruction."""
        return f"You are {self.name}." + (f" {self.bio}" if self.bio else "")


def make_personas(
    n: int, seed: int = 0, activity: float = 1.0, traits: Sequence[dict[str, Any]] | None = None
) -> list[Persona]:
    """n personas with distinct names; `traits[i % len(traits)]` cycles over given trait sets."""
    rng = np.random.default_rng([seed, 0x9E])
    order = rng.permutation(len(FIRST_NAMES))
    out = []
    for i in range(n):
        name = f"{FIRST_NAMES[order[i % len(FIRST_NAMES)]]} {i}"
        out.append(Persona(name=name, activity=activity, traits=dict(traits[i % len(traits)]) if traits else {}))
    return out


def activity_array(personas: Sequence[Persona] | None, n: int, default: float = 1.0) -> np.ndarray:
    """Per-agent activity probabilities as one array (vectorised activation draws)."""
    if not personas:
        return np.full(n, default, dtype=np.float64)
    if len(personas) != n:
        raise ValueError(f"{len(personas)} personas for {n} agents")
    return np.array([p.activity for p in personas], dtype=np.float64)
