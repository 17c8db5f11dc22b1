"""The diffusion scenario's parameters (`diffusion.<key>=`)."""

from __future__ import annotations

from pydantic import Field

from agents.config import Strict


class DiffusionParams(Strict):
    p: float = Field(default=0.25, ge=0, le=1)  # independent-cascade transmission probability per edge
    seeds: int = Field(default=1, ge=1)  # agents that post at round 0
