"""Gym conversions: a single-agent env as a Parallel env, and a society seat as a contract-keeping Gymnasium env."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from pettingzoo.test import parallel_api_test

from agents.brains.scripted import ScriptedBrain
from agents.core.agent import Agent
from agents.core.loop import run_episode
from envs.contract import check_text_env
from societies.gym_conversions import GymParallelEnv
from tests.toy_env import ENV_ID

SEAT_ID = "societies-test/Seat-v0"
if SEAT_ID not in gym.registry:
    gym.register(id=SEAT_ID, entry_point="societies.gym_conversions:SocietyAgentEnv", max_episode_steps=200)


def test_a_single_agent_env_runs_as_a_parallel_env() -> None:
    env = GymParallelEnv(gym.make(ENV_ID))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(env, num_cycles=40)
    obs, infos = env.reset(seed=0)
    assert list(obs) == ["agent_0"] and "available_actions" in infos["agent_0"]
    _, rewards, _, _, infos = env.step({})
    assert "error" in infos["agent_0"] and rewards["agent_0"] == 0.0


@pytest.mark.parametrize("scenario", ["opinion", "cooperation"])
def test_a_society_seat_keeps_the_single_agent_contract(scenario: str) -> None:
    check_text_env(gym.make(SEAT_ID, scenario=scenario, agents=6, rounds=12, cooperation={"match_length": 2}))


def test_a_diffusion_seat_decides_once_per_exposure() -> None:
    """A diffusion seat is asked only when exposed (so `check_text_env`'s long-episode probes do not apply)."""
    env = gym.make(SEAT_ID, scenario="diffusion", agents=30, diffusion={"p": 0.9, "seeds": 3},
                   graph={"kind": "watts_strogatz", "degree": 4})  # fmt: skip
    obs, info = env.reset(seed=0)
    assert info["available_actions"] == ["share", "ignore"] and "shared this post" in obs
    snap = env.unwrapped.snapshot()
    obs2, reward, terminated, truncated, info = env.step("retweet")
    assert "error" in info and obs2 == obs and not (terminated or truncated)
    env.unwrapped.restore(snap)
    *_, terminated, truncated, info = env.step("share")
    assert terminated and "error" not in info
    assert env.unwrapped.society.scenario.adopted[0]


def test_the_existing_episode_loop_drives_a_seat_among_rule_agents() -> None:
    """`brain=scripted` follows the seat's expert: the society's own rule (tit-for-tat for agent 0)."""
    env = gym.make(SEAT_ID, scenario="cooperation", agents=4, rounds=30, cooperation={"match_length": 3})
    record = run_episode(env, Agent(ScriptedBrain()), seed=1)
    assert record.outcome.terminated and not record.stats.invalid_actions
    assert len(record.steps) == 3 * 3  # 3 opponents x 3 moves; no byes with 4 agents
    # agent 0 plays tit-for-tat; agent 2 always defects: TFT answers its first defection in kind
    moves_vs_alld = [
        s.action
        for s in record.steps
        if "against agent_2" in (record.steps[s.index - 1].observation if s.index else record.initial_observation)
    ]
    assert moves_vs_alld == ["cooperate", "defect", "defect"]
    assert record.outcome.total_reward > 0
