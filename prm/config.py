"""Training configuration, validated once at the boundary (Hydra hands us a plain dict)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from prm.data import TextConfig
from prm.targets.td import TDMode


class TDConfig(BaseModel):
    """How TD labels are computed (`labels=td`): the paper's TD/GAE or SARSA(lambda), with gamma and lambda."""

    model_config = ConfigDict(extra="forbid")

    mode: TDMode = "paper"  # paper = AgentPRM's TD/GAE; sarsa = standard SARSA(lambda) bootstrapping
    gamma: float = Field(default=1.0, ge=0.0, le=1.0)
    lam: float = Field(default=0.95, ge=0.0, le=1.0)


class TrainConfig(BaseModel):
    """`python -m prm.train` keys: data, labels, model, optimisation, output (defaults defined here once)."""

    model_config = ConfigDict(extra="forbid")

    data: list[str]  # run folders made by agents.run / agents.collect (or .jsonl files)
    eval_data: list[str] | None = None  # held-out runs; None = hold out `eval_fraction` of the tasks in `data`
    eval_fraction: float = Field(default=0.1, ge=0.0, lt=1.0)
    out: str
    backbone: str = "minilm"  # `minilm` = the packaged MiniLM; else any Hugging Face path or name
    text: TextConfig = TextConfig()
    labels: Literal["td", "mc", "return"] = "td"  # td = the paper; mc = mc_labels.jsonl; return = own MC return
    td: TDConfig = TDConfig()
    outcome: Literal["reward", "success"] = "reward"
    # rewards are divided by it: payoffs above 1 (a society game's) onto the promise scale
    reward_scale: float = Field(default=1.0, gt=0.0)
    truncated_as_failure: bool = True  # a step-limit cut scores as failure (WebShop does): no bootstrap
    beta: float = Field(default=1.0, ge=0.0)  # weight of the progress loss L_A
    rank_weight: float = Field(default=0.0, ge=0.0)  # weight of the sibling ranking loss L_R (0 = the paper's loss)
    rank_margin: float = Field(default=0.01, ge=0.0)  # sibling pairs whose labels differ by less are not ranked
    rank_scale: float = Field(default=20.0, gt=0.0)  # logistic sharpness on the promise scale (0..1)
    # at_branch: a trajectory that left a path it shares a prefix with (a branch, a sibling, an ending branch) is
    # trained only at the step where it left, in one window, on its own discounted return from there (lambda = 1):
    # the comparison beam search makes, at the cost of one window instead of the whole continuation
    branch_training: Literal["whole", "at_branch"] = "whole"
    # which sibling steps the ranking loss compares: any two that share a prefix, or only branch steps (both labelled
    # by the policy that continued them, not by the noise of independent behaviour-policy paths after a shared state)
    rank_among: Literal["siblings", "branches"] = "siblings"
    batch_by: Literal["trajectory", "task"] = "trajectory"  # task: a micro-batch holds one task's trajectories
    max_task_batch: int = Field(default=24, ge=1)  # batch_by=task: a task with more trajectories is split
    epochs: int = Field(default=3, ge=1)
    batch_size: int = Field(default=4, ge=1)  # trajectories per micro-batch (all their windows go together)
    grad_accum: int = Field(default=2, ge=1)
    lr: float = Field(default=5e-5, gt=0)
    head_lr: float = Field(default=1e-3, gt=0)
    weight_decay: float = Field(default=0.01, ge=0)
    warmup_ratio: float = Field(default=0.1, ge=0, le=1)
    max_grad_norm: float = Field(default=1.0, gt=0)
    freeze_embeddings: bool = True
    freeze_layers: int = Field(default=0, ge=0)
    dropout: float | None = 0.0
    seed: int = 0
    threads: int | None = None
    resume: bool = True  # continue from ${out}/checkpoint when it exists
    eval_batch_size: int = Field(default=16, ge=1)
    max_train_trajectories: int | None = None
    progress: bool = True
    plot: bool = True
    log_level: str = "INFO"

    @field_validator("data", "eval_data", mode="before")
    @classmethod
    def _one_path_is_a_list(cls, v: object) -> object:
        """`data=runs/ws` means `data=[runs/ws]`: a single path is accepted wherever a list is."""
        return [v] if isinstance(v, (str, bytes)) else v
