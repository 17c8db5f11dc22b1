"""Build envs, brains, memories and agents from resolved, frozen configs (`agents.resolve`); none is changed here.

A factory takes the typed model and builds: what `auto` means, the brain's defaults, the step limit and the run's
identity were decided before, once (`agents.resolve.resolve`), so a factory never validates or resolves again.
"""

from __future__ import annotations

import gymnasium as gym

import envs  # noqa: F401  (registers the project's envs)
import envs.registry
from agents.brains.base import Brain, writes_text
from agents.brains.registry import make_brain
from agents.config import AUTO, AgentConfig, ConfigError, EnvConfig, MemoryConfig
from agents.core.agent import Agent
from agents.memory.base import Memory
from agents.perception import perception_from_config
from agents.resolve import ResolvedBrain

__all__ = ["ConfigError", "build_agent", "build_brain", "build_memory", "make_env"]


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
