"""TRL's GRPOTrainer trains through OpenEnv's protocol: every rollout's env is OpenEnv's client (openenv-core)
talking over a real WebSocket to the env server's `/openenv/corridor` (docs/adapters.md).

The same tiny tool-calling Llama as the GRPO smoke run of test_trl_env.py; the env is
`OpenEnvTextEnv` (a Gymnasium env over `TextEnvClient`), so the TRL adapter, its verb probe included,
never sees a local env.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agents.policy.trl_env import TRLEnv, environment_factory
from envs.server.openenv_client import OPENENV_GYM_ID, OpenEnvTextEnv, openenv_url
from tests.policy.test_trl_env import train_tiny_grpo
from tests.server.conftest import Server, start_server


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    s = start_server(tmp_path_factory.mktemp("openenv-trl"), "--max-sessions", "16")
    yield s
    s.stop()


@pytest.mark.timeout(1800)  # two GRPO steps on CPU; every env call a WebSocket round trip
def test_grpo_trains_through_openenv_on_cpu(server: Server, tmp_path) -> None:
    factory = environment_factory(
        OPENENV_GYM_ID,
        env_kwargs={"base_url": openenv_url(server.url, "corridor")},
        max_episode_steps=10,
        verbs=("move", "take", "open"),  # OpenEnv carries no expert, so a probe would only see random play's verbs
        generic_tool=False,
    )
    moves = [("move", "right", 0.3), ("move", "left", 0.05), ("take", "key", 0.2), ("open", "door", 0.15)]
    trainer, logged = train_tiny_grpo(factory, moves, tmp_path / "grpo")

    pool: list[TRLEnv] = trainer._environment_pool[None]
    assert all(isinstance(e.env.unwrapped, OpenEnvTextEnv) for e in pool)  # every rollout went over OpenEnv
    assert sum(e.resets for e in pool) == 4 and len(logged) == 2
    assert sum(log["tools/call_frequency"] for log in logged) > 0 and any(e.steps for e in pool)
    rewards = [e.get_reward() for e in pool]
    assert logged[-1]["reward"] == pytest.approx(sum(rewards) / len(pool), abs=1e-5)
    for e in pool:
        e.env.close()
