"""Build envs, brains, memories and agents from plain config dicts (what Hydra hands us)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import gymnasium as gym

import envs  # noqa: F401  (registers the project's envs)
from agents.brains.base import Brain
from agents.brains.registry import make_brain
from agents.core.agent import Agent
from agents.memory.base import Memory
from agents.perception import perception_from_config


class ConfigError(ValueError):
    """A user mistake in the configuration; the message says what is wrong and what is valid."""


def make_env(env_cfg: dict[str, Any]) -> gym.Env:
    env_id = env_cfg.get("id")
    if not env_id or env_id == "???":
        raise ConfigError("env.id is not set; e.g. env=webshop, or env=gym env.id=<registered gymnasium id>")
    entry = env_cfg.get("entry_point")
    if entry and env_id not in gym.registry:
        gym.register(id=env_id, entry_point=entry)
    if env_id not in gym.registry:
        known = ", ".join(f"{k} ({v[0]})" for k, v in envs.ENVS.items())
        raise ConfigError(f"unknown env id {env_id!r}; project envs: {known}; or set env.entry_point=module:Class")
    try:
        return gym.make(env_id, disable_env_checker=True, **dict(env_cfg.get("kwargs") or {}))
    except (ModuleNotFoundError, ImportError) as e:
        raise ConfigError(f"env {env_id!r} could not be imported ({e}); is it installed?") from e
    except TypeError as e:
        raise ConfigError(f"bad env.kwargs for {env_id!r}: {e}") from e


def build_brain(brain_cfg: dict[str, Any]) -> Brain:
    cfg = dict(brain_cfg)
    name = cfg.pop("name", "local")
    try:
        return make_brain(name, **cfg)
    except TypeError as e:
        raise ConfigError(f"bad option for brain={name}: {e}") from e


def build_memory(memory_cfg: dict[str, Any], brain: Brain | None) -> Memory | None:
    cfg = dict(memory_cfg or {})
    name = cfg.pop("name", "none")
    cfg.pop("budget_tokens", None)
    cfg.pop("carry", None)  # the worker's business: whether state passes from episode to episode
    if name in ("none", "", None):
        return None
    from agents.memory.registry import make_memory

    if brain is not None and brain.name == "scripted":
        brain = None  # an expert policy cannot summarise or reflect: memories fall back to their rule-based versions
    try:
        return make_memory(name, brain=brain, **cfg)
    except TypeError as e:
        raise ConfigError(f"bad option for memory={name}: {e}") from e


def build_agent(brain: Brain, agent_cfg: dict[str, Any], memory: Memory | None, memory_budget: int = 512,
                seed: int | None = None) -> Agent:
    cfg = dict(agent_cfg or {})
    perception = perception_from_config(cfg.pop("perception", None), brain.count_tokens)
    try:
        return Agent(brain, perception, memory, memory_budget_tokens=memory_budget, seed=seed, **cfg)
    except TypeError as e:
        raise ConfigError(f"bad agent option: {e}") from e


def config_hash(cfg: dict[str, Any]) -> str:
    """Hash of what determines behaviour (not where output goes or how fast it runs)."""
    keep = {k: v for k, v in cfg.items() if k not in ("out", "resume", "concurrency", "progress", "log_level", "episodes", "hydra")}
    return hashlib.sha256(json.dumps(keep, sort_keys=True, default=str).encode()).hexdigest()[:16]
