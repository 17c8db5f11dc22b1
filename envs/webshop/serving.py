"""What a WebShop client may set through the env server (bounded; no data paths)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from envs.server.protocol import MAX_SEED
from envs.serving import ClientKwargs, PathKwarg, ResetOptions, ServerEntry


class WebShopKwargs(ClientKwargs):
    """What a client may set when creating a WebShop session (bounded; no data paths)."""

    num_products: int = Field(10_000, ge=10, description="synthetic catalog size, at most --max-num-products")
    catalog_seed: int = Field(0, ge=0, le=2**31 - 1)
    split: Literal["train", "eval", "test"] = "train"
    observation_mode: Literal["text", "text_rich", "html"] = "text"
    max_steps: int | None = Field(None, ge=1, le=1000, description="deprecated alias of max_episode_steps")

    @field_validator("num_products")
    @classmethod
    def _bounded(cls, v: int, info: ValidationInfo) -> int:
        cap = (info.context or {}).get("max_num_products")
        if cap is not None and v > cap:
            raise ValueError(f"at most {cap:,} products may be requested from this server (--max-num-products)")
        return v


class WebShopOptions(ResetOptions):
    """WebShop reset options a client may pass (a goal by index)."""

    goal_index: int | None = Field(None, ge=0, le=MAX_SEED)


SERVER = ServerEntry(
    WebShopKwargs,
    WebShopOptions,
    paths=(
        PathKwarg("catalog_path", "file"),
        PathKwarg("attributes_path", "file"),
        PathKwarg("human_goals_path", "file"),
    ),
)
