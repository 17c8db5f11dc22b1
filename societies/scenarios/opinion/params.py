"""The opinion scenario's parameters (`opinion.<key>=`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agents.config import Strict


class OpinionParams(Strict):
    model: Literal["deffuant", "degroot"] = "deffuant"
    threshold: float = Field(default=0.2, gt=0, le=1)  # Deffuant's bounded-confidence threshold
    mu: float = Field(default=0.5, gt=0, le=1)  # how far a compromise moves
