"""A text env for the plugin demo: count up to a target with `inc`, then `stop`."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from envs.contract import action_problem, episode_over_message, excerpt, invalid_action_message
from envs.registry import register_env
from envs.spaces import FreeText


@register_env("counter", max_episode_steps=12)  # its facts, as a project env declares them
class CounterEnv(gym.Env):
    """Reach `target` (drawn from the seed) with `inc[1]`, then `stop[]`; reward 1 if the count is right."""

    def __init__(self, max_target: int = 3) -> None:
        self.max_target = max_target
        self.observation_space = FreeText(1024)
        self.action_space = FreeText(256)
        self.count = self.target = 0
        self.done = False

    def _info(self, error: str | None = None) -> dict[str, Any]:
        info: dict[str, Any] = {
            "instruction": f"Count to {self.target}, then stop.",
            "available_actions": [] if self.done else ["inc[1]", "stop[]"],
            "action_templates": [],
        }
        if error:
            info["error"] = error
        return info

    def _obs(self) -> str:
        return f"The counter shows {self.count}."

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """A new target from the seed; the counter at 0."""
        super().reset(seed=seed)
        self.target = int(self.np_random.integers(1, self.max_target + 1))
        self.count, self.done = 0, False
        return self._obs(), self._info()

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """`inc[1]` adds one, `stop[]` ends the episode; anything else is an error with the state unchanged."""
        if self.done:
            return self._obs(), 0.0, True, False, self._info(episode_over_message("the counter was stopped"))
        problem = action_problem(action)
        if problem is None and action == "inc[1]":
            self.count += 1
            return self._obs(), 0.0, False, False, self._info()
        if problem is None and action == "stop[]":
            self.done = True
            return self._obs(), float(self.count == self.target), True, False, self._info()
        msg = invalid_action_message(problem or f"{excerpt(action)} is not an action", ["inc[1]", "stop[]"])
        return msg, 0.0, False, False, self._info(msg)

    def expert_action(self) -> str:
        """Increment until the target, then stop."""
        return "inc[1]" if self.count < self.target else "stop[]"
