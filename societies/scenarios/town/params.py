"""The town scenario's parameters (`town.<key>=`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from agents.config import Strict


class TownParams(Strict):
    """The small-town day (`scenario.py` here) and its rule (`rule.py`, `TownRoutine`)."""

    start_hour: int = Field(default=7, ge=0, le=23)  # the day's first round
    end_hour: int = Field(default=23, ge=1, le=24)  # the day ends (the scenario terminates) at this hour
    step_minutes: Literal[15, 20, 30, 60] = 60  # clock time per round
    news: str = "{host} is hosting a Valentine's Day party at the {place} at {time}."  # {host} {place} {time} filled
    news_keywords: list[str] = Field(default_factory=lambda: ["party"])  # an utterance with one of these informs
    informed: int = Field(default=1, ge=0)  # agents 0..k-1 know the news at the start (agent 0 is the host)
    party_location: str = "cafe"
    party_hour: float = Field(default=17.0, ge=0, lt=24)
    party_hours: float = Field(default=2.0, gt=0)  # how long the party lasts (attendance is counted over it)
    max_conversation_turns: int = Field(default=3, ge=1)  # rounds a conversation can last
    max_say_chars: int = Field(default=200, ge=10, le=900)  # longest say[...]
    talk_cooldown: int = Field(default=3, ge=0)  # rule agents: rounds before talking with the same person again

    @model_validator(mode="after")
    def _day(self) -> TownParams:
        if self.end_hour <= self.start_hour:
            raise ValueError(f"end_hour ({self.end_hour}) must be after start_hour ({self.start_hour})")
        if not self.start_hour <= self.party_hour < self.end_hour:
            raise ValueError(
                f"party_hour ({self.party_hour:g}) must fall within the day ({self.start_hour}-{self.end_hour})"
            )
        return self
