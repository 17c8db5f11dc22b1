"""`python -m agents.collect`: exactly N episodes, resumable after kill -9, failures recorded, run goes on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from agents.collect.failures import FailureLog
from agents.trajectories import TrajectoryStore
from tests.collect.conftest import ROOT, collect_cmd, run_collect, stored_ids, summary
from tests.collect.flaky_brain import FlakyBrainServer


def test_collects_n_episodes_with_progress_and_summary(tmp_path):
    out = tmp_path / "c"
    res = run_collect(out, 24, "concurrency=6", "seed=100", "progress=true")
    assert res.returncode == 0, res.stderr[-3000:]
    eps = list(TrajectoryStore(out / "trajectories.jsonl").read(strict=True))
    assert sorted(e.seed for e in eps) == list(range(100, 124))
    manifest = json.loads((out / "collect.json").read_text())
    assert {e.config_hash for e in eps} == {manifest["config_hash"]}
    assert manifest["config"]["brain"]["name"] == "scripted" and manifest["config"]["seed"] == 100
    s = summary(out)
    assert s["episodes_completed"] == 24 and s["episodes_this_run"] == 24 and s["failed_episodes"] == []
    assert s["episodes_per_s"] > 0 and s["summary"]["episodes"] == 24
    assert "ep/s" in res.stderr and "tok/s" in res.stderr and "success rate" in res.stderr
    # the same command again: nothing to do, nothing duplicated
    again = run_collect(out, 24, "concurrency=6", "seed=100")
    assert again.returncode == 0 and len(stored_ids(out)) == 24 and summary(out)["episodes_this_run"] == 0


def test_kill_9_then_rerun_yields_exactly_n(tmp_path):
    out = tmp_path / "c"
    traj = out / "trajectories.jsonl"
    n = 800
    proc = subprocess.Popen(
        collect_cmd(out, n, "concurrency=8"), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 120
    while time.time() < deadline and (not traj.exists() or traj.read_bytes().count(b"\n") < 40):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with open(traj, "a") as f:  # what a kill in the middle of a write leaves
        f.write('{"schema_version": "1.0", "episode_id": "corridor-77777", "env"')
    survived = len(TrajectoryStore(traj).episode_ids())
    assert 40 <= survived < n
    res = run_collect(out, n, "concurrency=8")
    assert res.returncode == 0, res.stderr[-3000:]
    ids = stored_ids(out)
    assert len(ids) == len(set(ids)) == n
    assert summary(out)["episodes_this_run"] == n - survived


def test_failing_brain_endpoint_fails_episodes_and_the_run_goes_on(tmp_path):
    out = tmp_path / "c"
    n = 30
    with FlakyBrainServer(fail_every=7) as brain:
        args = [
            "brain=openai",
            f"brain.base_url={brain.url}",
            "brain.model=flaky",
            "brain.max_retries=0",
            "brain.timeout_s=10",
            "max_steps=3",
            "concurrency=4",
        ]
        cmd = collect_cmd(out, n, *args)
        cmd.remove("brain=scripted")
        cmd.remove("brain.epsilon=0.2")
        res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert res.returncode == 1, res.stderr[-3000:]
        failed = FailureLog(out / "failed.jsonl").read()
        done = stored_ids(out)
        assert brain.failures > 0 and len(failed) == brain.failures
        assert len(done) + len(failed) == n and {f.episode_id for f in failed}.isdisjoint(done)
        assert all("BrainError" in f.error and "HTTP 500" in f.error for f in failed)
        s = summary(out)
        assert len(s["failed_episodes"]) == len(failed) and s["aborted"] is None
        assert "episode(s) failed" in res.stderr and "rerun the same command" in res.stderr
        brain.fail_every = 0  # the endpoint recovers: the rerun retries exactly the failed episodes
        res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
    ids = stored_ids(out)
    assert len(ids) == len(set(ids)) == n and summary(out)["episodes_this_run"] == len(failed)


def test_rerun_with_another_config_is_refused(tmp_path):
    out = tmp_path / "c"
    assert run_collect(out, 3).returncode == 0
    res = run_collect(out, 3, "brain.epsilon=0.5")
    assert res.returncode == 2 and "another config (changed: brain)" in res.stderr and "Traceback" not in res.stderr
    ok = run_collect(out, 5, "concurrency=2")  # more episodes or other concurrency: same collection
    assert ok.returncode == 0 and len(stored_ids(out)) == 5


def test_bad_executor_is_a_clear_error(tmp_path):
    res = run_collect(tmp_path / "c", 3, "executor=spark")
    assert res.returncode == 2 and "executor: Input should be 'local' or 'ray'" in res.stderr


def test_summary_adapter_comes_from_the_episodes_when_no_local_worker_built_the_brain():
    """Under Ray the actors build the brains, so `summary.json` takes the adapter from what each episode recorded."""
    from agents.engine import recorded_adapter
    from tests.prm.test_targets import _episode

    def ep(adapter: str | None):
        e = _episode([1.0], True, False)
        return e.model_copy(update={"meta": {} if adapter is None else {"adapter": adapter}})

    assert recorded_adapter([ep("agentsim-evol1"), ep("agentsim-evol1")]) == "agentsim-evol1"
    assert recorded_adapter([ep("agentsim-sft"), ep("agentsim-evol1"), ep(None)]) == "agentsim-evol1, agentsim-sft"
    assert recorded_adapter([ep(None)]) is None and recorded_adapter([]) is None


def test_concurrency_auto_runs_one_episode_per_in_process_model():
    """Collection's default lanes: one per in-process model (brain=local shares the cores; measured 2.2x slower at 8
    lanes), 8 for a cheap or remote brain; an explicit value always wins."""
    from agents.config import CollectConfig, ConfigError, validate_config
    from agents.resolve import resolve

    def lanes(*brain_and_more: tuple[str, object]) -> int:
        cfg = {"env": {"id": "Corridor-v0"}, "out": "x", **dict(brain_and_more)}
        return resolve(validate_config(CollectConfig, cfg)).lanes

    assert lanes(("brain", {"name": "local"})) == 1
    assert lanes(("brain", {"name": "local"}), ("executor", "ray"), ("workers", 3)) == 3
    assert lanes(("brain", {"name": "scripted"})) == 8
    assert lanes(("brain", {"name": "openai"})) == 8
    assert lanes(("brain", {"name": "local"}), ("concurrency", 4)) == 4
    with pytest.raises(ConfigError, match="concurrency"):
        lanes(("brain", {"name": "local"}), ("concurrency", -1))
