"""`python -m agents.run` end to end, as a user types it."""

import json
import subprocess
import sys
from pathlib import Path

from agents.trajectories import TrajectoryStore
from tests.toy_env import ENV_ID

ROOT = Path(__file__).resolve().parents[1]
CORRIDOR = ["env=gym", f"env.id={ENV_ID}", "env.entry_point=tests.toy_env:CorridorEnv", "env.name=corridor"]


def run(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "agents.run", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def test_help_lists_config_groups():
    res = run("--help")
    assert res.returncode == 0
    for word in (
        "env: babyai, coding, faulttree, gym, textcraft, webshop",
        "brain: local, openai, scripted",
        "memory:",
        "agent: default",
    ):
        assert word in res.stdout, res.stdout


def test_unknown_env_lists_valid_ones():
    res = run("env=nope")
    assert res.returncode == 2
    assert "unknown env 'nope'" in res.stderr and "webshop" in res.stderr and "faulttree" in res.stderr


def test_unknown_brain_option_is_clear(tmp_path):
    res = run(*CORRIDOR, "brain=scripted", "+brain.temprature=1", "memory=none", f"out={tmp_path}/r")
    assert res.returncode == 2 and "temprature" in res.stderr and "Traceback" not in res.stderr


def test_scripted_run_writes_trajectories_summary_and_table(tmp_path):
    out = tmp_path / "run"
    res = run(*CORRIDOR, "brain=scripted", "memory=none", "episodes=6", "seed=10", "concurrency=3", f"out={out}")
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    s = summary["summary"]
    assert s["episodes"] == 6 and s["success_rate"] == 1.0 and s["mean_score"] == 100.0
    eps = list(TrajectoryStore(out / "trajectories.jsonl").read(strict=True))
    assert sorted(e.seed for e in eps) == list(range(10, 16))
    assert "success rate" in res.stderr and "100.0%" in res.stderr  # the table


def test_embedded_default_brain_runs(tmp_path):
    out = tmp_path / "run"
    res = run(*CORRIDOR, "memory=none", "episodes=1", "max_steps=4", f"out={out}")
    assert res.returncode == 0, res.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["brain"] == "local" and s["model"] == "gemma3-270m" and s["summary"]["tokens_in"] > 0
    assert s["adapter"] == "agentsim-sft"  # brain.adapter=auto on an env with no adapter of its own
    (ep,) = TrajectoryStore(out / "trajectories.jsonl").read(strict=True)
    assert ep.meta["adapter"] == "agentsim-sft"  # the record says which policy made it


def test_reflective_lessons_carry_across_episodes_and_resume(tmp_path):
    out = tmp_path / "run"
    args = [*CORRIDOR, "brain=scripted", "brain.epsilon=0.3", "memory=reflective", "concurrency=1", f"out={out}"]
    assert run(*args, "episodes=2").returncode == 0
    eps = sorted(TrajectoryStore(out / "trajectories.jsonl").read(), key=lambda e: e.seed)
    assert not eps[0].steps[0].memory_context  # nothing learnt yet
    assert "Lessons from earlier episodes" in eps[1].steps[0].memory_context
    state = json.loads((out / "memory_state.json").read_text())
    assert state["kind"] == "composite"
    # a resumed run starts from the saved lessons, not from scratch
    assert run(*args, "episodes=3", "resume=true").returncode == 0
    third = next(e for e in TrajectoryStore(out / "trajectories.jsonl").read() if e.seed == 2)
    assert third.steps[0].memory_context.count("worked in") + third.steps[0].memory_context.count("failed") >= 2


def test_turn_style_from_the_command_line(tmp_path):
    out = tmp_path / "run"
    res = run(*CORRIDOR, "brain=scripted", "episodes=1", "agent.perception.turn_style=compact", f"out={out}")
    assert res.returncode == 0, res.stderr[-3000:]
    assert next(iter(TrajectoryStore(out / "trajectories.jsonl").read(strict=True))).outcome.success
    bad = run(*CORRIDOR, "brain=scripted", "episodes=1", "agent.perception.turn_style=terse", f"out={tmp_path}/b")
    assert bad.returncode == 2 and "turn_style" in bad.stderr and "compact" in bad.stderr
    assert "Traceback" not in bad.stderr
