"""The versioned trajectory schema: what every collected episode looks like on disk.

One `EpisodeRecord` per JSONL line. Everything a trainer, a PRM or an analyst needs is here:
the prompt sent at each step, the raw model output, the parsed action, what the env answered,
tokens, latency, logprobs, the prompt's and the output's token ids (token-in/token-out for RL),
and room for per-step PRM scores. Fields added later are optional, so older files still load.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION: Final = "1.0"


class CandidateRecord(BaseModel):
    model_config = ConfigDict(ser_json_inf_nan="constants")

    text: str
    logprob: float
    n_tokens: int
    score: float


class StepRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")  # a NaN reward stays visible

    index: int
    messages: list[dict[str, Any]] | None = None  # the prompt as sent (None when not kept)
    raw_output: str
    thought: str | None = None
    action: str | None = None  # parsed action sent to the env; None if the output did not parse
    parse_error: str | None = None  # why the output could not be turned into an action
    env_error: str | None = None  # the env's `info["error"]` for an action it rejected
    observation: str  # what the agent saw after this step (env observation or parse feedback)
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = Field(default_factory=dict)
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    logprobs: list[float] | None = None
    # token-in/token-out (brain-reported; None when the brain cannot say or the run keeps no ids):
    # the exact ids the model was conditioned on and produced, so a trainer never re-tokenizes
    prompt_token_ids: list[int] | None = None
    output_token_ids: list[int] | None = None
    output_logprobs: list[float] | None = None  # one per output token
    candidates: list[CandidateRecord] | None = None
    memory_context: str | None = None  # what memory injected into this step's prompt
    prm_score: float | None = None  # PRM promise Q(s_t, a_t): predicted final outcome after this step
    prm_progress: float | None = None  # PRM progress Q_t - Q_{t-1} (0 at the first step): a dense reward


class Outcome(BaseModel):
    reward: float  # final (last non-zero or summed, per env) reward; WebShop: reward at buy
    total_reward: float
    success: bool
    terminated: bool
    truncated: bool
    truncation_reason: str | None = None  # "max_steps" | "invalid_outputs" | "env" | "error: ..."


class EpisodeStats(BaseModel):
    steps: int
    env_steps: int
    invalid_actions: int  # env rejected the action
    parse_failures: int  # output could not be parsed into an action
    tokens_in: int
    tokens_out: int
    brain_time_s: float
    wall_time_s: float


class EpisodeRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["1.0"] = SCHEMA_VERSION
    episode_id: str
    env: str  # short env name, e.g. "webshop"
    env_id: str  # gymnasium id
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    seed: int
    instruction: str = ""
    initial_observation: str = ""
    brain: str
    model: str = ""
    config_hash: str = ""
    steps: list[StepRecord]
    outcome: Outcome
    stats: EpisodeStats
    started_at: float
    finished_at: float
    meta: dict[str, Any] = Field(default_factory=dict)
