"""Build envs, brains, memories and agents from resolved, frozen configs (`agents.resolve`); none is changed here.

A factory takes the typed model and builds: what `auto` means, the brain's defaults, the step limit and the run's
identity were decided before, once (`agents.resolve.resolve`), so a factory never validates or resolves again.
A run's episodes take their parts from one call, `build_parts(ResolvedRun) -> Parts`: the brain, built once, and the
makers of each episode's fresh env and agent (with its memory), so a worker never comes back for a part.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import gymnasium as gym

import envs  # noqa: F401  (registers the project's envs)
import envs.registry
from agents.brains.base import Brain, writes_text
from agents.brains.registry import make_brain
from agents.config import AUTO, AgentConfig, ConfigError, EnvConfig, MemoryConfig
from agents.core.agent import Agent
from agents.memory.base import Memory
from agents.perception import perception_from_config
from agents.resolve import ResolvedBrain, ResolvedRun

__all__ = ["ConfigError", "Parts", "build_agent", "build_brain", "build_memory", "build_parts", "make_env"]

MemoryState = dict[str, Any]  # what a memory's `save_state` returns and `load_state` takes


@dataclass(frozen=True)
class Parts:
    """What a run's episodes are made of (`build_parts`): one brain, and the makers of each episode's fresh parts."""

    brain: Brain
    new_env: Callable[[], gym.Env]  # in this process, or a `RemoteEnv` session when `remote.url` is set
    # (the episode's brain, its seed, the memory state carried from the last episode or None) -> its agent, whose
    # fresh memory (`agent.memory`, None for memory=none) holds that state
    new_agent: Callable[[Brain, int | None, MemoryState | None], Agent]


def build_parts(run: ResolvedRun, brain: Brain | None = None) -> Parts:
    """A run's parts in one pass: its brain (or `brain`, already built) and the makers of its episodes' envs and
    agents, each bound to the run's resolved configs."""
    cfg = run.config
    new_env: Callable[[], gym.Env] = partial(make_env, cfg.env, run.steps_limit)
    if cfg.remote.url:
        new_env = partial(_remote_env, run, cfg.remote.url)
    return Parts(
        brain=brain if brain is not None else build_brain(run.brain),
        new_env=new_env,
        new_agent=partial(_agent_with_memory, cfg.agent, cfg.memory),
    )


def _remote_env(run: ResolvedRun, url: str) -> gym.Env:
    """A session of the run's env on the env server at `url` (its id and kwargs are sent, so the episode's record
    is the same as in process)."""
    from envs.server.client import RemoteEnv

    env, remote = run.config.env, run.config.remote
    if env.entry_point:
        raise ConfigError(
            f"env.entry_point={env.entry_point} cannot be sent to an env server; start the server "
            f"with --env {run.env_name}={env.id}@{env.entry_point} instead"
        )
    return RemoteEnv(url=url, env=env.id, kwargs=dict(env.kwargs), token=remote.token, timeout_s=remote.timeout_s)


def _agent_with_memory(
    acfg: AgentConfig, mcfg: MemoryConfig, brain: Brain, seed: int | None, state: MemoryState | None
) -> Agent:
    """An episode's agent and its memory, built in one pass; `state` (a carried memory's) loaded into the memory.
    A state that does not fit raises what the memory's `load_state` raises (the caller knows where it came from)."""
    memory = build_memory(mcfg, brain)
    if memory is not None and state is not None:
        memory.load_state(state)
    return build_agent(brain, acfg, memory, seed=seed)


def make_env(cfg: EnvConfig, max_episode_steps: int | None = None) -> gym.Env:
    """`gymnasium.make` the configured env, registering `entry_point` first if given; errors name the fix.

    The step limit is Gymnasium's `TimeLimit` (`max_episode_steps`, default `env.max_steps` as resolved by
    `agents.resolve.resolve_env`, else the registration's): one limit, enforced by the wrapper, `truncated=True`."""
    env_id, entry = envs.registry.env_id(cfg.id), cfg.entry_point  # a short name (webshop, a plugin's) works too
    if entry and env_id not in gym.registry:
        gym.register(id=env_id, entry_point=entry)
    if env_id not in gym.registry:
        known = ", ".join(f"{k} ({v[0]})" for k, v in envs.ENVS.items())
        raise ConfigError(f"unknown env id {env_id!r}; project envs: {known}; or set env.entry_point=module:Class")
    try:
        return gym.make(env_id, max_episode_steps=max_episode_steps or cfg.max_steps, **dict(cfg.kwargs))
    except (ModuleNotFoundError, ImportError) as e:
        raise ConfigError(f"env {env_id!r} could not be imported ({e}); is it installed?") from e
    except TypeError as e:
        raise ConfigError(f"bad env.kwargs for {env_id!r}: {e}") from e


def build_brain(brain: ResolvedBrain) -> Brain:
    """The resolved brain (`agents.resolve.resolve_brain`); a constructor's refusal names the brain."""
    try:
        return make_brain(brain.name, **brain.options)
    except TypeError as e:
        raise ConfigError(f"bad option for brain={brain.name}: {e}") from e


def build_memory(mcfg: MemoryConfig | None, brain: Brain | None) -> Memory | None:
    """The configured memory, or None for `memory=none`."""
    if mcfg is None or not mcfg.enabled:
        return None
    name, cfg = mcfg.name, mcfg.options
    from agents.memory.registry import make_memory

    if brain is not None and not writes_text(brain):
        brain = (
            None  # e.g. an expert policy cannot summarise or reflect: memories fall back to their rule-based versions
        )
    try:
        return make_memory(name, brain=brain, **cfg)
    except TypeError as e:
        raise ConfigError(f"bad option for memory={name}: {e}") from e


def build_agent(brain: Brain, acfg: AgentConfig, memory: Memory | None, seed: int | None = None) -> Agent:
    """An agent around `brain` and `memory` with the configured mode, format and prompt budget; `acfg`'s perception
    keys are resolved (`agents.resolve.resolve_agent`, or a run's `resolve`)."""
    p = acfg.perception
    if AUTO in (p.turn_style, p.budget_tokens, p.field_separator) or None in (p.budget_tokens, p.field_separator):
        raise ValueError("build_agent takes a resolved agent config: resolve it with agents.resolve.resolve_agent")
    cfg = acfg.model_dump()
    perception = perception_from_config(cfg.pop("perception"), brain.count_tokens)
    try:
        return Agent(brain, perception, memory, seed=seed, **cfg)
    except TypeError as e:
        raise ConfigError(f"bad agent option: {e}") from e
