"""The public-goods scenario's parameters (`public_goods.<key>=`)."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from agents.config import Strict
from societies.scenarios.public_goods.rule import PG_STRATEGIES

DEFAULT_PG_STRATEGIES = [
    "conditional", "reputation_conditional", "conditional", "reputation_conditional", "free_rider",
]  # fmt: skip


class PublicGoodsParams(Strict):
    """A linear public-goods game in groups (`scenario.py` here); defaults as Fehr & Gächter 2000."""

    group_size: int = Field(default=4, ge=2)  # G, members per group
    r: float = Field(default=1.6, gt=1)  # pot multiplier; 1 < r < G makes it a social dilemma
    endowment: float = Field(default=20.0, gt=0)  # tokens each member gets per round
    reputation: bool = False  # public image scores shown, and groups formed by them (assortative matching)
    recency: float = Field(default=0.5, gt=0, le=1)  # weight of the latest round in the image and remembered means
    strategies: list[str] = Field(default_factory=lambda: list(DEFAULT_PG_STRATEGIES))  # cycled over the agents
    bias: float = Field(default=0.9, ge=0, le=1)  # conditional cooperators give bias x what they saw (self-serving < 1)
    start: float = Field(default=0.6, ge=0, le=1)  # conditional cooperators' first-round share of the endowment
    spread: float = Field(default=0.2, ge=0, le=1)  # ... drawn uniformly from start +- spread

    @model_validator(mode="after")
    def _dilemma(self) -> PublicGoodsParams:
        if self.r >= self.group_size:
            raise ValueError(
                f"r must be below group_size for a social dilemma (r={self.r:g}, group_size={self.group_size})"
            )
        return self

    @field_validator("strategies")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        unknown = sorted(set(v) - set(PG_STRATEGIES))
        if unknown or not v:
            raise ValueError(f"unknown public goods strategies {unknown}; known: {', '.join(PG_STRATEGIES)}")
        return v
