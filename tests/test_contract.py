"""Every registered env keeps the text-env contract (`envs.contract.check_text_env`), by construction.

A new env declared with `@register_env` (or installed as an `agentsim.envs` plugin) is checked here
without a line of test code. The broken corridors below show the checker is not vacuous.
"""

from __future__ import annotations

import os
import tempfile

import gymnasium as gym
import pytest

# Build the small shop under a throwaway dir unless the caller chose one (as tests/webshop does).
os.environ.setdefault("AGENTSIM_CACHE", tempfile.mkdtemp(prefix="agentsim-contract-tests-"))

import envs  # noqa: E402
from envs.contract import (  # noqa: E402
    ECHO_CHARS,
    MAX_ACTION_CHARS,
    action_problem,
    check_text_env,
    excerpt,
    restore_env,
    snapshot_env,
)
from tests.toy_env import ENV_ID as CORRIDOR_ID  # noqa: E402
from tests.toy_env import CorridorEnv  # noqa: E402

SMALL = {"agentsim/WebShop-v0": {"num_products": 2_000}}  # same size as tests/webshop: built once per cache


def registered_ids() -> list[str]:
    """Every env the project registers (plugins included, when the plugin registry exists), plus the toy env."""
    try:
        from envs.registry import load_env_plugins
    except ImportError:
        pass
    else:
        load_env_plugins()
    return sorted({gym_id for gym_id, _ in envs.ENVS.values()} | {CORRIDOR_ID})


@pytest.mark.parametrize("env_id", registered_ids())
def test_registered_env_keeps_the_contract(env_id: str) -> None:
    if env_id == "agentsim/Coding-v0":
        from envs.coding.sandbox import unavailable_reason

        if reason := unavailable_reason("bwrap"):
            pytest.skip(f"the coding env's default sandbox cannot run here: {reason}")
    env = gym.make(env_id, **SMALL.get(env_id, {}))
    try:
        check_text_env(env, seed=0)
    finally:
        env.close()


def test_every_project_env_has_a_registered_step_limit() -> None:
    for name, (env_id, _) in envs.ENVS.items():
        if name in envs.MAX_EPISODE_STEPS:
            assert gym.spec(env_id).max_episode_steps == envs.MAX_EPISODE_STEPS[name]
    assert set(envs.MAX_EPISODE_STEPS) >= {"webshop", "faulttree"}


# --- the helpers ---------------------------------------------------------------------------------


def test_action_cap_and_bounded_echo() -> None:
    assert action_problem("x" * MAX_ACTION_CHARS) is None
    problem = action_problem("check[" + "x" * 1_000_000 + "]")
    assert problem is not None and f"at most {MAX_ACTION_CHARS:,}" in problem and "1,000,007 chars" in problem
    assert len(problem) < 2 * ECHO_CHARS + 100 and "x" * ECHO_CHARS not in problem
    assert "must be a string" in (action_problem(None) or "")
    assert excerpt("short") == "'short'"


def test_snapshot_env_restores_the_time_limit_counter() -> None:
    """A branch restored mid-episode is truncated at the episode's limit, not after the steps taken since."""
    env = gym.make(CORRIDOR_ID, max_episode_steps=4)
    env.reset(seed=0)
    env.step("say[one]")
    snap = snapshot_env(env)
    assert snap.steps_counted == 1  # a step count, not a time
    for _ in range(3):
        env.step("say[more]")
    restore_env(env, snap)
    assert [env.step("say[again]")[3] for _ in range(3)] == [False, False, True]
    fresh = gym.make(CORRIDOR_ID, max_episode_steps=4)  # another env, in another episode
    fresh.reset(seed=1)
    fresh.step("say[elsewhere]")
    fresh.step("say[elsewhere]")
    restore_env(fresh, snap)
    assert [fresh.step("say[again]")[3] for _ in range(3)] == [False, False, True]


# --- the checker catches broken envs ---------------------------------------------------------------


class KeepsGoingCorridor(CorridorEnv):
    """Breaks the after-end rule: answers a step after the end as if nothing had happened."""

    def step(self, action: str):
        self.done = False
        return super().step(action)


class EchoingCorridor(CorridorEnv):
    """Breaks the echo bound: quotes the whole action back."""

    def step(self, action: str):
        obs, r, term, trunc, info = super().step(action)
        if "error" in info:
            info["error"] += f" You typed {action!r}."
        return obs, r, term, trunc, info


class SlipperyCorridor(CorridorEnv):
    """Breaks 'a bad action changes nothing': a refused action still moves the player."""

    def step(self, action: str):
        result = super().step(action)
        if "error" in result[4] and not self.done and self.pos < self.length - 1:
            self.pos += 1
        return result


class RaisingCorridor(CorridorEnv):
    """Breaks 'a step never raises': a non-string action crashes."""

    def step(self, action: str):
        return super().step(action.strip())


@pytest.mark.parametrize(
    "env_cls, rule",
    [
        (KeepsGoingCorridor, "a step after the episode ended"),
        (EchoingCorridor, "over-long action refused with a bounded echo"),
        (SlipperyCorridor, "bad action -> error, state unchanged"),
        (RaisingCorridor, "bad action -> error, state unchanged"),
    ],
)
def test_checker_names_the_env_and_the_broken_rule(env_cls: type[CorridorEnv], rule: str) -> None:
    with pytest.raises(AssertionError, match=f"^{env_cls.__name__}: {rule}"):
        check_text_env(env_cls(), skip_gymnasium=True)
