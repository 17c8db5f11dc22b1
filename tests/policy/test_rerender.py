"""Re-rendering a store: replayed episodes get exactly the prompts a live run with the new turns would have made."""

from __future__ import annotations

import json

import gymnasium as gym

import envs  # noqa: F401  (registers the envs)
from agents.brains.scripted import ScriptedBrain
from agents.core import Agent, run_episode
from agents.perception import Perception, PerceptionConfig
from agents.policy.rerender import main, rerender
from agents.trajectories.store import TrajectoryStore

ENV_ID = "agentsim/FaultTree-v0"
KWARGS = {"split": "train"}


def _collect(style: str, seeds: range, epsilon: float = 0.3):
    recs = []
    for seed in seeds:
        env = gym.make(ENV_ID, **KWARGS)
        agent = Agent(ScriptedBrain(epsilon, seed=seed), Perception(PerceptionConfig(turn_style=style)))
        recs.append(run_episode(env, agent, seed=seed, max_steps=20, env_name="faulttree", env_kwargs=KWARGS))
        env.close()
    return recs


def test_replayed_full_turn_episodes_match_live_compact_ones(tmp_path):
    full, live = _collect("full", range(4)), _collect("compact", range(4))
    store = TrajectoryStore(tmp_path / "out" / "trajectories.jsonl")
    report = rerender(full, {"perception": {"turn_style": "compact"}}, store)
    assert report.kept == 4 and not report.not_reproduced
    replayed = list(store)
    for old, new, ref in zip(full, replayed, live, strict=True):
        assert new.episode_id == old.episode_id and new.outcome == old.outcome
        assert [s.action for s in new.steps] == [s.action for s in old.steps]
        if [s.action for s in ref.steps] == [s.action for s in old.steps]:  # same noise draws: the same prompts
            assert [s.messages for s in new.steps] == [s.messages for s in ref.steps]
        turns = [s.messages[-1]["content"] for s in new.steps[1:]]
        assert any("<a name shown above>" in t for t in turns)  # compact turns, not the full ones replayed
        assert new.meta["rerendered_from"] == "scripted"


def test_filters_and_refuses_what_does_not_replay(tmp_path):
    recs = _collect("full", range(3), epsilon=0.0)
    tampered = recs[1].model_copy(update={"outcome": recs[1].outcome.model_copy(update={"reward": 0.123})})
    report = rerender(
        [recs[0], tampered, recs[2]],
        {"perception": {"turn_style": "compact"}},
        TrajectoryStore(tmp_path / "trajectories.jsonl"),
        min_reward=0.0,
    )
    assert report.kept == 2 and report.not_reproduced == [recs[1].episode_id]  # an outcome it cannot reproduce
    worst = min(recs, key=lambda r: r.outcome.reward)
    report = rerender(
        recs, {}, TrajectoryStore(tmp_path / "b.jsonl"), min_reward=worst.outcome.reward + 1e-6, success_only=False
    )
    assert report.filtered >= 1 and report.kept + report.filtered == 3


def test_cli_writes_a_store_and_says_what_is_missing(tmp_path, caplog):
    src = tmp_path / "src"
    store = TrajectoryStore(src / "trajectories.jsonl")
    for r in _collect("full", range(2), epsilon=0.0):
        store.append(r)
    assert main([str(src), str(tmp_path / "out")]) == 0
    lines = (tmp_path / "out" / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["meta"]["rerendered_from"] == "scripted"
    assert main([str(tmp_path / "nowhere"), str(tmp_path / "o2")]) == 2
    assert "no trajectories.jsonl in" in caplog.text
