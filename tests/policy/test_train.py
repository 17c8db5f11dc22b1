"""Policy training on a small store: the data is what the brain scores, training resumes, the result loads."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

from agents.brains.scripted import ScriptedBrain
from agents.core import Agent, run_episode
from agents.policy.sft_data import build_sequences, episode_sequences, read_episodes, step_tokens
from tests.toy_env import ENV_ID

pytest.importorskip("peft")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """Six expert episodes of the corridor (transcript layout), one failed episode, as agents.collect writes them."""
    root = tmp_path_factory.mktemp("store")
    env = gym.make(ENV_ID, length=4)
    with (root / "trajectories.jsonl").open("w") as f:
        for seed in range(6):
            f.write(run_episode(env, Agent(ScriptedBrain()), seed=seed).model_dump_json() + "\n")
        bad = run_episode(env, Agent(ScriptedBrain(epsilon=1.0, seed=3)), seed=99, max_invalid=1)
        bad.outcome.success = False
        f.write(bad.model_dump_json() + "\n")
    return root


def test_step_tokens_split_like_the_brain_scores(local_brain, store):
    ep = json.loads((store / "trajectories.jsonl").read_text().splitlines()[0])
    step = ep["steps"][1]
    full, own = step_tokens(step["messages"], step["action"], local_brain.tokenize)
    head = local_brain.prompt_text(step["messages"]) + "Action:"
    base = local_brain.tokenize(head)
    assert full == local_brain.tokenize(head + " " + step["action"])
    assert full[:own] == base[:own] and own >= len(base) - 1
    assert local_brain.llm.detokenize(full[own:]).decode().strip().endswith(step["action"])


def test_an_episode_packs_into_one_sequence_with_a_target_per_action(local_brain, store):
    from agents.trajectories.schema import EpisodeRecord

    ep = EpisodeRecord.model_validate_json((store / "trajectories.jsonl").read_text().splitlines()[0])
    seqs = episode_sequences(ep, local_brain.tokenize)
    assert len(seqs) == 1  # each prompt extends the last: one forward pass trains every step
    s = seqs[0]
    text = local_brain.llm.detokenize([s.ids[p] for p in s.targets]).decode()
    for step in ep.steps:
        assert step.action in text
    assert max(s.targets) < len(s.ids)


def test_filters_and_bad_stores(local_brain, store, tmp_path):
    seqs, stats = build_sequences([store], local_brain.tokenize, success_only=True)
    assert stats["episodes"] == 7 and stats["filtered"] == 1 and stats["kept"] == 6
    lengths = sorted(len(ep.steps) for ep in read_episodes([store]) if ep.outcome.success)
    cap = lengths[len(lengths) // 2]
    _, capped = build_sequences([store], local_brain.tokenize, success_only=True, max_steps=cap)
    too_long = sum(n > cap for n in lengths)
    assert too_long and capped["too_long"] == too_long and capped["kept"] == 6 - too_long
    with pytest.raises(FileNotFoundError, match="no trajectory store"):
        build_sequences([tmp_path / "missing"], local_brain.tokenize)
    (tmp_path / "t.jsonl").write_text('{"episode_id": 1}\n')
    with pytest.raises(ValueError, match=r"t.jsonl:1: not a trajectory record"):
        build_sequences([tmp_path / "t.jsonl"], local_brain.tokenize)


@pytest.mark.slow
def tiny_run(store: Path, out: Path, **over) -> dict:
    """A training config small enough for CI: rank-4 LoRA on one layer, one sequence an update, every update
    evaluated, no GGUF unless asked."""
    cfg = {
        "data": [str(store)],
        "out": str(out),
        "eval_fraction": 0.3,
        "accumulate": 1,
        "eval_every": 1,
        "lora": {"r": 4, "layers": 1},
        "lr": 1e-3,
        "gguf": False,
        "progress": False,
    }
    return {**cfg, **over}


def test_train_resume_and_serve(store, tmp_path):
    torch = pytest.importorskip("torch")
    from agents.brains.local import LocalBrain
    from agents.policy.train import train

    torch.set_num_threads(1)  # a shared 2-core machine: OpenMP barriers stall with 2 busy threads
    cfg = tiny_run(store, tmp_path / "run", max_updates=2)
    history = train({**cfg, "max_updates": 1})
    assert [h["update"] for h in history] == [1]
    state = torch.load(tmp_path / "run" / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert state["update"] == 1
    history = train({**cfg, "gguf": True})  # resumes at update 1, does one more
    assert [h["update"] for h in history] == [1, 2]
    assert history[0]["heldout_loss"] > 0 and "heldout_action_acc" in history[0]
    assert (tmp_path / "run" / "best" / "adapter_model.safetensors").exists()
    summary = json.loads((tmp_path / "run" / "history.json").read_text())
    assert summary["updates"] == 2 and summary["train_tokens_per_epoch"] > 0
    brain = LocalBrain(adapter=str(tmp_path / "run" / "adapter.gguf"), n_ctx=1024, n_seq=4)
    out = brain.choose([{"role": "user", "content": "room 0"}], ["move[right]", "take[key]"], prefix="Action: ")
    assert out.text in ("Action: move[right]", "Action: take[key]")


def test_nothing_to_train_on_is_a_clear_error(store, tmp_path):
    from agents.policy.train import train

    with pytest.raises(ValueError, match="no training sequences"):
        train({"data": [str(store)], "out": str(tmp_path / "r"), "min_reward": 5.0, "progress": False})


def test_best_checkpoint_by_held_out_reward_played_by_llama_cpp(store, tmp_path):
    """`select_episodes`: every evaluation plays the same held-out goals with the checkpoint served by llama.cpp,
    and best/ is the checkpoint with the highest mean reward (the first of equals), not the lowest loss."""
    torch = pytest.importorskip("torch")
    from agents.policy.train import train

    torch.set_num_threads(1)
    cfg = tiny_run(
        store,
        tmp_path / "run",
        max_updates=3,
        lr=5e-3,
        select_episodes=2,
        select_envs=[{"id": ENV_ID, "kwargs": {"length": 4}, "max_steps": 6}],
        select_seed=100,
        threads=1,
    )
    history = train(cfg)
    assert [h["update"] for h in history] == [1, 2, 3]
    rewards = [h["heldout_reward"] for h in history]
    assert all(0.0 <= r <= 1.0 for r in rewards) and all("heldout_loss" in h for h in history)
    assert all(set(h) >= {"heldout_success", f"heldout_reward_{ENV_ID}"} for h in history)
    summary = json.loads((tmp_path / "run" / "history.json").read_text())
    assert summary["selected_by"] == "heldout_reward"
    assert summary["best_update"] == history[rewards.index(max(rewards))]["update"]
    assert (tmp_path / "run" / "best" / "adapter_model.safetensors").exists()
    assert (tmp_path / "run" / "select" / "adapter.gguf").exists()  # what was played: llama.cpp's adapter


def test_an_epoch_that_does_not_divide_into_updates_still_trains_and_evaluates_its_end(store, tmp_path):
    """Six sequences in updates of four: the second update takes the last two and is evaluated (it was dropped)."""
    torch = pytest.importorskip("torch")
    from agents.policy.train import train

    torch.set_num_threads(1)
    history = train(tiny_run(store, tmp_path / "r", eval_fraction=0.0, accumulate=4, eval_every=5, lr=3e-4))
    summary = json.loads((tmp_path / "r" / "history.json").read_text())
    assert summary["train_sequences"] == 6 and summary["updates"] == 2
    assert [h["update"] for h in history] == [2]  # the epoch's last update is always evaluated
