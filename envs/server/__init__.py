"""One HTTP protocol for every registered env: `python -m envs.server`, and `RemoteEnv` to talk to it.

Modules, one job each: `config` (server options), `protocol` (pydantic bodies), `catalog`
(which envs may be served and how they are built), `sessions` (live envs: cap, idle eviction,
close), `app` (the FastAPI routes), `agentgym` (AgentGym-compatible WebShop routes), `guard`
(bearer token and body-size limit), `client` (`RemoteEnv`). Importing this package stays
cheap (no FastAPI); it registers `agentsim/Remote-v0` so `gymnasium.make` can build a RemoteEnv.
"""

from __future__ import annotations

import gymnasium

REMOTE_ID = "agentsim/Remote-v0"
REMOTE_ENTRY_POINT = "envs.server.client:RemoteEnv"

if REMOTE_ID not in gymnasium.registry:
    gymnasium.register(id=REMOTE_ID, entry_point=REMOTE_ENTRY_POINT)
