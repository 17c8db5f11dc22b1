"""The episode loop, sync and async, and bounded-concurrency runs of many episodes.

The loop is one state machine (`EpisodeRunner`) driven by two ten-line drivers, so the sync
and async paths cannot drift apart. Every step is recorded as a `StepRecord`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import gymnasium as gym

from agents.brains.base import EnvBoundBrain
from agents.core.agent import Agent, Decision
from agents.trajectories.schema import CandidateRecord, EpisodeRecord, EpisodeStats, Outcome, StepRecord
from envs.capabilities import AsyncEnv, steps_block
from envs.contract import hit_time_limit
from envs.util import to_jsonable

log = logging.getLogger(__name__)


def step_record(
    action: str | None, env_result: tuple | None, *, index: int, feedback: str | None = None, **fields: Any
) -> StepRecord:
    """One step as a record: the env's answer to `action`, or (`env_result` None) an output that did not parse."""
    if env_result is None:
        return StepRecord(index=index, **fields, action=None, parse_error=feedback, observation=feedback or "")
    obs, reward, terminated, truncated, info = env_result
    return StepRecord(
        index=index,
        **fields,
        action=action,
        env_error=info.get("error"),
        observation=obs,
        reward=float(reward),
        terminated=bool(terminated),
        truncated=bool(truncated),
        info=to_jsonable(info),
    )


def is_success(last_reward: float, last_info: Mapping[str, Any] | None, threshold: float | None) -> bool:
    """Whether an episode succeeded. A threshold given: the final reward reaches it. None (the default): the env's own
    word, `info["success"]` at the last step, where it gives one (BabyAI's reward shrinks with the steps taken, so a
    solved level scores below 1); else the final reward reaches 1."""
    if threshold is None and last_info is not None and "success" in last_info:
        return bool(last_info["success"])
    return last_reward >= (1.0 if threshold is None else threshold)


def episode_summary(
    steps: list[StepRecord],
    *,
    last_reward: float,
    terminated: bool,
    truncated: bool,
    truncation_reason: str | None,
    success_threshold: float | None,
    wall_time_s: float,
    last_info: Mapping[str, Any] | None = None,
) -> tuple[Outcome, EpisodeStats]:
    """The outcome and the counters of an episode, from its step records (one rule for every writer of records)."""
    outcome = Outcome(
        reward=last_reward,
        total_reward=sum(s.reward for s in steps),
        success=is_success(last_reward, last_info, success_threshold),
        terminated=terminated,
        truncated=truncated,
        truncation_reason=truncation_reason,
    )
    stats = EpisodeStats(
        steps=len(steps),
        env_steps=sum(1 for s in steps if s.action is not None),
        invalid_actions=sum(1 for s in steps if s.env_error),
        parse_failures=sum(1 for s in steps if s.parse_error),
        tokens_in=sum(s.tokens_in for s in steps),
        tokens_out=sum(s.tokens_out for s in steps),
        brain_time_s=sum(s.latency_s for s in steps),
        wall_time_s=wall_time_s,
    )
    return outcome, stats


def decision_fields(decision: Decision, keep_messages: bool, keep_token_ids: bool = True) -> dict[str, Any]:
    """A decision as StepRecord fields: what the brain produced, so every runner records steps alike."""
    out = decision.output
    candidates = None
    if out.candidates:
        candidates = [
            CandidateRecord(text=c.text, logprob=c.logprob, n_tokens=c.n_tokens, score=c.score) for c in out.candidates
        ]
    fields: dict[str, Any] = dict(
        messages=decision.percept.messages if keep_messages else None,
        raw_output=out.text,
        thought=decision.parsed.thought,
        tokens_in=out.tokens_in,
        tokens_out=out.tokens_out,
        latency_s=out.latency_s,
        logprobs=out.logprobs,
        candidates=candidates,
        memory_context=decision.percept.memory_context or None,
    )
    if keep_token_ids:  # token-in/token-out for RL trainers: no re-tokenizing
        fields.update(
            prompt_token_ids=out.prompt_token_ids,
            output_token_ids=out.output_token_ids,
            output_logprobs=out.output_logprobs,
        )
    return fields


