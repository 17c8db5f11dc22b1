"""OpenEnv's own `EnvClient` for any env this server serves (needs `pip install openenv-core`; docs/adapters.md).

OpenEnv ships one small client class per env, telling its `EnvClient` how to send an action and read a
result; this is that class for every text env here, since they share one action and observation shape
(`envs/server/openenv_routes.py`). Only the three hooks every OpenEnv release has are defined, so the class
works with the synchronous client of openenv-core 0.2.0 and the asynchronous one of later releases.

    with TextEnvClient(base_url=openenv_url("http://127.0.0.1:8000", "textcraft")) as env:
        result = env.reset(seed=0)
        result = env.step("get 1 oak log")

`OpenEnvTextEnv` turns that client back into a Gymnasium env (`gymnasium.make(OPENENV_GYM_ID,
base_url=...)`), so anything that drives Gymnasium, TRL's `environment_factory` adapter included
(`agents/policy/trl_env.py`), trains through OpenEnv's protocol unchanged.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from envs.contract import MAX_ACTION_CHARS
from envs.server.openenv_routes import PREFIX
from envs.spaces import FreeText

OPENENV_GYM_ID = "agentsim/OpenEnvText-v0"  # registered when this module is imported


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


class OpenEnvTextEnv(gym.Env):
    """A Gymnasium text env whose every reset and step goes through OpenEnv's client to an env server.

    The observation is the server env's text; `info` carries its instruction, available actions, action
    templates, error and the rest of its info, so the env contract's readers work unchanged. The step limit
    is the server env's own (its `TimeLimit` ends the episode as `truncated`)."""

    metadata = {"render_modes": []}

    def __init__(self, base_url: str, connect_timeout_s: float = 30.0, message_timeout_s: float = 120.0) -> None:
        self.base_url = base_url
        self.observation_space = FreeText(1 << 20)
        self.action_space = FreeText(MAX_ACTION_CHARS)
        client = TextEnvClient(
            base_url=base_url, connect_timeout_s=connect_timeout_s, message_timeout_s=message_timeout_s
        )
        self.client: Any = client.sync() if hasattr(client, "sync") else client  # openenv-core >= 0.2.1 is async
        self.client.connect()

    @staticmethod
    def _split(observation: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        info = dict(observation.get("info") or {})
        for key in ("instruction", "available_actions", "action_templates"):
            info[key] = observation.get(key)
        if observation.get("error"):
            info["error"] = observation["error"]
        return str(observation.get("text", "")), info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        data: dict[str, Any] = {} if seed is None else {"seed": seed}
        if options:
            data["options"] = options
        return self._split(self.client.reset(**data).observation)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        result = self.client.step(action)
        obs, info = self._split(result.observation)
        terminated = bool(result.observation.get("terminated"))
        truncated = bool(result.observation.get("truncated")) or (bool(result.done) and not terminated)
        return obs, float(result.reward or 0.0), terminated, truncated, info

    def close(self) -> None:
        self.client.close()


gym.register(OPENENV_GYM_ID, entry_point=f"{__name__}:OpenEnvTextEnv", disable_env_checker=True)
