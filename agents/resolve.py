"""A run's config resolved once, before anything is built: `resolve(RunConfig) -> ResolvedRun`.

`agents.config` validates what the user wrote and knows none of the parts. What the config means once the
parts are known is fixed here, in one pass, and nowhere else: the brain's registered option defaults (so
`brain=local` from the command line and `{"name": "local"}` from code are one config), `brain.adapter=auto`
(the shipped policy `agents.catalog` lists for the env and the prompt turns), the perception keys left at auto,
the step limit (the env's registration, else 30), the lanes, whether memory is carried, and the run's hash (the
fields not marked `NOT_IDENTITY`). The factories (`agents.core.factory`) take what this returns and change none
of it: a `ResolvedRun` and its configs are frozen.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ValidationError

from agents.brains.registry import brain_spec, in_process
from agents.catalog import adapter_for_env, perception_for, temperature_for, warn_turn_style_mismatch
from agents.config import (
    AUTO,
    DEFAULT_BUDGET_TOKENS,
    DEFAULT_STEP_LIMIT,
    DEFAULT_TURN_STYLE,
    AgentConfig,
    BrainConfig,
    CollectConfig,
    ConfigError,
    EnvConfig,
    RunConfig,
    describe_errors,
    identity,
    validate_config,
)
from agents.memory.registry import carries_state
from envs.plugins import closest
from envs.registry import step_limit

__all__ = [
    "ResolvedBrain",
    "ResolvedRun",
    "resolve",
    "resolve_agent",
    "resolve_brain",
    "resolve_env",
    "resolve_perception",
    "run_hash",
]


@dataclass(frozen=True)
class ResolvedBrain:
    """A brain to build: its registered name and every constructor option, `adapter` a concrete one."""

    name: str
    options: Mapping[str, Any]  # read-only
    in_process: bool  # the model runs in this process (lanes, KV slots)

    @property
    def adapter(self) -> str | None:
        return self.options.get("adapter")


@dataclass(frozen=True)
class ResolvedRun:
    """One run's config with nothing left to decide: what the engine, its workers and the factories read."""

    config: RunConfig  # frozen; brain defaults filled, perception keys and env.max_steps set (`adapter` as asked)
    brain: ResolvedBrain
    env_name: str  # the env's short name (its gymnasium id when it has none): episode ids are `<env>-<seed>`
    steps_limit: int  # agent steps per episode: max_steps, else env.max_steps (the registration's, else 30)
    lanes: int  # episodes in flight
    carries_memory: bool  # memory state passes from episode to episode (out/memory_state.json)
    run_hash: str  # what the episodes are: the config less its NOT_IDENTITY fields

    @property
    def agent(self) -> AgentConfig:
        return self.config.agent

    @property
    def env(self) -> EnvConfig:
        return self.config.env


def check_options(model: type[BaseModel], options: Mapping[str, Any], what: str) -> None:
    """ConfigError naming each key `model` does not have, the valid keys and the closest one."""
    extra = model.model_config.get("extra")
    unknown = [] if extra == "allow" else [k for k in options if k not in model.model_fields]
    if unknown:
        valid = sorted(model.model_fields)
        raise ConfigError(
            f"unknown option {unknown[0]!r} for {what}{closest(unknown[0], valid)}; valid options: {', '.join(valid)}"
        )


def brain_with_defaults(cfg: BrainConfig) -> BrainConfig:
    """`cfg` with its brain's registered option defaults under the options it sets; unknown options refused."""
    spec = brain_spec(cfg.name)  # an unknown or broken brain is named here, before anything is built
    model = spec.options_model()
    check_options(model, cfg.options, f"brain={cfg.name}")
    options = {**spec.option_defaults(), **cfg.options}
    try:  # a bad value (`brain.temperature=hot`) is named here too, not by the constructor mid-run
        model.model_validate(options)
    except ValidationError as e:
        raise ConfigError(f"brain={cfg.name}: " + describe_errors(e, model)) from None
    return BrainConfig(name=cfg.name, **options)


