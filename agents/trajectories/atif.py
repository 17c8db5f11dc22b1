"""Episodes as Harbor's Agent Trajectory Interchange Format (ATIF, v1.6): one JSON document per episode.

The models below follow ATIF's public spec as Harbor's `harbor.models.trajectories` package (0.26) defines it:
`Trajectory` (schema_version, session_id, agent, steps, final_metrics, extra), `Step` (step_id from 1, source
system/user/agent, message, reasoning_content, tool_calls, observation, metrics, extra), `ToolCall`,
`Observation` / `ObservationResult` (source_call_id names a tool call of the same step) and `Metrics` (token
counts, prompt/completion token ids, logprobs). Harbor's package needs Python >= 3.12, so it is not imported
here; a test validates the export against it in its own venv (tests/test_atif.py). Every model forbids
unknown keys, as Harbor's do.

The mapping: the episode's first observation is a `user` step; each of our steps is an `agent` step: the raw
output as the message, the thought as reasoning, the parsed action as one tool call (the coding env's actions
as its tools with their arguments; another env's `verb[arg]` as that verb with `{"arg": ...}`, anything else as
`act` with `{"action": ...}`), the env's observation as that call's result, and the brain's token ids and
logprobs as metrics. Rewards, env errors and parse errors go to `extra`, which ATIF leaves to the producer.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents.trajectories.schema import EpisodeRecord, StepRecord

ATIF_VERSION: Literal["ATIF-v1.6"] = "ATIF-v1.6"
AGENT_NAME = "agentsim"


class _Atif(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AtifAgent(_Atif):
    name: str
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


class AtifToolCall(_Atif):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]


class AtifObservationResult(_Atif):
    source_call_id: str | None = None
    content: str | None = None


class AtifObservation(_Atif):
    results: list[AtifObservationResult]


class AtifMetrics(_Atif):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: dict[str, Any] | None = None


class AtifStep(_Atif):
    step_id: int = Field(ge=1)
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    message: str
    reasoning_content: str | None = None
    tool_calls: list[AtifToolCall] | None = None
    observation: AtifObservation | None = None
    metrics: AtifMetrics | None = None
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _agent_only(self) -> AtifStep:
        if self.source != "agent":
            for name in ("model_name", "reasoning_content", "tool_calls", "metrics"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name} is only allowed on agent steps, not on a {self.source} step")
        return self


class AtifFinalMetrics(_Atif):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None


class AtifTrajectory(_Atif):
    schema_version: Literal["ATIF-v1.6"] = ATIF_VERSION
    session_id: str
    agent: AtifAgent
    steps: list[AtifStep] = Field(min_length=1)
    notes: str | None = None
    final_metrics: AtifFinalMetrics | None = None
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> AtifTrajectory:
        for i, step in enumerate(self.steps, 1):
            if step.step_id != i:
                raise ValueError(f"steps[{i - 1}].step_id is {step.step_id}; step ids run 1, 2, ... in order")
            calls = {c.tool_call_id for c in step.tool_calls or []}
            for r in step.observation.results if step.observation else []:
                if r.source_call_id is not None and r.source_call_id not in calls:
                    raise ValueError(f"step {i}: result for {r.source_call_id!r}, which is not a tool call of the step")
        return self

    def to_json(self) -> str:
        """The document as ATIF writes it: unset (None) fields left out."""
        return self.model_dump_json(exclude_none=True, indent=2)


_VERB = re.compile(r"^([A-Za-z_][\w-]*)\[(.*)\]$", re.S)


def tool_call(env: str, action: str, call_id: str) -> AtifToolCall:
    """Our action string as an ATIF tool call (see the module doc)."""
    if env == "coding":
        from envs.coding.tools import ActionError, parse_action

        try:
            call = parse_action(action)
            return AtifToolCall(tool_call_id=call_id, function_name=call.tool, arguments=dict(call.args))
        except ActionError:
            pass
    m = _VERB.match(action.strip())
    if m is not None:
        return AtifToolCall(tool_call_id=call_id, function_name=m.group(1), arguments={"arg": m.group(2)})
    return AtifToolCall(tool_call_id=call_id, function_name="act", arguments={"action": action})


def _metrics(step: StepRecord) -> AtifMetrics | None:
    m = AtifMetrics(
        prompt_tokens=step.tokens_in or None,
        completion_tokens=step.tokens_out or None,
        prompt_token_ids=step.prompt_token_ids,
        completion_token_ids=step.output_token_ids,
        logprobs=step.output_logprobs,
    )
    return m if m.model_dump(exclude_none=True) else None


def _step_extra(step: StepRecord) -> dict[str, Any]:
    keep = {
        "reward": step.reward,
        "terminated": step.terminated,
        "truncated": step.truncated,
        "latency_s": step.latency_s,
        "env_error": step.env_error,
        "parse_error": step.parse_error,
        "prm_score": step.prm_score,
        "prm_progress": step.prm_progress,
        "grade": step.info.get("grade"),
    }
    return {k: v for k, v in keep.items() if v is not None}


def _agent_step(ep: EpisodeRecord, step: StepRecord, step_id: int) -> AtifStep:
    calls, results = None, []
    if step.action is not None:
        call = tool_call(ep.env, step.action, f"call_{step.index}")
        calls = [call]
        results.append(AtifObservationResult(source_call_id=call.tool_call_id, content=step.observation))
    else:  # the output did not parse: the feedback the agent saw answers no tool call
        results.append(AtifObservationResult(content=step.observation))
    return AtifStep(
        step_id=step_id,
        source="agent",
        model_name=ep.model or None,
        message=step.raw_output,
        reasoning_content=step.thought or None,
        tool_calls=calls,
        observation=AtifObservation(results=results),
        metrics=_metrics(step),
        extra=_step_extra(step) or None,
    )


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat()


def to_atif(ep: EpisodeRecord, agent_version: str = "0.1.0") -> AtifTrajectory:
    """One episode as an ATIF trajectory."""
    first = ep.initial_observation or ep.instruction or "(the episode began without an observation)"
    steps = [AtifStep(step_id=1, timestamp=_iso(ep.started_at), source="user", message=first)]
    steps += [_agent_step(ep, s, i) for i, s in enumerate(ep.steps, 2)]
    return AtifTrajectory(
        session_id=ep.episode_id,
        agent=AtifAgent(name=AGENT_NAME, version=agent_version, model_name=ep.model or None, extra={"brain": ep.brain}),
        steps=steps,
        final_metrics=AtifFinalMetrics(
            total_prompt_tokens=ep.stats.tokens_in,
            total_completion_tokens=ep.stats.tokens_out,
            total_steps=len(steps),
            extra={"reward": ep.outcome.reward, "success": ep.outcome.success, "wall_time_s": ep.stats.wall_time_s},
        ),
        extra={
            "env": ep.env,
            "env_id": ep.env_id,
            "env_kwargs": ep.env_kwargs,
            "seed": ep.seed,
            "instruction": ep.instruction,
            "outcome": ep.outcome.model_dump(),
            "config_hash": ep.config_hash,
            "started_at": _iso(ep.started_at),
            "finished_at": _iso(ep.finished_at),
            **({"meta": ep.meta} if ep.meta else {}),
        },
    )
