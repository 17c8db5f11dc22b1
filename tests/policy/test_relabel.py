"""DAgger relabeling: the teacher's pick in every state the student visited, and training data built from it."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import envs  # noqa: F401  (registers the envs)
from agents.brains.scripted import ScriptedBrain
from agents.core import Agent, run_episode
from agents.perception import Perception, PerceptionConfig
from agents.policy.evidence import expert_agreement
from agents.policy.relabel import main, relabel
from agents.policy.sft_data import TEACHER_KEY, episode_sequences
from agents.trajectories.store import TrajectoryStore
from tests.toy_env import ENV_ID as TOY_ENV_ID

ENV_ID = "agentsim/FaultTree-v0"
KWARGS = {"split": "train"}


def _students(seeds: range, epsilon: float = 0.5):
    """A noisy expert on compact turns: it strays from the expert's path, as a student policy does."""
    recs = []
    env = gym.make(ENV_ID, **KWARGS)
    for seed in seeds:
        agent = Agent(ScriptedBrain(epsilon, seed=seed), Perception(PerceptionConfig(turn_style="compact")))
        recs.append(run_episode(env, agent, seed=seed, max_steps=12, env_name="faulttree", env_kwargs=KWARGS))
    env.close()
    return recs


def test_the_expert_as_teacher_labels_each_visited_state_with_its_own_action(tmp_path):
    students = _students(range(5))
    store = TrajectoryStore(tmp_path / "trajectories.jsonl")
    report = relabel(students, ScriptedBrain(0.0), {"perception": {"turn_style": "full"}}, store)
    assert report.kept == 5 and not report.not_reproduced
    out = list(store)
    for old, new in zip(students, out, strict=True):
        assert [s.messages for s in new.steps] == [s.messages for s in old.steps]  # the student's own prompts
        labels = new.meta[TEACHER_KEY]
        assert len(labels) == len(old.steps)
        # labels are the expert's choice in the student's states: agreement counted two independent ways matches
        assert sum(a == s.action for a, s in zip(labels, old.steps)) == expert_agreement(old).agreed
    assert 0 < report.agreed < report.steps  # the noisy student strayed somewhere, and followed somewhere
    assert sum(report.disagreements.values()) == report.steps - report.agreed
    record = json.loads(json.dumps(report.to_dict()))  # what the CLI writes beside the store
    assert record["agreement"] == report.agreed / report.steps and record["disagreements"] == dict(report.disagreements)


def test_relabeled_episodes_train_agreed_actions_in_place_and_the_teachers_where_not(local_brain, tmp_path):
    store = TrajectoryStore(tmp_path / "trajectories.jsonl")
    relabel(_students(range(3)), ScriptedBrain(0.0), {}, store)
    ep = next(e for e in store if any(a != s.action for a, s in zip(e.meta[TEACHER_KEY], e.steps)))
    labels = ep.meta[TEACHER_KEY]
    seqs = episode_sequences(ep, local_brain.tokenize)
    packed = [s for s in seqs if "@" not in s.source]
    corrections = [s for s in seqs if "@" in s.source]
    wrong = [i for i, (a, s) in enumerate(zip(labels, ep.steps)) if a != s.action]
    assert [s.source for s in corrections] == [f"{ep.episode_id}@{i}" for i in wrong]
    for s, i in zip(corrections, wrong):  # the teacher's action after the student's own prompt at that step
        assert local_brain.detokenize([s.ids[p] for p in s.targets]).strip() == labels[i]
        assert local_brain.prompt_text(ep.steps[i].messages) in local_brain.detokenize(s.ids)
    trained = "".join(local_brain.detokenize([s.ids[p] for p in s.targets]) for s in packed)
    agreed = [s.action for a, s in zip(labels, ep.steps) if a == s.action]
    assert trained.split() == " ".join(agreed).split()  # exactly the agreed actions, none of the others


def test_a_real_model_teacher_ranks_the_students_candidates(local_brain, tmp_path):
    env = gym.make(TOY_ENV_ID, length=4)
    students = [run_episode(env, Agent(ScriptedBrain(0.5, seed=s)), seed=s, max_steps=8) for s in range(2)]
    store = TrajectoryStore(tmp_path / "trajectories.jsonl")
    report = relabel(students, local_brain, {"perception": {"turn_style": "full"}}, store)
    assert report.kept == 2 and report.steps == sum(len(s.steps) for s in students)
    for ep in store:
        for label, step in zip(ep.meta[TEACHER_KEY], ep.steps, strict=True):
            assert label in {c.text for c in step.candidates or []}  # one of the candidates the student was offered


def test_label_count_must_match_and_the_cli_refuses_missing_stores(local_brain, tmp_path, caplog):
    ep = _students(range(1))[0]
    bad = ep.model_copy(update={"meta": {TEACHER_KEY: ["x"] * (len(ep.steps) + 1)}})
    with pytest.raises(ValueError, match="teacher actions for"):
        episode_sequences(bad, local_brain.tokenize)
    assert main([str(tmp_path / "nowhere"), str(tmp_path / "out")]) == 2
    assert "no trajectory store" in caplog.text


def test_an_oracle_teacher_labels_only_actions_the_student_was_offered(tmp_path):
    """WebShop's expert searches with the goal's hidden keywords: as a teacher it must choose among the student's
    candidates (within_candidates), and a label outside them is replaced by the student's own action."""
    kwargs = {"split": "train", "num_products": 2_000}
    env = gym.make("agentsim/WebShop-v0", **kwargs)
    students = [
        run_episode(env, Agent(ScriptedBrain(0.5, seed=s)), seed=s, max_steps=8, env_name="webshop", env_kwargs=kwargs)
        for s in range(4)
    ]
    env.close()
    free = relabel(students, ScriptedBrain(0.0), {}, TrajectoryStore(tmp_path / "free" / "trajectories.jsonl"))
    assert free.unreachable >= 1  # at least the first search of each episode names hidden keywords
    within = TrajectoryStore(tmp_path / "within" / "trajectories.jsonl")
    report = relabel(students, ScriptedBrain(0.0, within_candidates=True), {}, within)
    assert report.kept == 4 and report.unreachable == 0
    for ep in within:
        for label, step in zip(ep.meta[TEACHER_KEY], ep.steps, strict=True):
            assert label in {c.text for c in step.candidates or []}