def resolve_brain(cfg: BrainConfig, env: str | None = None, turn_style: str = DEFAULT_TURN_STYLE) -> ResolvedBrain:
    """The brain to build for an agent in `env` (its short name; None: not known, e.g. a society's shared brain)
    reading `turn_style` turns: defaults filled, `adapter=auto` the adapter `agents.catalog` lists for them and
    `temperature=auto` the one that adapter was measured best at."""
    full = brain_with_defaults(cfg)
    options = full.options
    if "adapter" in options:
        options["adapter"] = adapter_for_env(options["adapter"], env, turn_style)
        warn_turn_style_mismatch(options["adapter"], turn_style)
    if "temperature" in options:
        options["temperature"] = temperature_for(options["temperature"], options.get("adapter"))
    return ResolvedBrain(full.name, MappingProxyType(options), in_process(full.name))


def resolve_perception(agent: AgentConfig, brain: BrainConfig | None, env: str | None) -> AgentConfig:
    """`agent` with its auto perception keys set to the prompt the brain's policy was measured with
    (`agents.catalog.perception_for`): with the embedded brain's `adapter=auto`, the env's default policy's; with a
    shipped adapter, the turns it was trained on; else full turns in 2,048 tokens. An explicit value always wins.
    `brain` carries its defaults (`brain_with_defaults`)."""
    p = agent.perception
    if p.turn_style != AUTO and p.budget_tokens is not None and p.field_separator is not None:
        return agent
    adapter = brain.options.get("adapter") if brain is not None and in_process(brain.name) else None
    preferred = perception_for(adapter, env, p.turn_style)
    turn_style = preferred.get("turn_style", DEFAULT_TURN_STYLE) if p.turn_style == AUTO else p.turn_style
    budget = p.budget_tokens or preferred.get("budget_tokens", DEFAULT_BUDGET_TOKENS)
    separator = p.field_separator
    if separator is None:
        separator = preferred.get("field_separator", "") if turn_style == preferred.get("turn_style") else ""
    update = {"turn_style": turn_style, "budget_tokens": budget, "field_separator": separator}
    return agent.model_copy(update={"perception": p.model_copy(update=update)})


def resolve_agent(
    agent: AgentConfig | dict[str, Any] | None = None, brain: BrainConfig | None = None, env: str | None = None
) -> AgentConfig:
    """An agent config for `build_agent` outside a run (a search, a society, a benchmark): validated, and its auto
    perception keys resolved against `brain` and `env` when given (else full turns in 2,048 tokens)."""
    cfg: AgentConfig = validate_config(AgentConfig, agent or {})
    return resolve_perception(cfg, brain_with_defaults(brain) if brain is not None else None, env)


def resolve_env(env: EnvConfig) -> EnvConfig:
    """`env` with `max_steps` set: as given, else the env's registered limit (its one place), else 30."""
    if env.max_steps is not None:
        return env
    return env.model_copy(update={"max_steps": step_limit(env.id) or DEFAULT_STEP_LIMIT})


def lanes(cfg: RunConfig) -> int:
    """Episodes in flight. `agents.collect`'s auto (concurrency=0): one per in-process model (`brain=local`: the
    model is compute-bound on the cores, and episodes in flight evict each other's cached prompt or, in KV slots,
    lengthen every decode's attention; bench/unified_kv_cost.py), else 8 (a remote model or a cheap brain, where
    lanes overlap waits)."""
    if cfg.concurrency or not isinstance(cfg, CollectConfig):
        return cfg.concurrency
    if in_process(cfg.brain.name):
        return cfg.workers if cfg.executor == "ray" else 1
    return 8


def run_hash(cfg: BaseModel) -> str:
    """The hash of what a run's episodes are: its resolved config less the fields marked `NOT_IDENTITY`."""
    return hashlib.sha256(json.dumps(identity(cfg), sort_keys=True, default=str).encode()).hexdigest()[:16]


def resolve(cfg: RunConfig) -> ResolvedRun:
    """Everything a run's config leaves to the parts, decided once (a resolved config resolves to itself)."""
    brain = brain_with_defaults(cfg.brain)
    env = resolve_env(cfg.env)
    env_name = env.name or env.id
    agent = resolve_perception(cfg.agent, brain, env_name)
    config = cfg.model_copy(update={"brain": brain, "env": env, "agent": agent})
    carries = cfg.memory.enabled and (
        cfg.carry_memory if cfg.carry_memory is not None else carries_state(cfg.memory.name)
    )
    return ResolvedRun(
        config=config,
        brain=resolve_brain(brain, env_name, agent.perception.turn_style),
        env_name=env_name,
        steps_limit=cfg.max_steps or env.max_steps or DEFAULT_STEP_LIMIT,
        lanes=lanes(cfg),
        carries_memory=carries,
        run_hash=run_hash(config),
    )
