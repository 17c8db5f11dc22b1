"""`python -m societies.run`: outputs, the trajectory schema (loads with the exports), config errors."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from agents.config import ConfigError, validate_config
from agents.trajectories.export import read_parquet, step_rows, to_agentgym, write_parquet
from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
from societies.config import SocietyRunConfig
from societies.run import run_society

ROOT = Path(__file__).resolve().parents[2]


def cfg(tmp_path: Path, **kw) -> SocietyRunConfig:
    return validate_config(SocietyRunConfig, {"out": str(tmp_path / "run"), **kw})


@pytest.mark.parametrize("scenario", ["opinion", "diffusion", "cooperation"])
def test_a_run_writes_events_metrics_plots_and_trajectories(scenario: str, tmp_path: Path) -> None:
    c = cfg(
        tmp_path,
        scenario=scenario,
        agents=60,
        rounds=12,
        seed=3,
        trajectory_agents=60,
        diffusion={"p": 0.6, "seeds": 3},
    )
    summary = run_society(c)
    out = Path(c.out)
    for name in ("events.sqlite", "metrics.json", "metrics.png", "network.png", "summary.json", TRAJECTORIES):
        assert (out / name).stat().st_size > 0, name
    assert summary["rounds_played"] >= 2
    if scenario == "opinion":
        assert (out / "opinions.png").exists()
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["rounds"][0] == 0 and len(metrics["rounds"]) == summary["rounds_played"] + 1
    assert all(len(v) == len(metrics["rounds"]) for v in metrics["series"].values())
    with sqlite3.connect(out / "events.sqlite") as db:
        n_events = db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        names = {r[0] for r in db.execute("SELECT DISTINCT name FROM metrics")}
    assert n_events > 0 and names == set(metrics["series"])
    episodes = list(TrajectoryStore(out / TRAJECTORIES).read(strict=True))
    assert 0 < len(episodes) <= 60 and summary["trajectories"] == len(episodes)
    ep = episodes[0]
    assert ep.env == f"society-{scenario}" and ep.meta["agent"].startswith("agent_") and ep.instruction
    vocabulary = {
        "opinion": {"keep", "compromise"},
        "diffusion": {"share", "ignore"},
        "cooperation": {"cooperate", "defect"},
    }
    assert {s.action for e in episodes for s in e.steps} <= vocabulary[scenario]
    assert all(s.raw_output == s.action and s.observation for s in ep.steps)
    assert [s.index for s in ep.steps] == list(range(len(ep.steps)))
    last = ep.steps[-1]
    assert last.terminated or last.truncated


def test_trajectories_round_trip_through_the_exports(tmp_path: Path) -> None:
    c = cfg(tmp_path, scenario="cooperation", agents=8, rounds=20, trajectory_agents=8)
    run_society(c)
    episodes = list(TrajectoryStore(Path(c.out) / TRAJECTORIES).read(strict=True))
    assert len(episodes) == 8
    assert sum(ep.outcome.total_reward for ep in episodes) > 0  # payoffs are the steps' rewards
    path = tmp_path / "ep.parquet"
    assert write_parquet(episodes, path) == 8
    assert [e.model_dump() for e in read_parquet(path)] == [e.model_dump() for e in episodes]
    assert len(step_rows(episodes)) == sum(len(e.steps) for e in episodes)
    conv = to_agentgym(episodes[0])["conversations"]
    assert conv[1]["value"] in ("cooperate", "defect")
    from prm.episodes import load_trajectories  # the PRM's reader (no torch needed to read)

    trajs = load_trajectories([c.out])
    assert len(trajs) == 8 and all(len(t) == len(e.steps) for t, e in zip(trajs, episodes))
    assert trajs[0].observations[0] == episodes[0].initial_observation


def test_same_seed_same_outputs(tmp_path: Path) -> None:
    a = run_society(cfg(tmp_path / "a", scenario="diffusion", agents=300, rounds=20, seed=4, plots=False))
    b = run_society(cfg(tmp_path / "b", scenario="diffusion", agents=300, rounds=20, seed=4, plots=False))
    assert a["final_metrics"] == b["final_metrics"]
    ta = (tmp_path / "a/run" / TRAJECTORIES).read_text().splitlines()
    tb = (tmp_path / "b/run" / TRAJECTORIES).read_text().splitlines()
    strip = lambda line: {k: v for k, v in json.loads(line).items() if k not in ("started_at", "finished_at", "stats")}  # noqa: E731
    assert [strip(x) for x in ta] == [strip(x) for x in tb]


def test_parquet_event_log_and_sparse_activity(tmp_path: Path) -> None:
    c = cfg(tmp_path, scenario="opinion", agents=200, rounds=5, activity=0.2, event_log="parquet", plots=False)
    run_society(c)
    events = pq.read_table(Path(c.out) / "events.parquet").to_pandas()
    per_round = events.groupby("round").size()
    assert per_round.max() < 200 * 0.2 + 5 * (200 * 0.2 * 0.8) ** 0.5  # only the active fifth acted
    assert set(events["action"]) <= {"keep", "compromise", "opinion"}


@pytest.mark.parametrize("event_log", ["sqlite", "parquet"])
def test_the_scenarios_state_is_logged_per_round(event_log: str, tmp_path: Path) -> None:
    """Each round's `node_state` of agents 0..state_agents-1 (here opinions), from round 0, and what it means."""
    from societies.run import SocietyRun

    c = cfg(tmp_path, scenario="opinion", agents=20, rounds=4, seed=2, state_agents=8, event_log=event_log, plots=False)
    run = SocietyRun(c)
    seen = [run.sc.node_state()[:8].tolist()]
    while not run.done:
        run.play_round()
        seen.append(run.sc.node_state()[:8].tolist())
    run.finish()
    assert seen[0] != seen[-1]  # opinions moved, so the rows below are per round, not one copy
    out = Path(c.out)
    if event_log == "sqlite":
        with sqlite3.connect(out / "events.sqlite") as db:
            rows = db.execute("SELECT round, agent, value FROM states ORDER BY round, agent").fetchall()
            assert db.execute("SELECT value FROM meta WHERE key = 'state'").fetchone() == ("opinion",)
    else:
        t = pq.read_table(out / "states.parquet")
        rows = list(zip(*(t.column(k).to_pylist() for k in ("round", "agent", "value"))))
        assert t.schema.metadata[b"state"] == b"opinion"
    assert rows == [(r, a, seen[r][a]) for r in range(5) for a in range(8)]


