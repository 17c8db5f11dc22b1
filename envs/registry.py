"""Envs from third-party packages, through the entry-point group `agentsim.envs`.

A package declares its env class under a short name:

    [project.entry-points."agentsim.envs"]
    counter = "my_pkg.env:CounterEnv"

`load_env_plugins()` registers it with Gymnasium as `agentsim/<name>-v0` (the entry point's
value is the Gymnasium entry point, so the package is imported only when the env is made) and
adds it to `envs.ENVS`, so the short name works wherever a project env's does (`env_id("counter")`,
the env server's catalog, `RemoteEnv(env="counter")`). A plugin cannot take a project env's name.
"""

from __future__ import annotations

import logging
from importlib.metadata import entry_points

import gymnasium

import envs

log = logging.getLogger(__name__)
_warned: set[str] = set()  # each conflict is reported once per process


def _warn_once(key: str, msg: str, *args: object) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning(msg, *args)


ENV_GROUP = "agentsim.envs"  # envs sit below agents: this module does not import `agents.plugins`


def plugin_env_id(name: str) -> str:
    """The Gymnasium id a plugin env with short name `name` is registered under."""
    return f"{envs.NAMESPACE}/{name}-v0"


def load_env_plugins() -> dict[str, tuple[str, str]]:
    """Register every installed plugin env with Gymnasium and `envs.ENVS`; return the ones added (idempotent)."""
    added: dict[str, tuple[str, str]] = {}
    for ep in entry_points(group=ENV_GROUP):
        gym_id = plugin_env_id(ep.name)
        known = envs.ENVS.get(ep.name) or envs.PROXIES.get(ep.name)
        if known is not None:
            if known != (gym_id, ep.value):
                _warn_once(
                    f"{ep.name}={ep.value}",
                    "env plugin %r (%s) ignored: the name is taken by %s",
                    ep.name,
                    ep.value,
                    known[1],
                )
            continue
        if gym_id in gymnasium.registry:
            _warn_once(
                f"{ep.name}={ep.value}",
                "env plugin %r (%s) ignored: gymnasium id %s is already registered",
                ep.name,
                ep.value,
                gym_id,
            )
            continue
        gymnasium.register(id=gym_id, entry_point=ep.value)
        envs.ENVS[ep.name] = (gym_id, ep.value)
        added[ep.name] = (gym_id, ep.value)
    return added


def env_names() -> list[str]:
    """Every short env name: the project's, then installed plugins' (loading them first)."""
    load_env_plugins()
    return list(envs.ENVS)


def env_id(name_or_id: str) -> str:
    """The Gymnasium id for a short name (`webshop`, a plugin's `counter`); anything else is returned as given."""
    if name_or_id not in envs.ENVS:
        load_env_plugins()
    entry = envs.ENVS.get(name_or_id)
    return entry[0] if entry is not None else name_or_id
