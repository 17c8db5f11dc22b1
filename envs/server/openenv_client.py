"""OpenEnv's own `EnvClient` for any env this server serves (needs `pip install openenv-core`; docs/adapters.md).

OpenEnv ships one small client class per env, telling its `EnvClient` how to send an action and read a
result; this is that class for every text env here, since they share one action and observation shape
(`envs/server/openenv_routes.py`). Only the three hooks every OpenEnv release has are defined, so the class
works with the synchronous client of openenv-core 0.2.0 and the asynchronous one of later releases.

    with TextEnvClient(base_url=openenv_url("http://127.0.0.1:8000", "textcraft")) as env:
        result = env.reset(seed=0)
        result = env.step("get 1 oak log")
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from envs.server.openenv_routes import PREFIX


def openenv_url(server_url: str, env: str) -> str:
    """The OpenEnv base URL of `env` on an env server (`http://host:port`)."""
    return f"{server_url.rstrip('/')}{PREFIX}/{env}"


class TextEnvClient(EnvClient[str, dict[str, Any], dict[str, Any]]):
    """An OpenEnv client of one of this server's text envs: actions are strings, observations dicts
    (`text`, `instruction`, `available_actions`, `action_templates`, `error`, `terminated`, `truncated`,
    `episode_id`, `step_count`, `info`), the state a dict (`episode_id`, `step_count`, `env`, ...)."""

    def _step_payload(self, action: str | dict[str, Any]) -> dict[str, Any]:
        return dict(action) if isinstance(action, dict) else {"action": action}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[dict[str, Any]]:
        return StepResult(
            observation=payload.get("observation", {}), reward=payload.get("reward"), done=payload.get("done", False)
        )

    def _parse_state(self, payload: dict[str, Any]) -> dict[str, Any]:
        return payload