@pytest.mark.parametrize(
    "bad",
    [
        {"agents": 1},
        {"scenario": "market"},
        {"opinion": {"threshold": 0}},
        {"bogus": 1},
        {"graph": {"kind": "star"}},
        {"agents": True},
    ],
)
def test_config_mistakes_are_named(bad: dict, tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        cfg(tmp_path, **bad)


def test_unknown_strategy_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown IPD strategies"):
        run_society(cfg(tmp_path, scenario="cooperation", cooperation={"strategies": ["tit_for_tat", "nice_guy"]}))


def test_the_command_line(tmp_path: Path) -> None:
    """Hydra overrides as the docs write them; a mistake is one `error:` line and exit code 2."""
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "cli"
    ok = subprocess.run(
        [sys.executable, "-m", "societies.run", "scenario=diffusion", "agents=500", "rounds=10", "seed=1",
         f"out={out}", "diffusion.p=0.3", "graph.kind=watts_strogatz", "trajectory_agents=5"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert json.loads((out / "summary.json").read_text())["config"]["graph"]["kind"] == "watts_strogatz"
    bad = subprocess.run(
        [sys.executable, "-m", "societies.run", "agents=0", f"out={tmp_path / 'bad'}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.strip().startswith("error:") and "agents" in bad.stderr
