"""Gymnasium text environments. Importing this package registers them under `agentsim/`.

Each env declares itself at its class (`@register_env` in `envs/registry.py`): short name, Gymnasium
id, step limit and what an env-server client may set. Importing `envs` imports the modules that
declare an env and installed plugins' envs, and registers each with Gymnasium.

Step limits are Gymnasium's `TimeLimit` (`max_episode_steps` at registration, the one place an env's
limit is set; `gymnasium.make(id, max_episode_steps=N)` overrides it, `-1` for none). Branch through
the wrapper with `envs.contract.snapshot_env`/`restore_env`.
"""

from __future__ import annotations

from collections.abc import Mapping

from envs.registry import NAMESPACE, EnvTable, StepLimits, load_env_plugins

__all__ = ["ENVS", "MAX_EPISODE_STEPS", "NAMESPACE", "PROXIES", "register_all"]

# short name (as used in `env=<name>`) -> (gymnasium id, entry point): a view of the env registry
ENVS: Mapping[str, tuple[str, str]] = EnvTable()

# short name -> its registered `max_episode_steps` (every step counts, bad actions included): a view
MAX_EPISODE_STEPS: Mapping[str, int] = StepLimits()

# Proxies, not envs of their own: registered for gymnasium.make but never served by the env server.
PROXIES: dict[str, tuple[str, str]] = {
    "remote": (f"{NAMESPACE}/Remote-v0", "envs.server.client:RemoteEnv"),
}


def register_all() -> None:
    """Register the project's envs (with their step limits), proxies and installed plugins' envs; idempotent."""
    import envs.server  # noqa: F401  (registers the RemoteEnv proxy)

    load_env_plugins()


register_all()
