"""Gymnasium text environments. Importing this package registers them under `agentsim/`.

Each env module is imported lazily by Gymnasium (entry points are strings), so registering
costs nothing and heavy resources (catalogs, indexes) load only when an env is made.

Step limits live here, not in the envs: each env is registered with `max_episode_steps`, so
`gymnasium.make` wraps it in `TimeLimit` (override with `gymnasium.make(id, max_episode_steps=N)`;
`-1` for no limit). Branch through the wrapper with `envs.contract.snapshot_env`/`restore_env`.
"""

from __future__ import annotations

import gymnasium

NAMESPACE = "agentsim"

# short name (as used in `env=<name>`) -> (gymnasium id, entry point)
ENVS: dict[str, tuple[str, str]] = {
    "webshop": (f"{NAMESPACE}/WebShop-v0", "envs.webshop.env:WebShopEnv"),
    "faulttree": (f"{NAMESPACE}/FaultTree-v0", "envs.faulttree.env:FaultTreeEnv"),
    "coding": (f"{NAMESPACE}/Coding-v0", "envs.coding.env:CodingEnv"),
    "textcraft": (f"{NAMESPACE}/TextCraft-v0", "envs.textcraft.env:TextCraftEnv"),
    "babyai": (f"{NAMESPACE}/BabyAI-v0", "envs.babyai.env:BabyAIEnv"),
}

# short name -> default `max_episode_steps` (every step counts, bad actions included)
MAX_EPISODE_STEPS: dict[str, int] = {
    "webshop": 20,
    "faulttree": 80,  # twice FaultTree's default `max_turns` (40), so invalid-action loops also stop
    "coding": 50,  # tool calls (bash / view / create / str_replace) before submit
    "textcraft": 60,  # the recipe planner's longest goal (netherite block) takes 53
    "babyai": 256,  # primitive moves; BabyAIBot's longest plans on AgentGym's 40 levels take ~210
}

# Proxies, not envs of their own: registered for gymnasium.make but never served by the env server.
PROXIES: dict[str, tuple[str, str]] = {
    "remote": (f"{NAMESPACE}/Remote-v0", "envs.server.client:RemoteEnv"),
}


def register_all() -> None:
    """Register the project's envs (with their step limits) and proxies; idempotent."""
    for name, (env_id, entry_point) in (*ENVS.items(), *PROXIES.items()):
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point, max_episode_steps=MAX_EPISODE_STEPS.get(name))
    from envs.registry import load_env_plugins  # installed plugins' envs (entry-point group agentsim.envs)

    load_env_plugins()


register_all()
