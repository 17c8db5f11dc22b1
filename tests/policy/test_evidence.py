"""Expert agreement: replaying an episode and asking the env's expert at every state it passed through."""

from __future__ import annotations

import gymnasium as gym
import pytest

import envs  # noqa: F401
from agents.brains.scripted import ScriptedBrain
from agents.core import Agent, run_episode
from agents.policy.evidence import expert_agreement, with_evidence


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [("agentsim/WebShop-v0", {"split": "test"}), ("agentsim/FaultTree-v0", {"split": "test"})],
)
def test_the_expert_agrees_with_itself_and_a_noisy_policy_less(env_id, kwargs):
    env = gym.make(env_id, **kwargs)
    expert = run_episode(env, Agent(ScriptedBrain()), seed=3)
    noisy = run_episode(env, Agent(ScriptedBrain(epsilon=0.7, seed=1)), seed=3)
    expert.env_id, expert.env_kwargs = env_id, kwargs
    noisy.env_id, noisy.env_kwargs = env_id, kwargs
    a = expert_agreement(expert)  # makes its own env from the record
    assert a.steps == len(expert.steps) > 0 and a.share == 1.0
    b = expert_agreement(noisy, env)
    assert 0.0 <= b.share < 1.0
    kept = with_evidence([expert, noisy], min_agreement=0.99)
    assert [ep.episode_id for ep, _ in kept] == [expert.episode_id]


def test_a_record_that_does_not_replay_or_an_env_without_expert_is_refused():
    env = gym.make("agentsim/WebShop-v0", split="test")
    ep = run_episode(env, Agent(ScriptedBrain()), seed=3)
    ep.env_id, ep.env_kwargs = "agentsim/WebShop-v0", {"split": "train"}  # another split: another task
    with pytest.raises(ValueError, match="cannot be replayed"):
        expert_agreement(ep)
    no_expert = ep.model_copy(update={"env_id": "CartPole-v1", "env_kwargs": {}})
    with pytest.raises(TypeError, match="no scripted expert"):
        expert_agreement(no_expert)
