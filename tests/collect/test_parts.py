"""`agents.core.factory.build_parts`: a run's worker takes its parts from one factory call, the brain built once and
each episode's env and agent (with its memory, holding the carried state) fresh from the makers it returns."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.config import ConfigError, RunConfig, validate_config
from agents.core.factory import build_parts
from agents.resolve import ResolvedRun, resolve
from tests.toy_env import ENV_ID

CORRIDOR = {"id": ENV_ID, "entry_point": "tests.toy_env:CorridorEnv", "name": "corridor"}


def run_of(tmp_path: Path, **raw: object) -> ResolvedRun:
    raw = {"env": CORRIDOR, "brain": {"name": "scripted"}, "out": str(tmp_path), **raw}
    return resolve(validate_config(RunConfig, raw))


def test_one_brain_and_a_fresh_env_and_agent_per_episode(tmp_path: Path) -> None:
    run = run_of(tmp_path, memory={"name": "working+reflective"}, max_steps=7)
    parts = build_parts(run)
    first, second = parts.new_agent(parts.brain, 0, None), parts.new_agent(parts.brain, 1, None)
    assert first.brain is second.brain is parts.brain
    assert first is not second and first.memory is not None and first.memory is not second.memory
    envs = parts.new_env(), parts.new_env()
    try:
        assert envs[0] is not envs[1]
        assert envs[0].spec is not None and envs[0].spec.max_episode_steps == run.steps_limit == 7
    finally:
        for env in envs:
            env.close()


def test_the_carried_memory_state_is_in_the_new_agents_memory(tmp_path: Path) -> None:
    parts = build_parts(run_of(tmp_path, memory={"name": "working+reflective"}))
    state = parts.new_agent(parts.brain, 0, None).memory.save_state()  # type: ignore[union-attr]
    state["parts"][1]["state"]["episode"] = 3  # three episodes played before
    carried = parts.new_agent(parts.brain, 1, state)
    assert carried.memory is not None and carried.memory.save_state() == state
    assert parts.new_agent(parts.brain, 2, None).memory.save_state() != state  # type: ignore[union-attr]


def test_memory_none_gives_an_agent_without_memory_and_a_given_brain_is_kept(tmp_path: Path) -> None:
    run = run_of(tmp_path)
    brain = build_parts(run).brain
    parts = build_parts(run, brain)
    assert parts.brain is brain and parts.new_agent(brain, 0, None).memory is None


def test_a_remote_env_with_an_entry_point_is_refused_naming_the_server_flag(tmp_path: Path) -> None:
    parts = build_parts(run_of(tmp_path, remote={"url": "http://127.0.0.1:9"}))
    with pytest.raises(ConfigError, match=r"cannot be sent to an env server.*--env corridor="):
        parts.new_env()
