"""What a FaultTree client may set through the env server (no data paths)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from envs.server.protocol import MAX_SEED
from envs.serving import ClientKwargs, PathKwarg, ResetOptions, ServerEntry


class ExpertKwargs(BaseModel):
    """FaultTree's scripted-expert thresholds (envs.faulttree.expert.ExpertConfig) as a validated body."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    confidence: float = Field(0.95, gt=0, le=1)
    min_gain: float = Field(0.01, ge=0, le=100)
    recheck_discount: float = Field(0.5, ge=0, le=1)


class FaultTreeKwargs(ClientKwargs):
    """What a client may set when creating a FaultTree session (no data paths)."""

    domain: str | None = None
    vagueness: float = Field(0.3, ge=0, le=1)
    error_rate: float = Field(0.1, ge=0, le=1)
    rollback_distance: int = Field(8, ge=0, le=1000)
    rollback_prob: float = Field(0.8, ge=0, le=1)
    max_turns: int = Field(40, ge=1, le=500)
    split: Literal["train", "dev", "test"] = "test"
    n_entries: int = Field(3130, ge=10, le=10_000_000)
    base_seed: int = Field(0, ge=0, le=2**31 - 1)
    max_listed_checks: int = Field(12, ge=0, le=200)
    max_listed_diagnoses: int = Field(3, ge=0, le=50)
    show_tree: StrictBool = True
    expert: ExpertKwargs | None = None

    @field_validator("domain")
    @classmethod
    def _known_domain(cls, v: str | None) -> str | None:
        from envs.faulttree.dataset import DOMAIN_NAMES

        if v is not None and v not in DOMAIN_NAMES:
            raise ValueError(f"unknown domain {v!r}; choose from {list(DOMAIN_NAMES)}")
        return v

    def to_env(self) -> dict[str, Any]:
        """The constructor kwargs (the expert settings as the env's own config object)."""
        out = super().to_env()
        if self.expert is not None:
            from envs.faulttree.expert import ExpertConfig

            out["expert"] = ExpertConfig(**self.expert.model_dump())
        return out


class FaultTreeOptions(ResetOptions):
    """FaultTree reset options a client may pass (a dialogue entry by index)."""

    entry_index: int | None = Field(None, ge=0, le=MAX_SEED)


SERVER = ServerEntry(
    FaultTreeKwargs, FaultTreeOptions, paths=(PathKwarg("dataset_path", "dir", must_hold=("trees.jsonl",)),)
)