class EpisodeRunner:
    """Holds one episode's state between the agent's decisions and the env's answers."""

    def __init__(
        self,
        env: gym.Env,
        agent: Agent,
        *,
        seed: int,
        max_steps: int = 30,
        max_invalid: int = 5,
        env_name: str = "",
        env_kwargs: dict[str, Any] | None = None,
        episode_id: str | None = None,
        config_hash: str = "",
        keep_messages: bool = True,
        keep_token_ids: bool = True,
        reset_options: dict[str, Any] | None = None,
        success_threshold: float | None = None,
    ) -> None:
        self.env, self.agent = env, agent
        self.seed, self.max_steps, self.max_invalid = seed, max_steps, max_invalid
        self.env_name = env_name or (env.spec.id if env.spec else type(env).__name__)
        self.env_kwargs = env_kwargs or {}
        self.episode_id = episode_id or f"{self.env_name}-{seed}"
        self.config_hash, self.keep_messages, self.keep_token_ids = config_hash, keep_messages, keep_token_ids
        self.reset_options = reset_options
        self.success_threshold = success_threshold
        self.steps: list[StepRecord] = []
        self.obs: str = ""
        self.info: dict[str, Any] = {}
        self.done = False
        self.terminated = self.truncated = False
        self.truncation_reason: str | None = None
        self.consecutive_invalid = 0
        self.last_reward = 0.0
        self.started_at = time.time()
        self._t0 = time.perf_counter()

    def begin(self, obs: str, info: dict[str, Any]) -> None:
        """Take the reset's observation and info and start the agent's episode."""
        self.obs, self.info = obs, info
        self.initial_observation = obs
        self.instruction = str(info.get("instruction", ""))
        self.agent.reset(self.instruction, seed=self.seed)

    def apply(self, decision: Decision, env_result: tuple | None) -> None:
        """Record one step. `env_result` is None when the output did not parse (the env was not stepped)."""
        parsed = decision.parsed
        common: dict[str, Any] = dict(
            index=len(self.steps), **decision_fields(decision, self.keep_messages, self.keep_token_ids)
        )
        if env_result is None:
            self.consecutive_invalid += 1
            feedback = parsed.error or "Your reply could not be parsed."
            self.agent.observe(None, self.obs, 0.0, self.info, feedback=feedback)
            self.steps.append(step_record(None, None, feedback=feedback, **common))
        else:
            obs, reward, terminated, truncated, info = env_result
            reward = float(reward)
            env_error = info.get("error")
            self.consecutive_invalid = self.consecutive_invalid + 1 if env_error else 0
            if reward != 0.0:
                self.last_reward = reward
            self.steps.append(step_record(parsed.action, env_result, **common))
            self.agent.observe(parsed.action, obs, reward, info, feedback=None)
            self.obs, self.info = obs, info
            if terminated or truncated:
                self.done = True
                self.terminated, self.truncated = bool(terminated), bool(truncated)
                if truncated and not terminated:
                    self.truncation_reason = "max_steps" if hit_time_limit(self.env) else "env"
                return
        if self.consecutive_invalid >= self.max_invalid:
            self._cut(
                f"invalid_outputs: {self.consecutive_invalid} invalid outputs in a row "
                f"(last: {self.steps[-1].parse_error or self.steps[-1].env_error})"
            )
        elif len(self.steps) >= self.max_steps:
            self._cut("max_steps")

    def _cut(self, reason: str) -> None:
        self.done, self.truncated, self.truncation_reason = True, True, reason
        if self.steps:
            self.steps[-1].truncated = True

    def fail(self, error: BaseException) -> None:
        """Cut the episode because the agent or env raised; the error is kept as the truncation reason."""
        self._cut(f"error: {type(error).__name__}: {error}")

    def record(self, brain_name: str, model: str) -> EpisodeRecord:
        """The finished episode as a trajectory record (also ends the agent's episode)."""
        outcome, stats = episode_summary(
            self.steps,
            last_reward=self.last_reward,
            terminated=self.terminated,
            truncated=self.truncated,
            truncation_reason=self.truncation_reason,
            success_threshold=self.success_threshold,
            wall_time_s=time.perf_counter() - self._t0,
            last_info=self.info,
        )
        self.agent.end(outcome.model_dump())
        return EpisodeRecord(
            episode_id=self.episode_id,
            env=self.env_name,
            env_id=self.env.spec.id if self.env.spec else "",
            env_kwargs=to_jsonable(self.env_kwargs),
            seed=self.seed,
            instruction=self.instruction,
            initial_observation=self.initial_observation,
            brain=brain_name,
            model=model,
            config_hash=self.config_hash,
            steps=self.steps,
            outcome=outcome,
            stats=stats,
            started_at=self.started_at,
            finished_at=time.time(),
        )


