"""`python -m agents.train` keys, defined once (the YAML in agents/policy/conf only points here)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agents.config import AgentConfig

LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


class LoraSettings(BaseModel):
    """The adapter: rank, scale, and which layers get one (the embedding matrix is always frozen)."""

    model_config = ConfigDict(extra="forbid")

    r: int = Field(default=16, ge=1)
    alpha: int = Field(default=32, gt=0)
    dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    # adapt only the top `layers` decoder layers (0 = all): backward then stops there, which is most of the saving on CPU
    layers: int = Field(default=8, ge=0)
    targets: list[str] = Field(default_factory=lambda: list(LORA_TARGETS))


class PolicyTrainConfig(BaseModel):
    """Supervised fine-tuning of the embedded model on trajectory stores (behaviour cloning / AgentEvol rounds)."""

    model_config = ConfigDict(extra="forbid")

    data: list[str]  # run folders (or .jsonl stores) from agents.run / agents.collect
    eval_data: list[str] | None = None  # held-out stores; None = hold out `eval_fraction` of the episodes
    eval_fraction: float = Field(default=0.1, ge=0.0, lt=1.0)
    out: str
    model: str = "gemma3-270m"
    success_only: bool = True  # keep only successful episodes (behaviour cloning / rejection sampling)
    min_reward: float | None = None  # or keep episodes whose final reward clears this bar
    max_steps: int | None = Field(default=None, ge=1)  # and took at most this many steps (no credit for detours)
    max_episodes: int | None = Field(default=None, ge=1)  # per store, after filtering: bounds the CPU budget
    max_len: int = Field(default=2048, ge=64)  # longest training sequence in tokens
    lora: LoraSettings = LoraSettings()
    init_adapter: str | None = None  # continue from a peft adapter folder (a previous round's best/)
    lr: float = Field(default=3e-4, gt=0)
    epochs: int = Field(default=1, ge=1)
    accumulate: int = Field(default=4, ge=1)  # sequences per optimiser update
    max_updates: int | None = Field(default=None, ge=1)
    # train what the brain does: at each ranked step (the candidates recorded in the step, the label the SFT data uses:
    # the teacher's where relabeled) every candidate is scored as LocalBrain ranks it, the mean log-prob of its own
    # tokens after the step prompt, and a softmax cross-entropy over the candidates pushes the label up. Added to the
    # token-level SFT loss with this weight (0 = SFT only). The candidates ride along the episode's one forward as
    # short branches (agents/policy/choices.py), so the prompt is never recomputed
    listwise_weight: float = Field(default=0.0, ge=0.0)
    eval_choices: bool = True  # held-out choice accuracy (the brain's greedy pick is the label) at every evaluation
    eval_every: int = Field(default=20, ge=1)  # updates between held-out evaluations and checkpoints
    # pick best/ by playing: mean final reward of `select_episodes` goals of each `select_envs` env (the same seeds
    # at every evaluation), the checkpoint served by llama.cpp as the brain serves it; 0 = by held-out action loss
    select_episodes: int = Field(default=0, ge=0)
    select_envs: list[dict[str, Any]] = Field(
        default_factory=lambda: [{"name": "webshop", "id": "agentsim/WebShop-v0", "kwargs": {"split": "eval"}}]
    )
    select_agent: AgentConfig = Field(default_factory=AgentConfig)  # e.g. select_agent.perception.turn_style=compact
    select_seed: int = Field(default=0, ge=0)
    select_temperature: float = Field(default=0.7, ge=0.0)  # the main job's
    threads: int | None = None  # torch threads (default: all cores)
    # where to train: cpu, cuda, cuda:N, or auto (cuda where torch sees a GPU, else cpu); the same recipe either way.
    # A GPU that is not there exits 2 with the reason
    device: str = "cpu"
    # skip the frozen layers below the first adapted one after a sequence's first pass: their output (the hidden
    # states entering that layer) depends on the token ids only, so it is computed once and reused every epoch and
    # evaluation (exact: tests compare logits and gradients with the full forward). false = the full forward always.
    # Kept in memory up to frozen_cache_memory_mb, then in ${out}/frozen_cache up to frozen_cache_disk_mb (deleted at
    # the end of the run), then recomputed. ~2.5 KB a token for Gemma 3 270M
    frozen_cache: bool = True
    frozen_cache_memory_mb: int = Field(default=2048, ge=0)
    frozen_cache_disk_mb: int = Field(default=8192, ge=0)
    seed: int = 0
    gguf: bool = True  # convert the best adapter to a llama.cpp GGUF adapter at the end (out/adapter.gguf)
    progress: bool = True
    log_level: str = "INFO"
