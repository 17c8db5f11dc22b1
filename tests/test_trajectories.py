import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import pytest

from agents.brains.scripted import ScriptedBrain
from agents.core import Agent, run_episode
from agents.trajectories import EpisodeRecord, TrajectoryStore
from agents.trajectories.export import (
    from_hf_dataset,
    read_agentgym,
    read_parquet,
    step_rows,
    to_agentgym,
    to_hf_dataset,
    write_agentgym,
    write_parquet,
)
from tests.toy_env import ENV_ID

ROOT = Path(__file__).resolve().parents[1]


def episodes(n=4, eps=0.3):
    return [
        run_episode(gym.make(ENV_ID), Agent(ScriptedBrain(epsilon=eps)), seed=s, episode_id=f"corridor-{s}")
        for s in range(n)
    ]


def test_store_round_trip(tmp_path):
    store = TrajectoryStore(tmp_path / "t.jsonl")
    eps = episodes()
    for e in eps:
        store.append(e)
    back = list(store.read())
    assert back == eps
    assert store.episode_ids() == {e.episode_id for e in eps}


def test_torn_last_line_is_skipped_then_repaired(tmp_path, caplog):
    path = tmp_path / "t.jsonl"
    store = TrajectoryStore(path)
    eps = episodes(3)
    for e in eps[:2]:
        store.append(e)
    with open(path, "a") as f:  # what a crash mid-write leaves behind
        f.write(eps[2].model_dump_json()[:500])
    assert [e.episode_id for e in TrajectoryStore(path).read()] == [eps[0].episode_id, eps[1].episode_id]
    assert "skipping an unreadable episode line" in caplog.text
    with pytest.raises(ValueError, match=r"t.jsonl:3"):
        list(TrajectoryStore(path).read(strict=True))
    again = TrajectoryStore(path)
    again.append(eps[2])  # the torn tail is cut before appending
    assert [e.episode_id for e in TrajectoryStore(path).read(strict=True)] == [e.episode_id for e in eps]


def test_agentgym_export(tmp_path):
    eps = episodes(2)
    item = to_agentgym(eps[0])
    conv = item["conversations"]
    assert conv[0]["from"] == "human" and conv[0]["loss"] is None and "Find the key" in conv[0]["value"]
    gpt = [c for c in conv if c["from"] == "gpt"]
    assert len(gpt) == len(eps[0].steps) and all(c["loss"] is True for c in gpt)
    assert [c["from"] for c in conv[:4]] == ["human", "gpt", "human", "gpt"]
    n = write_agentgym(eps, tmp_path / "ag.json")
    back = read_agentgym(tmp_path / "ag.json")
    assert n == 2 and back == [to_agentgym(e) for e in eps]
    (tmp_path / "bad.json").write_text('{"x": 1}')
    with pytest.raises(ValueError, match="not an AgentGym conversations file"):
        read_agentgym(tmp_path / "bad.json")


def test_parquet_and_hf_round_trip(tmp_path):
    eps = episodes(3)
    write_parquet(eps, tmp_path / "e.parquet")
    assert read_parquet(tmp_path / "e.parquet") == eps
    ds = to_hf_dataset(eps)
    assert ds.num_rows == 3 and set(["episode_id", "conversations", "reward", "record"]) <= set(ds.column_names)
    assert from_hf_dataset(ds) == eps
    rows = step_rows(eps)
    assert len(rows) == sum(len(e.steps) for e in eps) and rows[0]["index"] == 0


def _run_cmd(out, episodes_n, resume=False):
    return [
        sys.executable,
        "-m",
        "agents.run",
        "env=gym",
        f"env.id={ENV_ID}",
        "env.entry_point=tests.toy_env:CorridorEnv",
        "env.name=corridor",
        "brain=scripted",
        "brain.epsilon=0.2",
        "memory=none",
        f"episodes={episodes_n}",
        f"out={out}",
        "progress=false",
        f"resume={'true' if resume else 'false'}",
        "concurrency=4",
    ]


def test_sigkill_loses_at_most_the_episode_in_flight_and_resume_completes(tmp_path):
    out = tmp_path / "run"
    traj = out / "trajectories.jsonl"
    proc = subprocess.Popen(_run_cmd(out, 3000), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and (not traj.exists() or traj.read_bytes().count(b"\n") < 30):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with open(traj, "a") as f:  # and make sure a torn tail is there, as a kill mid-write leaves it
        f.write('{"schema_version": "1.0", "episode_id": "corridor-99999", "env"')
    survived = TrajectoryStore(traj).episode_ids()
    assert len(survived) >= 30
    n = 3000 if len(survived) < 2900 else len(survived) + 50
    # resume: only the missing episodes run; nothing is duplicated
    res = subprocess.run(_run_cmd(out, n, resume=True), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    ids = [e.episode_id for e in TrajectoryStore(traj).read(strict=True)]
    assert len(ids) == len(set(ids)) == n
    summary = json.loads((out / "summary.json").read_text())
    assert summary["summary"]["episodes"] == n


def test_existing_run_without_resume_is_refused(tmp_path):
    out = tmp_path / "run"
    assert subprocess.run(_run_cmd(out, 3), cwd=ROOT, capture_output=True, timeout=120).returncode == 0
    res = subprocess.run(_run_cmd(out, 3), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "already holds 3 episodes; pass resume=true" in res.stderr


def test_schema_rejects_unknown_fields():
    ep = episodes(1)[0].model_dump()
    ep["surprise"] = 1
    with pytest.raises(Exception, match="surprise"):
        EpisodeRecord.model_validate(ep)


def test_duplicated_line_is_skipped_and_never_counted(tmp_path, caplog):
    """Issue 43: a line repeating an episode id (a store concatenated twice, a hand merge) counts once."""
    path = tmp_path / "t.jsonl"
    store = TrajectoryStore(path)
    eps = episodes(3)
    for e in eps:
        store.append(e)
    with open(path, "a") as f:
        f.write(eps[1].model_dump_json() + "\n")  # the same episode again, after the others
    back = [e.episode_id for e in TrajectoryStore(path).read()]
    assert back == [e.episode_id for e in eps] and len(TrajectoryStore(path)) == 3
    assert f"second line for episode {eps[1].episode_id!r} (first on line 2)" in caplog.text
    with pytest.raises(ValueError, match=r"t.jsonl:4: skipping a second line"):
        list(TrajectoryStore(path).read(strict=True))


def test_resume_on_a_store_with_a_duplicated_line_completes(tmp_path):
    """Before: the summary said 4/3 and `resume=true` exited 1 forever (4 episodes read for 3 wanted)."""
    out = tmp_path / "run"
    assert subprocess.run(_run_cmd(out, 3), cwd=ROOT, capture_output=True, timeout=120).returncode == 0
    traj = out / "trajectories.jsonl"
    lines = traj.read_text().splitlines(keepends=True)
    traj.write_text("".join(lines + [lines[0]]))
    res = subprocess.run(_run_cmd(out, 3, resume=True), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "skipping a second line for episode 'corridor-0'" in res.stdout + res.stderr  # Hydra logs to stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["summary"]["episodes"] == summary["episodes_completed"] == summary["episodes_wanted"] == 3
    assert "3/3 in" in res.stderr