def _bind(agent: Agent, env: gym.Env) -> None:
    if isinstance(agent.brain, EnvBoundBrain):
        agent.brain.bind_env(env)


def run_episode(env: gym.Env, agent: Agent, *, seed: int = 0, **kwargs: Any) -> EpisodeRecord:
    """Run one episode to its end, synchronously, and return its record."""
    runner = EpisodeRunner(env, agent, seed=seed, **kwargs)
    _bind(agent, env)
    runner.begin(*env.reset(seed=seed, options=runner.reset_options))
    while not runner.done:
        decision = agent.decide(runner.obs, runner.info)
        runner.apply(decision, env.step(decision.parsed.action) if decision.parsed.ok else None)
    return runner.record(agent.brain.name, agent.brain.model)


async def arun_episode(env: gym.Env, agent: Agent, *, seed: int = 0, **kwargs: Any) -> EpisodeRecord:
    """Async loop; uses the env's `areset`/`astep` when it has them (e.g. a remote env)."""
    runner = EpisodeRunner(env, agent, seed=seed, **kwargs)
    _bind(agent, env)
    aenv = env if isinstance(env, AsyncEnv) else None
    threaded = aenv is None and steps_block(env)  # a sandboxed env's step waits on processes: off the loop
    if aenv:
        first = await aenv.areset(seed=seed, options=runner.reset_options)
    elif threaded:
        first = await asyncio.to_thread(env.reset, seed=seed, options=runner.reset_options)
    else:
        first = env.reset(seed=seed, options=runner.reset_options)
    runner.begin(*first)
    while not runner.done:
        decision = await agent.adecide(runner.obs, runner.info)
        result: tuple[Any, ...] | None = None
        if decision.parsed.ok:
            action = decision.parsed.action
            if aenv:
                result = await aenv.astep(action)
            elif threaded:
                result = await asyncio.to_thread(env.step, action)
            else:
                result = env.step(action)
        runner.apply(decision, result)
    return runner.record(agent.brain.name, agent.brain.model)


async def run_many(
    jobs: Iterable[Any],
    run_one: Callable[[Any], Awaitable[EpisodeRecord]],
    *,
    concurrency: int = 4,
    on_done: Callable[[EpisodeRecord], None] | None = None,
    on_error: Callable[[Any, BaseException], None] | None = None,
) -> list[EpisodeRecord]:
    """Run `run_one(job)` for every job with at most `concurrency` in flight; results in completion order.

    A job that raises is reported through `on_error` (and logged) without stopping the others.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    sem = asyncio.Semaphore(concurrency)
    results: list[EpisodeRecord] = []

    async def one(job: Any) -> None:
        async with sem:
            try:
                rec = await run_one(job)
            except Exception as e:  # one broken episode must not sink the run
                log.exception("episode %s failed", job)
                if on_error:
                    on_error(job, e)
                return
            results.append(rec)
            if on_done:
                on_done(rec)

    await asyncio.gather(*(one(j) for j in jobs))
    return results
