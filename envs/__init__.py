"""Gymnasium text environments. Importing this package registers them under `agentsim/`.

Each env module is imported lazily by Gymnasium (entry points are strings), so registering
costs nothing and heavy resources (catalogs, indexes) load only when an env is made.
"""

from __future__ import annotations

import gymnasium

NAMESPACE = "agentsim"

# short name (as used in `env=<name>`) -> (gymnasium id, entry point)
ENVS: dict[str, tuple[str, str]] = {
    "webshop": (f"{NAMESPACE}/WebShop-v0", "envs.webshop.env:WebShopEnv"),
    "faulttree": (f"{NAMESPACE}/FaultTree-v0", "envs.faulttree.env:FaultTreeEnv"),
}


# Proxies, not envs of their own: registered for gymnasium.make but never served by the env server.
PROXIES: dict[str, tuple[str, str]] = {
    "remote": (f"{NAMESPACE}/Remote-v0", "envs.server.client:RemoteEnv"),
}


def register_all() -> None:
    for env_id, entry_point in (*ENVS.values(), *PROXIES.values()):
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point)


register_all()
