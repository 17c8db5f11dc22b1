"""Exports to the formats trainers read: AgentGym conversations, Parquet, Hugging Face datasets.

Parquet and `datasets` exports keep the full episode as a JSON column (`record`) next to
flat columns, so they round-trip losslessly back to `EpisodeRecord`s.

Token-in/token-out: where a step holds the brain's token ids (`prompt_token_ids`,
`output_token_ids`, `output_logprobs`), every export carries them: on the AgentGym gpt turn of
that step, as step-row columns, and inside `record`. A trainer takes them as they are instead
of re-tokenizing the text (which can split differently than the model did).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agents.trajectories.schema import EpisodeRecord, StepRecord

TOKEN_FIELDS = ("prompt_token_ids", "output_token_ids", "output_logprobs")


def token_fields(step: StepRecord) -> dict[str, Any]:
    """The step's token-in/token-out fields that are set (empty when the brain reported none)."""
    return {k: v for k in TOKEN_FIELDS if (v := getattr(step, k)) is not None}


# ---------------------------------------------------------------- AgentGym conversations


def to_agentgym(episode: EpisodeRecord) -> dict[str, Any]:
    """AgentGym's SFT format: alternating human/gpt turns; loss only on the model's turns.

    The first step's prompt (system + user) becomes the first human turn; each model output is a
    gpt turn (loss=True); each following observation (or parse feedback) is a human turn.
    A gpt turn also carries its step's token ids and logprobs when the step has them.
    """
    conv: list[dict[str, Any]] = []
    first = episode.steps[0].messages if episode.steps and episode.steps[0].messages else None
    if first:
        head = "\n\n".join(str(m.get("content") or "") for m in first if m.get("role") in ("system", "user"))
    else:
        head = "\n\n".join(x for x in (episode.instruction, episode.initial_observation) if x)
    conv.append({"from": "human", "loss": None, "value": head})
    for i, step in enumerate(episode.steps):
        conv.append({"from": "gpt", "loss": True, "value": step.raw_output, **token_fields(step)})
        if i < len(episode.steps) - 1:
            conv.append({"from": "human", "loss": None, "value": step.observation})
    return {
        "item_id": f"{episode.env}_{episode.seed}",
        "conversations": conv,
        "reward": episode.outcome.reward,
        "success": episode.outcome.success,
    }


def write_agentgym(episodes: Iterable[EpisodeRecord], path: str | Path) -> int:
    items = [to_agentgym(ep) for ep in episodes]
    Path(path).write_text(json.dumps(items, ensure_ascii=False, indent=1), encoding="utf-8")
    return len(items)


def read_agentgym(path: str | Path) -> list[dict[str, Any]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list) or not all(isinstance(x, dict) and "conversations" in x for x in data):
        raise ValueError(
            f"{path}: not an AgentGym conversations file (expected a JSON list of objects with 'conversations')"
        )
    return data


# ---------------------------------------------------------------- flat rows


def _episode_row(ep: EpisodeRecord) -> dict[str, Any]:
    return {
        "episode_id": ep.episode_id,
        "env": ep.env,
        "env_id": ep.env_id,
        "seed": ep.seed,
        "instruction": ep.instruction,
        "brain": ep.brain,
        "model": ep.model,
        "reward": ep.outcome.reward,
        "success": ep.outcome.success,
        "truncated": ep.outcome.truncated,
        "n_steps": ep.stats.steps,
        "tokens_in": ep.stats.tokens_in,
        "tokens_out": ep.stats.tokens_out,
        "conversations": json.dumps(to_agentgym(ep)["conversations"], ensure_ascii=False),
        "record": ep.model_dump_json(),
    }


def step_rows(episodes: Iterable[EpisodeRecord]) -> list[dict[str, Any]]:
    """One row per step: the shape PRM training and step-level RL read."""
    rows = []
    for ep in episodes:
        for s in ep.steps:
            rows.append(
                {
                    "episode_id": ep.episode_id,
                    "env": ep.env,
                    "seed": ep.seed,
                    "index": s.index,
                    "prompt": json.dumps(s.messages, ensure_ascii=False) if s.messages is not None else None,
                    "raw_output": s.raw_output,
                    "action": s.action,
                    "observation": s.observation,
                    "reward": s.reward,
                    "terminated": s.terminated,
                    "truncated": s.truncated,
                    "valid": s.parse_error is None and s.env_error is None,
                    "prm_score": s.prm_score,
                    "outcome_reward": ep.outcome.reward,
                    **{k: getattr(s, k) for k in TOKEN_FIELDS},
                }
            )
    return rows


def write_parquet(episodes: Iterable[EpisodeRecord], path: str | Path) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [_episode_row(ep) for ep in episodes]
    pq.write_table(pa.Table.from_pylist(rows), str(path))
    return len(rows)


def read_parquet(path: str | Path) -> list[EpisodeRecord]:
    import pyarrow.parquet as pq

    table = pq.read_table(str(path), columns=["record"])
    return [EpisodeRecord.model_validate(json.loads(r)) for r in table.column("record").to_pylist()]


def to_hf_dataset(episodes: Iterable[EpisodeRecord]):  # -> datasets.Dataset
    try:
        import datasets
    except ImportError as e:  # pragma: no cover - depends on install
        raise ImportError("Hugging Face export needs `datasets`: pip install 'agentsim[hf]'") from e
    return datasets.Dataset.from_list([_episode_row(ep) for ep in episodes])


def from_hf_dataset(ds) -> list[EpisodeRecord]:
    return [EpisodeRecord.model_validate(json.loads(r)) for r in ds["record"]]
