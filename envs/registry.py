"""The env registry: each env declares itself at its class, and is registered with Gymnasium from there.

    @register_env("counter", max_episode_steps=20, server=ServerEntry(CounterKwargs))
    class CounterEnv(gym.Env): ...

The spec carries what generic code needs to know about the env: its Gymnasium id (default
`agentsim/<name>-v0`), its step limit (Gymnasium's `TimeLimit`, `max_episode_steps`: the one place
an env's limit is set; `env.max_steps` on the command line overrides it for a run) and what a
client of the env server may set (`envs/serving.py`; None: nothing but the step limit).

The project's envs are found in `envs/*/` (any module using the decorator is imported when `envs`
is); a third-party package declares its env class in the entry-point group `agentsim.envs`:

    [project.entry-points."agentsim.envs"]
    counter = "my_pkg.env:CounterEnv"

`load_env_plugins()` imports it (its decorator, if any, gives the facts) and registers it like a
project env, so the short name works wherever a project env's does (`env_id("counter")`, the env
server's catalog, `RemoteEnv(env="counter")`). A plugin cannot take a project env's name.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, TypeVar

import gymnasium
from gymnasium.envs.registration import load_env_creator

from envs.plugins import PartSpec, PluginError, Registry
from envs.serving import ServerEntry

log = logging.getLogger(__name__)

NAMESPACE = "agentsim"
ENV_GROUP = "agentsim.envs"


@dataclass(frozen=True)
class EnvSpec(PartSpec):
    """An env's registration: Gymnasium id, step limit, and what a server client may set."""

    id: str = ""
    max_episode_steps: int | None = None
    server: ServerEntry | None = None

    @property
    def entry_point(self) -> str:
        """The Gymnasium entry point (`module:Class`)."""
        return self.target if isinstance(self.target, str) else self.where


def plugin_env_id(name: str) -> str:
    """The Gymnasium id an env with short name `name` gets unless it names one."""
    return f"{NAMESPACE}/{name}-v0"


class EnvRegistry(Registry[EnvSpec]):
    """The registry of envs; adding a spec also registers it with Gymnasium."""

    def add(self, spec: EnvSpec) -> EnvSpec:
        """Register the env under its short name and its Gymnasium id (an id another env holds is refused)."""
        if spec.name in self._specs and self._specs[spec.name].where != spec.where:
            return super().add(spec)  # warns; the first owner keeps the name
        if spec.name not in self._specs and spec.id in gymnasium.registry:
            self._warn_once(
                f"id:{spec.name}={spec.where}",
                "env %r (%s) ignored: gymnasium id %s is already registered",
                spec.name,
                spec.where,
                spec.id,
            )
            raise PluginError(f"env {spec.name!r}: gymnasium id {spec.id} is already registered")
        kept = super().add(spec)
        gymnasium.registry.pop(spec.id, None)  # a re-registration (module reloaded) replaces its own entry
        gymnasium.register(id=spec.id, entry_point=spec.entry_point, max_episode_steps=spec.max_episode_steps)
        return kept

    def remove(self, name: str) -> None:
        """Forget the env and its Gymnasium id."""
        spec = self._specs.get(name)
        if spec is not None:
            gymnasium.registry.pop(spec.id, None)
        super().remove(name)


def _default_spec(name: str, target: Any) -> EnvSpec:
    return EnvSpec(name=name, target=target, id=plugin_env_id(name))


ENV_REGISTRY = EnvRegistry("env", ENV_GROUP, ("envs",), "@register_env(", _default_spec)

E = TypeVar("E")


def register_env(
    name: str, *, id: str | None = None, max_episode_steps: int | None = None, server: ServerEntry | None = None
) -> Callable[[E], E]:
    """Declare a `gymnasium.Env` class under a short name, with its step limit and server entry."""

    def deco(cls: E) -> E:
        ENV_REGISTRY.add(
            EnvSpec(
                name=name,
                target=cls,
                id=id or plugin_env_id(name),
                max_episode_steps=max_episode_steps,
                server=server,
            )
        )
        return cls

    return deco


