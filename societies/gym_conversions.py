"""Conversions between single-agent Gymnasium text envs and the PettingZoo Parallel API, both ways.

- `GymParallelEnv`: any Gymnasium text env (WebShop, FaultTree, ...) as a one-agent Parallel
  env, so multi-agent tooling runs the existing envs unchanged.
- `SocietyAgentEnv`: one agent's seat in a society as a Gymnasium text env that keeps the
  single-agent contract (`envs/contract.py`), the other agents played by rule brains. The
  existing `Agent`, episode loop and `agents.run` drive it unchanged, e.g.
  `python -m agents.run env=gym env.id=societies/seat-v0 env.entry_point=societies.gym_conversions:SocietyAgentEnv
  env.kwargs.scenario=cooperation brain=scripted` (`expert_action` is the society's rule for the seat). Rounds in which the seat is not active are played by the
  others without asking it (sparse activation), and a bad action does not advance the round,
  so the contract's "state unchanged" holds for the seat.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv

from envs.contract import MAX_ACTION_CHARS, episode_over_message, invalid_action_message
from envs.spaces import FreeText
from societies.env import OBS_CHARS, SocietyEnv, agent_id
from societies.rules import Rule


class GymParallelEnv(ParallelEnv):
    """A single-agent Gymnasium env as a Parallel env with one agent."""

    metadata = {"name": "gym_parallel_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, env: gym.Env, agent: str = "agent_0") -> None:
        self.env = env
        self.agent = agent
        self.possible_agents = [agent]
        self.agents: list[str] = []
        self._obs: Any = None
        self._info: dict[str, Any] = {}

    def observation_space(self, agent: str) -> gym.Space:
        return self.env.observation_space

    def action_space(self, agent: str) -> gym.Space:
        return self.env.action_space

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        self._obs, self._info = self.env.reset(seed=seed, options=options)
        self.agents = [self.agent]
        return {self.agent: self._obs}, {self.agent: self._info}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        a = self.agent
        if a not in actions:  # a single agent cannot sit a round out: a missing action is a bad action
            info = {
                **self._info,
                "error": invalid_action_message(f"no action for {a}", self._info.get("available_actions") or []),
            }
            return {a: self._obs}, {a: 0.0}, {a: False}, {a: False}, {a: info}
        obs, reward, terminated, truncated, info = self.env.step(actions[a])
        self._obs, self._info = obs, info
        if terminated or truncated:
            self.agents = []
        return {a: obs}, {a: float(reward)}, {a: bool(terminated)}, {a: bool(truncated)}, {a: info}

    def close(self) -> None:
        self.env.close()


class SocietyAgentEnv(gym.Env):
    """One seat in a society as a single-agent text env; the rest of the society follows `rule`."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        society: SocietyEnv | None = None,
        rule: Rule | None = None,
        agent: int = 0,
        **config: Any,
    ) -> None:
        """Either give `society` and `rule`, or `societies.config.SocietyRunConfig` keys (`scenario=`, `agents=`, ...)."""
        if society is None:
            from societies.config import SocietyRunConfig, build

            cfg = SocietyRunConfig.model_validate({"agents": 10, "rounds": 20, "out": "", **config})
            society, built = build(cfg)
            rule = rule or built
        if rule is None:
            raise ValueError("SocietyAgentEnv needs the others' rule")
        if not 0 <= agent < society.scenario.n:
            raise ValueError(f"agent must be in 0..{society.scenario.n - 1}, got {agent}")
        self.society, self.rule = society, rule
        self.i, self.agent = agent, agent_id(agent)
        self.observation_space = FreeText(OBS_CHARS)
        self.action_space = FreeText(MAX_ACTION_CHARS)
        self._rule_rng = np.random.default_rng(0)
        self._ended: tuple[bool, bool] | None = None

    # -- the seat's view ------------------------------------------------------------------------
    def _others(self):
        sc = self.society.scenario
        return self.rule.decide(sc, sc.active[sc.active != self.i], self._rule_rng)

    def _skip_inactive(self) -> tuple[float, bool, bool]:
        """Let the others play while the seat has nothing to decide; returns the seat's reward and the flags."""
        reward, sc = 0.0, self.society.scenario
        while not sc.is_active[self.i]:
            r = self.society.step_moves(self._others())
            reward += float(r.rewards[self.i])
            if r.terminated or r.truncated:
                return reward, r.terminated, r.truncated
        return reward, False, False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.society.start(seed)
        self._rule_rng = np.random.default_rng([0 if seed is None else seed, 0xB7])
        self._ended = None
        _, terminated, truncated = self._skip_inactive()
        if terminated or truncated:
            self._ended = (terminated, truncated)
        return self.society.observe(self.agent), self.society.info(self.agent)

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs = self.society.observe(self.agent)
        if self._ended is not None:
            t, u = self._ended
            return (
                obs,
                0.0,
                t,
                u,
                {**self.society.info(self.agent), "error": episode_over_message("the society's run ended")},
            )
        _, errors = self.society.parse_actions({self.agent: action})
        if self.i in errors:  # refused before the round is played: the seat's state (and the round) unchanged
            return obs, 0.0, False, False, self.society.info(self.agent, errors[self.i])
        r = self.society.advance_mixed({self.agent: action}, self._others())
        reward, terminated, truncated = float(r.rewards[self.i]), r.terminated, r.truncated
        if not (terminated or truncated):
            more, terminated, truncated = self._skip_inactive()
            reward += more
        if terminated or truncated:
            self._ended = (terminated, truncated)
        return self.society.observe(self.agent), reward, terminated, truncated, self.society.info(self.agent)

    def expert_action(self) -> str:
        """The society's rule for this seat (`envs.contract.HasExpert`), so `brain=scripted` plays it with epsilon noise.

        Decided on a copy of the rule's generator: asking does not change what happens next."""
        sc = self.society.scenario
        moves = self.rule.decide(sc, np.array([self.i]), copy.deepcopy(self._rule_rng))
        if moves.idx.size == 0:
            return self.society.info(self.agent)["available_actions"][0]
        return sc.move_text(self.i, int(moves.code[0]), float(moves.values()[0]))

    # -- branching (envs.contract.Snapshottable) ------------------------------------------------
    def snapshot(self) -> Any:
        return (self.society.snapshot(), copy.deepcopy(self._rule_rng), self._ended)

    def restore(self, snapshot: Any) -> None:
        soc, rng, ended = snapshot
        self.society.restore(soc)
        self._rule_rng, self._ended = copy.deepcopy(rng), ended
