"""Collection against an env server that dies and comes back, and with the Ray executor."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from agents.trajectories import TrajectoryStore
from tests.collect.conftest import REMOTE_CORRIDOR, ROOT, collect_cmd, run_collect, stored_ids, summary
from tests.server.conftest import start_server


def test_env_server_killed_mid_collection_then_resumed(tmp_path):
    server = start_server(tmp_path)
    out = tmp_path / "c"
    n = 200
    args = [f"remote.url={server.url}", "concurrency=8"]
    traj = out / "trajectories.jsonl"
    err = tmp_path / "collect.err"
    proc = subprocess.Popen(
        collect_cmd(out, n, *args, env=REMOTE_CORRIDOR), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=open(err, "w")
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline and (not traj.exists() or traj.read_bytes().count(b"\n") < 30):
            time.sleep(0.05)
        server.proc.kill()  # the env server dies under the collector
        server.proc.wait()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = err.read_text()
    assert proc.returncode == 1, stderr[-3000:]
    assert f"env server {server.url} is unreachable" in stderr and "collection stopped" in stderr
    survived = len(stored_ids(out))
    assert 30 <= survived < n
    assert summary(out)["aborted"].startswith("EnvServerUnavailable")
    restarted = start_server(tmp_path, port=server.port)
    try:
        res = run_collect(out, n, *args, env=REMOTE_CORRIDOR)
        assert res.returncode == 0, res.stderr[-3000:]
    finally:
        restarted.stop()
    ids = stored_ids(out)
    assert len(ids) == len(set(ids)) == n
    eps = list(TrajectoryStore(out / "trajectories.jsonl").read())
    assert all(e.env_id == "agentsim-test/Corridor-v0" for e in eps)


def _ray_worker_pids() -> list[int]:
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if f.read().startswith(b"ray::EpisodeActor"):
                        pids.append(int(d))
            except OSError:
                continue
    return pids


@pytest.fixture
def ray_available():
    pytest.importorskip("ray", reason="executor=ray needs the 'ray' extra")


def test_ray_executor_survives_a_killed_worker_and_yields_exactly_n(tmp_path, ray_available):
    out = tmp_path / "c"
    n = 300
    traj = out / "trajectories.jsonl"
    err = tmp_path / "collect.err"
    proc = subprocess.Popen(
        collect_cmd(out, n, "executor=ray", "workers=2", "concurrency=4"),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=open(err, "w"),
    )
    killed = None
    try:
        deadline = time.time() + 180
        while time.time() < deadline and killed is None and proc.poll() is None:
            if traj.exists() and traj.read_bytes().count(b"\n") >= 20 and _ray_worker_pids():
                killed = _ray_worker_pids()[0]
                os.kill(killed, signal.SIGKILL)  # a Ray worker dies mid-run
            time.sleep(0.05)
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = err.read_text()
    assert killed is not None, "no Ray worker was found to kill"
    assert proc.returncode == 0, stderr[-3000:]
    ids = stored_ids(out)
    assert len(ids) == len(set(ids)) == n
    assert summary(out)["executor"] == "ray"


def test_ray_and_local_executors_produce_the_same_episodes(tmp_path, ray_available):
    a, b = tmp_path / "local", tmp_path / "ray"
    assert run_collect(a, 12, "concurrency=3").returncode == 0
    res = run_collect(b, 12, "executor=ray", "workers=2", "concurrency=4")
    assert res.returncode == 0, res.stderr[-3000:]

    def key(out):
        return {
            e.episode_id: ([s.action for s in e.steps], e.outcome.reward, e.config_hash)
            for e in TrajectoryStore(out / "trajectories.jsonl").read()
        }

    assert key(a) == key(b)
