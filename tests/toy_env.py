"""A small deterministic text env for the core runtime's tests: walk a corridor, take a key, open the door.

It keeps the full env contract (FreeText spaces, available_actions, action_templates, errors on
bad actions with state unchanged, terminated vs truncated, the after-end rule, snapshot/restore,
an expert), so the agent side can be tested without any real env; `tests/test_contract.py` checks it.
The step limit is the registration's `max_episode_steps` (TimeLimit); `max_steps` is a deprecated
alias that counts only accepted actions (tests/test_loop.py relies on it).
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym

from envs.contract import MAX_ACTION_CHARS, action_problem, episode_over_message, excerpt, invalid_action_message
from envs.spaces import FreeText


class CorridorEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, length: int = 5, max_steps: int | None = None) -> None:
        self.length, self.max_steps = length, max_steps
        self.observation_space = FreeText(4096)
        self.action_space = FreeText(MAX_ACTION_CHARS)
        self.pos = self.key_pos = self.t = 0
        self.has_key = False
        self.done = False

    # -- state
    def _actions(self) -> list[str]:
        acts = []
        if self.pos > 0:
            acts.append("move[left]")
        if self.pos < self.length - 1:
            acts.append("move[right]")
        if self.pos == self.key_pos and not self.has_key:
            acts.append("take[key]")
        if self.pos == self.length - 1 and self.has_key:
            acts.append("open[door]")
        return acts

    def _obs(self) -> str:
        where = f"You are in room {self.pos} of a corridor of {self.length} rooms."
        key = " A key lies here." if self.pos == self.key_pos and not self.has_key else ""
        door = " A locked door is here." if self.pos == self.length - 1 else ""
        inv = " You carry a key." if self.has_key else ""
        return where + key + door + inv

    def _info(self, error: str | None = None) -> dict[str, Any]:
        info: dict[str, Any] = {
            "instruction": "Find the key and open the door at the end of the corridor.",
            "available_actions": self._actions(),
            "action_templates": ["say[...]"],
        }
        if error:
            info["error"] = error
        return info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.key_pos = int(self.np_random.integers(0, self.length - 1))
        self.pos = int(self.np_random.integers(0, self.length))
        self.has_key, self.t, self.done = False, 0, False
        return self._obs(), self._info()

    def _cut(self) -> bool:
        return self.max_steps is not None and self.t >= self.max_steps

    def step(self, action: str):
        if self.done:
            msg = episode_over_message("the door is open")
            return msg, 0.0, True, False, self._info(msg)
        problem = action_problem(action)
        if problem is None and action.startswith("say[") and action.endswith("]"):
            self.t += 1
            return f'You say "{action[4:-1]}". Nobody answers. ' + self._obs(), 0.0, False, self._cut(), self._info()
        if problem is not None or action not in self._actions():
            problem = problem or f"{excerpt(action)} is not possible here"
            msg = invalid_action_message(problem, self._actions(), ["say[...]"])
            return msg, 0.0, False, False, self._info(msg)
        self.t += 1
        reward, terminated = 0.0, False
        if action == "move[left]":
            self.pos -= 1
        elif action == "move[right]":
            self.pos += 1
        elif action == "take[key]":
            self.has_key = True
        elif action == "open[door]":
            reward, terminated, self.done = 1.0, True, True
        return self._obs(), reward, terminated, (not terminated) and self._cut(), self._info()

    def snapshot(self) -> Any:
        return copy.deepcopy(
            (self.pos, self.key_pos, self.has_key, self.t, self.done, self.np_random.bit_generator.state)
        )

    def restore(self, snap: Any) -> None:
        self.pos, self.key_pos, self.has_key, self.t, self.done, rng = copy.deepcopy(snap)
        self.np_random.bit_generator.state = rng

    def expert_action(self) -> str:
        if not self.has_key:
            if self.pos == self.key_pos:
                return "take[key]"
            return "move[right]" if self.pos < self.key_pos else "move[left]"
        return "open[door]" if self.pos == self.length - 1 else "move[right]"


ENV_ID = "agentsim-test/Corridor-v0"
ENTRY_POINT = "tests.toy_env:CorridorEnv"
MAX_EPISODE_STEPS = 30
if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point=ENTRY_POINT, max_episode_steps=MAX_EPISODE_STEPS)
