"""One episode from a resolved run (`agents.resolve`): the path `agents.run`, the asyncio collector and Ray actors share.

A worker takes its parts from the factory once (`build_parts`): the brain, and the makers of each episode's fresh
agent (memory, perception) and fresh env (local, or a `RemoteEnv` when `remote.url` is set: the env's id and kwargs
are sent to the server, so the record is the same either way).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym

from agents.brains.base import Brain, CheckableBrain, ForkableBrain
from agents.config import ConfigError
from agents.core.factory import build_parts
from agents.core.loop import arun_episode
from agents.resolve import ResolvedRun
from agents.trajectories.schema import EpisodeRecord
from envs.capabilities import AsyncClosable, HasTasks, ServesEnvs
from envs.util import atomic_write_text

MEMORY_STATE = "memory_state.json"


def episode_id(env_name: str, seed: int) -> str:
    """The id of the episode with this seed: `<env>-<seed>` (what resume matches on)."""
    return f"{env_name}-{seed}"


def is_fatal(error: BaseException) -> bool:
    """Errors no other episode can escape (env server down, bad config): stop the run instead of burning seeds."""
    from envs.server.client import EnvServerUnavailable

    return isinstance(error, (EnvServerUnavailable, ConfigError))


class EpisodeWorker:
    """Runs episodes of one resolved run: one brain, a fresh agent and env per episode, memory carried if asked."""

    def __init__(self, run: ResolvedRun, brain: Brain | None = None) -> None:
        self.run_cfg = run
        self.cfg = cfg = run.config
        self.env_name = run.env_name
        self.parts = build_parts(run, brain)
        self.brain = self.parts.brain
        adapter = getattr(self.brain, "adapter", None)
        self.adapter: str | None = Path(adapter).stem if adapter else None  # the LoRA file's name, e.g. agentsim-sft
        self.config_hash = run.run_hash
        # Memory carried from episode to episode (reflective lessons, facts): each episode's agent
        # starts from the state the last finished episode left, persisted beside the trajectories.
        self.carry = run.carries_memory
        self.memory_state_path = Path(cfg.out) / MEMORY_STATE
        self._memory_state: dict[str, Any] | None = None
        self.tasks: dict[int, str] = {}  # seed -> the task it played (envs with named tasks): a failed one too
        if self.carry and self.memory_state_path.exists():
            self._memory_state = self._read_memory_state()

    def _read_memory_state(self) -> dict[str, Any]:
        path = self.memory_state_path
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise ConfigError(
                f"{path} is corrupt ({e}); it holds the memory carried between episodes. Restore it, "
                "or delete it to start the memory afresh (finished episodes are kept)"
            ) from None
        if not isinstance(state, dict):
            raise ConfigError(
                f"{path} holds a {type(state).__name__}, not a memory state; delete it to start the memory afresh"
            )
        return state

    @staticmethod
    async def _close(env: gym.Env) -> None:
        if isinstance(env, AsyncClosable):
            await env.aclose()
        else:
            env.close()

    def check(self) -> None:
        """Fail fast, before any progress bar: the brain answers, the env builds (or the server serves it),
        the agent and memory build, and a carried memory state fits the memory."""
        if isinstance(self.brain, CheckableBrain):
            self.brain.check()
        env = self.parts.new_env()
        try:
            if isinstance(env, ServesEnvs):
                served = env.servable()
                if self.cfg.env.id not in served.values() and self.cfg.env.id not in served:
                    raise ConfigError(
                        f"env server {self.cfg.remote.url} does not serve {self.cfg.env.id!r}; it serves: "
                        + ", ".join(f"{n} ({i})" for n, i in sorted(served.items()))
                    )
        finally:
            env.close()
        try:
            self.parts.new_agent(self.brain, self.cfg.seed, self._memory_state)
        except ConfigError:
            raise
        except Exception as e:  # any shape mismatch of the carried state: the user's file, not our bug
            if self._memory_state is None:
                raise
            raise ConfigError(
                f"{self.memory_state_path} does not fit memory={self.cfg.memory.name} "
                f"({type(e).__name__}: {e}); delete it to start the memory afresh, "
                "or rerun with the memory it was made with"
            ) from None

    # -- episodes ---------------------------------------------------------------------------
    async def run(self, seed: int) -> EpisodeRecord:
        """Run the episode with this seed to its end and return its record."""
        brain = self.brain.fork(seed) if isinstance(self.brain, ForkableBrain) else self.brain
        agent = self.parts.new_agent(brain, seed, self._memory_state if self.carry else None)
        env = self.parts.new_env()
        if isinstance(env.unwrapped, HasTasks):
            self.tasks[seed] = env.unwrapped.task_for_seed(seed)
        cfg = self.cfg
        try:
            record = await arun_episode(
                env,
                agent,
                seed=seed,
                max_steps=self.run_cfg.steps_limit,
                max_invalid=cfg.max_invalid,
                env_name=self.env_name,
                env_kwargs=dict(cfg.env.kwargs),
                episode_id=episode_id(self.env_name, seed),
                config_hash=self.config_hash,
                keep_messages=cfg.keep_messages,
                keep_token_ids=cfg.keep_token_ids,
                success_threshold=cfg.env.success_threshold,
            )
        finally:
            await self._close(env)
        if self.adapter:  # which fine-tune acted: trajectories for RL must say what policy made them
            record.meta["adapter"] = self.adapter
        if agent.memory is not None and self.carry:
            self._keep_memory(agent.memory.save_state())
        return record

    def _keep_memory(self, state: dict[str, Any]) -> None:
        self._memory_state = state
        atomic_write_text(self.memory_state_path, json.dumps(state))  # a crash leaves the old state or the new one
