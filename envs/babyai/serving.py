"""What a BabyAI client may set through the env server: one level by its gym id."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from envs.server.protocol import MAX_SEED
from envs.serving import ClientKwargs, ResetOptions, ServerEntry


class BabyAIKwargs(ClientKwargs):
    """What a client may set when creating a BabyAI session: one BabyAI level by its gym id."""

    split: Literal["train", "eval"] = "train"
    level: str | None = Field(None, max_length=100, pattern=r"^BabyAI-[A-Za-z0-9]+-v\d+$")


class BabyAIOptions(ResetOptions):
    """BabyAI reset options: AgentGym's data_idx (level data_idx % 40, seed data_idx // 40)."""

    data_idx: int | None = Field(None, ge=0, le=MAX_SEED)


SERVER = ServerEntry(BabyAIKwargs, BabyAIOptions)
