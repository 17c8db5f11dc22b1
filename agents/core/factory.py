"""Build envs, brains, memories and agents from the typed configs in `agents.config` (plain dicts are validated first)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import gymnasium as gym
from pydantic import BaseModel

import envs  # noqa: F401  (registers the project's envs)
import envs.registry
from agents.brains.base import Brain, writes_text
from agents.brains.model_files import adapter_for_env, warn_turn_style_mismatch
from agents.brains.registry import brain_spec, make_brain
from agents.config import (
    AgentConfig,
    BrainConfig,
    ConfigError,
    EnvConfig,
    MemoryConfig,
    resolve_perception,
    validate_config,
)
from agents.core.agent import Agent
from agents.memory.base import Memory
from agents.perception import perception_from_config
from envs.plugins import closest

__all__ = ["ConfigError", "build_agent", "build_brain", "build_memory", "config_hash", "make_env"]


def make_env(env_cfg: EnvConfig | dict[str, Any], max_episode_steps: int | None = None) -> gym.Env:
    """`gymnasium.make` the configured env, registering `entry_point` first if given; errors name the fix.

    The step limit is Gymnasium's `TimeLimit` (`max_episode_steps`, default `env.step_limit`: env.max_steps,
    else the env's registered limit): one limit, enforced by the wrapper and reported as `truncated=True`."""
    cfg: EnvConfig = validate_config(EnvConfig, env_cfg)
    env_id, entry = envs.registry.env_id(cfg.id), cfg.entry_point  # a short name (webshop, a plugin's) works too
    if entry and env_id not in gym.registry:
        gym.register(id=env_id, entry_point=entry)
    if env_id not in gym.registry:
        known = ", ".join(f"{k} ({v[0]})" for k, v in envs.ENVS.items())
        raise ConfigError(f"unknown env id {env_id!r}; project envs: {known}; or set env.entry_point=module:Class")
    try:
        return gym.make(env_id, max_episode_steps=max_episode_steps or cfg.step_limit, **dict(cfg.kwargs))
    except (ModuleNotFoundError, ImportError) as e:
        raise ConfigError(f"env {env_id!r} could not be imported ({e}); is it installed?") from e
    except TypeError as e:
        raise ConfigError(f"bad env.kwargs for {env_id!r}: {e}") from e


def build_brain(brain_cfg: BrainConfig | dict[str, Any], env: str | None = None, turn_style: str = "full") -> Brain:
    """The configured brain; an unknown option names the brain and the option.

    `env`: the short name of the env the brain will act in, and `turn_style` the prompt turns its agent builds
    (`agent.perception.turn_style`), so `adapter=auto` picks the adapter measured best for them."""
    cfg: BrainConfig = brain_cfg if isinstance(brain_cfg, BrainConfig) else BrainConfig.model_validate(dict(brain_cfg))
    name, options = cfg.name, cfg.options
    check_options(brain_spec(name).options_model(), options, f"brain={name}")
    if "adapter" in options:
        options["adapter"] = adapter_for_env(options["adapter"], env, turn_style)
        warn_turn_style_mismatch(options["adapter"], turn_style)
    try:
        return make_brain(name, **options)
    except TypeError as e:
        raise ConfigError(f"bad option for brain={name}: {e}") from e


def check_options(model: type[BaseModel], options: dict[str, Any], what: str) -> None:
    """ConfigError naming each key `model` does not have, the valid keys and the closest one."""
    extra = model.model_config.get("extra")
    unknown = [] if extra == "allow" else [k for k in options if k not in model.model_fields]
    if unknown:
        valid = sorted(model.model_fields)
        raise ConfigError(
            f"unknown option {unknown[0]!r} for {what}{closest(unknown[0], valid)}; valid options: {', '.join(valid)}"
        )


def build_memory(memory_cfg: MemoryConfig | dict[str, Any] | None, brain: Brain | None) -> Memory | None:
    """The configured memory, or None for `memory=none`."""
    try:
        mcfg = (
            memory_cfg if isinstance(memory_cfg, MemoryConfig) else MemoryConfig.model_validate(dict(memory_cfg or {}))
        )
    except ValueError as e:
        raise ConfigError(f"bad memory config: {e}") from None
    if not mcfg.enabled:
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


def build_agent(
    brain: Brain, agent_cfg: AgentConfig | dict[str, Any] | None, memory: Memory | None, seed: int | None = None
) -> Agent:
    """An agent around `brain` and `memory` with the configured mode, format and prompt budget. Perception keys
    still at auto (a config not resolved by RunConfig, which knows the brain and env) are full turns in 2,048."""
    acfg: AgentConfig = resolve_perception(validate_config(AgentConfig, agent_cfg or {}), None, None)
    cfg = acfg.model_dump()
    perception = perception_from_config(cfg.pop("perception"), brain.count_tokens)
    try:
        return Agent(brain, perception, memory, seed=seed, **cfg)
    except TypeError as e:
        raise ConfigError(f"bad agent option: {e}") from e


def config_hash(cfg: dict[str, Any]) -> str:
    """Hash of what determines behaviour (not where output goes or how fast it runs)."""
    keep = {
        k: v
        for k, v in cfg.items()
        if k not in ("out", "resume", "concurrency", "progress", "log_level", "episodes", "hydra")
    }
    return hashlib.sha256(json.dumps(keep, sort_keys=True, default=str).encode()).hexdigest()[:16]