def load_env_plugins() -> dict[str, tuple[str, str]]:
    """Register every installed plugin env with Gymnasium; return the ones added (idempotent).

    A plugin that fails to import, or whose name or id is taken, is skipped with a warning."""
    ENV_REGISTRY.discover()
    added: dict[str, tuple[str, str]] = {}
    for ep in entry_points(group=ENV_GROUP):
        known = ENV_REGISTRY._specs.get(ep.name)
        if known is not None:
            if known.where != ep.value:
                ENV_REGISTRY._warn_once(
                    f"{ep.name}={ep.value}",
                    "env plugin %r (%s) ignored: the name is taken by %s",
                    ep.name,
                    ep.value,
                    known.where,
                )
            continue
        try:
            ENV_REGISTRY.refresh()
            spec = ENV_REGISTRY.get(ep.name)
        except PluginError as e:
            ENV_REGISTRY._warn_once(f"{ep.name}={ep.value}", "%s", e)
            continue
        added[ep.name] = (spec.id, spec.entry_point)
    return added


def env_spec(name: str) -> EnvSpec:
    """The spec of the env registered as `name`; PluginError listing the valid names if there is none."""
    return ENV_REGISTRY.get(name)


def env_names() -> list[str]:
    """Every short env name: the project's, then installed plugins' (loading them first)."""
    load_env_plugins()
    return ENV_REGISTRY.names()


def env_id(name_or_id: str) -> str:
    """The Gymnasium id for a short name (`webshop`, a plugin's `counter`); anything else is returned as given."""
    if name_or_id not in ENV_REGISTRY._specs:
        load_env_plugins()
    spec = ENV_REGISTRY._specs.get(name_or_id)
    return spec.id if spec is not None else name_or_id


def env_class(name_or_id: str, entry_point: str | None = None) -> Any:
    """What `gymnasium.make` would call for this env (its class, for the project's and plugins' envs), loaded but
    not called: a caller can ask the class about its kwargs (`envs.capabilities.HasTasks.tasks_of`) without
    building the env. `entry_point` (`module:Class`) wins over the registration; PluginError names what is wrong."""
    env = env_id(name_or_id)
    if not entry_point:
        try:
            target = gymnasium.spec(env).entry_point
        except gymnasium.error.Error:
            known = ", ".join(f"{s.name} ({s.id})" for s in ENV_REGISTRY._specs.values())
            raise PluginError(
                f"unknown env id {env!r}; project envs: {known}; or set env.entry_point=module:Class"
            ) from None
        if not isinstance(target, str):
            return target
        entry_point = target
    try:
        return load_env_creator(entry_point)
    except (ImportError, AttributeError, ValueError) as e:
        raise PluginError(f"env {env!r} could not be imported from {entry_point} ({e}); is it installed?") from e


def step_limit(name_or_id: str) -> int | None:
    """The step limit an env was registered with (`max_episode_steps`), or None (unknown id, or no limit)."""
    try:
        return gymnasium.spec(env_id(name_or_id)).max_episode_steps
    except gymnasium.error.Error:
        return None


class EnvTable(Mapping[str, tuple[str, str]]):
    """`envs.ENVS`: short name -> (Gymnasium id, entry point), read from the registry (a view)."""

    def __getitem__(self, name: str) -> tuple[str, str]:
        ENV_REGISTRY.discover()
        spec = ENV_REGISTRY._specs[name]
        return spec.id, spec.entry_point

    def __iter__(self) -> Iterator[str]:
        ENV_REGISTRY.discover()
        return iter(list(ENV_REGISTRY._specs))

    def __len__(self) -> int:
        ENV_REGISTRY.discover()
        return len(ENV_REGISTRY._specs)


class StepLimits(Mapping[str, int]):
    """`envs.MAX_EPISODE_STEPS`: short name -> the step limit it is registered with (a view)."""

    def _all(self) -> dict[str, int]:
        ENV_REGISTRY.discover()
        return {n: s.max_episode_steps for n, s in ENV_REGISTRY._specs.items() if s.max_episode_steps is not None}

    def __getitem__(self, name: str) -> int:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())
