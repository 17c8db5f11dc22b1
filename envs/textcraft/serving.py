"""What a TextCraft client may set through the env server: the goal pool and the distractors."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from envs.server.protocol import MAX_SEED
from envs.serving import ClientKwargs, ResetOptions, ServerEntry


class TextCraftKwargs(ClientKwargs):
    """What a client may set when creating a TextCraft session: the goal pool and the distractors."""

    split: Literal["train", "eval", "all"] = "train"
    min_depth: int = Field(1, ge=1, le=4)
    max_depth: int = Field(4, ge=1, le=4)
    max_distractors: int = Field(10, ge=0, le=50)


class TextCraftOptions(ResetOptions):
    """TextCraft reset options: a goal by index (AgentGym's data_idx) or by item name."""

    goal_index: int | None = Field(None, ge=0, le=MAX_SEED)
    goal: str | None = Field(None, max_length=200)


SERVER = ServerEntry(TextCraftKwargs, TextCraftOptions)
