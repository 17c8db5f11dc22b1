"""One episode from a plain config dict: the path `agents.run`, the asyncio collector and Ray actors share.

A worker builds its brain once and then, per episode, a fresh agent (memory, perception) and a
fresh env: local via `make_env`, or a `RemoteEnv` when `remote.url` is set (the env's id and
kwargs are sent to the server, so the record is the same either way).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import gymnasium as gym

from agents.brains.base import Brain
from agents.core.factory import ConfigError, build_agent, build_brain, build_memory, config_hash, make_env
from agents.core.loop import arun_episode
from agents.trajectories.schema import EpisodeRecord


MEMORY_STATE = "memory_state.json"


def episode_id(env_name: str, seed: int) -> str:
    return f"{env_name}-{seed}"


def env_name_of(cfg: dict[str, Any]) -> str:
    env_cfg = dict(cfg["env"])
    return str(env_cfg.get("name") or env_cfg["id"])


def is_fatal(error: BaseException) -> bool:
    """Errors no other episode can escape (env server down, bad config): stop the run instead of burning seeds."""
    from envs.server.client import EnvServerUnavailable

    return isinstance(error, (EnvServerUnavailable, ConfigError))


class EpisodeWorker:
    def __init__(self, cfg: dict[str, Any], brain: Brain | None = None, chash: str | None = None) -> None:
        self.cfg = cfg
        self.env_cfg = dict(cfg["env"])
        self.env_name = env_name_of(cfg)
        self.brain = brain if brain is not None else build_brain(dict(cfg["brain"]))
        self.mem_cfg = dict(cfg.get("memory") or {"name": "none"})
        self.agent_cfg = dict(cfg.get("agent") or {})
        self.memory_budget = int(self.mem_cfg.get("budget_tokens", 512))
        self.max_steps = int(cfg.get("max_steps") or self.env_cfg.get("max_steps", 30))
        self.max_invalid = int(cfg.get("max_invalid", 5))
        self.keep_messages = bool(cfg.get("keep_messages", True))
        self.success_threshold = float(self.env_cfg.get("success_threshold", 1.0))
        self.remote = dict(cfg.get("remote") or {})
        self.config_hash = chash or config_hash(cfg)
        # Memory carried from episode to episode (reflective lessons, facts): each episode's agent
        # starts from the state the last finished episode left, persisted beside the trajectories.
        self.carry = bool(self.mem_cfg.get("carry", True)) and self.mem_cfg.get("name") not in (None, "", "none")
        self.memory_state_path = Path(cfg["out"]) / MEMORY_STATE if cfg.get("out") else None
        self._memory_state: dict[str, Any] | None = None
        if self.carry and self.memory_state_path is not None and self.memory_state_path.exists():
            self._memory_state = json.loads(self.memory_state_path.read_text())

    # -- envs -------------------------------------------------------------------------------
    def make_env(self) -> gym.Env:
        if not self.remote.get("url"):
            return make_env(self.env_cfg)
        from envs.server.client import RemoteEnv

        entry = self.env_cfg.get("entry_point")
        if entry:
            raise ConfigError(f"env.entry_point={entry} cannot be sent to an env server; start the server with "
                              f"--env {self.env_name}={self.env_cfg.get('id')}@{entry} instead")
        return RemoteEnv(url=str(self.remote["url"]), env=str(self.env_cfg["id"]),
                         kwargs=dict(self.env_cfg.get("kwargs") or {}), token=self.remote.get("token"),
                         timeout_s=float(self.remote.get("timeout_s", 60.0)))

    @staticmethod
    async def _close(env: gym.Env) -> None:
        aclose = getattr(env, "aclose", None)
        if aclose is not None:
            await aclose()
        else:
            env.close()

    def check(self) -> None:
        """Fail fast, before any progress bar: the brain answers, the env builds (or the server serves it)."""
        check = getattr(self.brain, "check", None)
        if check is not None:
            check()
        env = self.make_env()
        try:
            servable = getattr(env, "servable", None)
            if servable is not None:
                served = servable()
                if self.env_cfg["id"] not in served.values() and self.env_cfg["id"] not in served:
                    raise ConfigError(f"env server {self.remote['url']} does not serve {self.env_cfg['id']!r}; it serves: "
                                      + ", ".join(f"{n} ({i})" for n, i in sorted(served.items())))
        finally:
            env.close()

    # -- episodes ---------------------------------------------------------------------------
    async def run(self, seed: int) -> EpisodeRecord:
        fork = getattr(self.brain, "fork", None)
        brain = fork(seed) if fork is not None else self.brain
        memory = build_memory(self.mem_cfg, brain)
        if memory is not None and self.carry and self._memory_state is not None:
            memory.load_state(self._memory_state)
        agent = build_agent(brain, self.agent_cfg, memory, self.memory_budget, seed=seed)
        env = self.make_env()
        try:
            record = await arun_episode(env, agent, seed=seed, max_steps=self.max_steps, max_invalid=self.max_invalid,
                                      env_name=self.env_name, env_kwargs=dict(self.env_cfg.get("kwargs") or {}),
                                      episode_id=episode_id(self.env_name, seed), config_hash=self.config_hash,
                                      keep_messages=self.keep_messages, success_threshold=self.success_threshold)
        finally:
            await self._close(env)
        if memory is not None and self.carry:
            self._keep_memory(memory.save_state())
        return record

    def _keep_memory(self, state: dict[str, Any]) -> None:
        self._memory_state = state
        if self.memory_state_path is not None:
            tmp = self.memory_state_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(state))
            os.replace(tmp, self.memory_state_path)  # atomic: a crash leaves the old state or the new one

