"""Brain-driven agents per seat: mixing with the rule, bounded async calls, the call cache (replay),
resume after SIGKILL, and interviews."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.brains.registry import BRAIN_REGISTRY
from agents.config import ConfigError, validate_config
from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
from societies.cache import CACHE_FILE, CacheMiss, CallCache, cached
from societies.checkpoint import CHECKPOINT, load_checkpoint
from societies.config import SocietyRunConfig
from societies.run import SocietyRun, run_society
from tests.societies.brains import CountingBrain, register

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def counting_brain():
    register()
    CountingBrain.reset_counts()
    yield CountingBrain
    BRAIN_REGISTRY.unregister("counting")  # the registry is process-wide: leave it as other tests expect it


def cfg(out: Path, **kw: Any) -> SocietyRunConfig:
    return validate_config(SocietyRunConfig, {"out": str(out), "plots": False, **kw})


def records(out: Path) -> list[dict]:
    """Trajectories without wall-clock fields (the only thing a replay may change)."""
    recs = []
    for r in TrajectoryStore(out / TRAJECTORIES).read(strict=True):
        d = r.model_dump(exclude={"started_at", "finished_at"})
        d["stats"].pop("wall_time_s")
        d["stats"].pop("brain_time_s")
        recs.append(d)
    return recs


def metrics(out: Path) -> dict:
    return json.loads((out / "metrics.json").read_text())


def test_scripted_seats_play_the_rule_exactly_and_mix_with_rule_agents(tmp_path: Path) -> None:
    """Deffuant through Agents (brain=scripted, prompts, parsing) = Deffuant on the fast path, seat for seat."""
    base = {"scenario": "opinion", "agents": 16, "rounds": 6, "seed": 2, "trajectory_agents": 4}
    rule = run_society(cfg(tmp_path / "rule", **base))
    mixed = run_society(cfg(tmp_path / "mixed", brain={"name": "scripted"}, llm_fraction=0.5, **base))
    assert mixed["final_metrics"] == rule["final_metrics"]
    assert metrics(tmp_path / "mixed")["series"] == metrics(tmp_path / "rule")["series"]
    assert mixed["brain"]["seats"] == 8 and mixed["brain"]["agent_steps"] == 8 * 6
    recs = {r["meta"]["agent"]: r for r in records(tmp_path / "mixed")}
    brains = {r["brain"] for r in recs.values()}
    assert brains == {"rule:deffuant", "scripted:expert(eps=0.0)"}
    seats = {a for a, r in recs.items() if r["brain"].startswith("scripted")}
    assert len(seats) == 8 and set(recs) == {f"agent_{i}" for i in range(4)} | seats
    seat = next(r for r in recs.values() if r["brain"].startswith("scripted"))
    assert len(seat["steps"]) == 6 and seat["steps"][0]["raw_output"].startswith("Action: ")
    assert seat["steps"][0]["candidates"] and seat["steps"][0]["action"] in {"keep", "compromise"}


def test_brain_calls_are_gathered_under_the_semaphore(tmp_path: Path) -> None:
    c = cfg(
        tmp_path / "a",
        scenario="cooperation",
        agents=10,
        rounds=3,
        brain={"name": "counting", "async_delay_s": 0.01},
        max_concurrency=3,
    )
    s = run_society(c)
    assert s["brain"]["agent_steps"] == 30 and CountingBrain.calls == 30
    assert CountingBrain.max_in_flight == 3  # overlapping, and never more than the bound


def test_replay_from_the_cache_makes_no_calls_and_is_identical(tmp_path: Path) -> None:
    out = tmp_path / "run"
    kw: dict[str, Any] = dict(
        scenario="opinion", agents=10, rounds=5, seed=1, brain={"name": "counting"}, memory={"name": "working"}
    )
    first = run_society(cfg(out, **kw))
    calls = CountingBrain.calls
    assert calls == first["brain"]["agent_steps"] == 50 and first["brain"]["cache"]["brain_calls"] == 50
    before_metrics, before_recs = metrics(out), records(out)
    CountingBrain.reset_counts()
    replay = run_society(cfg(out, cache="replay", **kw))
    assert CountingBrain.calls == 0 and replay["brain"]["cache"] == {"hits": 50, "misses": 0, "brain_calls": 0}
    assert replay["final_metrics"] == first["final_metrics"]
    assert metrics(out) == before_metrics and records(out) == before_recs
    print(
        f"\nreplay: first run {calls} brain calls, replay {CountingBrain.calls} calls, cache {replay['brain']['cache']}"
    )
    # a changed config misses the cache: replay mode refuses to call a model
    with pytest.raises(CacheMiss):
        run_society(cfg(out, cache="replay", **{**kw, "seed": 2}))


def test_cache_keys_cover_sampling_parameters(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / CACHE_FILE)
    brain = cached(CountingBrain(), cache)
    msgs = [{"role": "user", "content": "hi"}]
    a = brain.choose(msgs, ["x", "y"], seed=1)  # type: ignore[attr-defined]
    assert brain.choose(msgs, ["x", "y"], seed=1).text == a.text  # type: ignore[attr-defined]
    brain.choose(msgs, ["x", "y"], seed=2)  # type: ignore[attr-defined]
    brain.choose(msgs, ["x", "y"], seed=1, temperature=0.5)  # type: ignore[attr-defined]
    brain.choose(msgs, ["y", "x"], seed=1)  # type: ignore[attr-defined]
    assert CountingBrain.calls == 4 and len(cache) == 4 and cache.stats()["hits"] == 1


def test_interview_leaves_memory_and_agent_state_unchanged(tmp_path: Path) -> None:
    c = cfg(
        tmp_path / "run",
        scenario="opinion",
        agents=6,
        rounds=4,
        brain={"name": "counting"},
        memory={"name": "working"},
        llm_agents=3,
    )
    run = SocietyRun(c)
    for _ in range(3):
        run.play_round()
    assert run.seats is not None
    seat = int(run.seats.seats[0])
    agent = run.seats.agents[seat]
    assert agent.memory is not None
    before = (json.dumps(agent.memory.save_state()), agent._step, agent._feedback, agent.instruction)
    assert len(agent.memory.save_state()["items"]) == 6  # 3 rounds of action + observation
    answer = run.interview(f"agent_{seat}", "Why do you hold your opinion?")
    assert answer.startswith("I am a hash brain")
    after = (json.dumps(agent.memory.save_state()), agent._step, agent._feedback, agent.instruction)
    assert after == before
    rule_agent = next(i for i in range(6) if i not in run.seats.agents)
    assert "deffuant" in run.interview(rule_agent, "Who are you?")
    run.run()
    run.close()


def test_resume_after_sigkill_gives_the_uninterrupted_run(tmp_path: Path) -> None:
    """A real `python -m societies.run` killed with SIGKILL mid-run, resumed: same metrics, events, trajectories."""
    args = {
        "scenario": "opinion",
        "agents": 12,
        "rounds": 30,
        "seed": 5,
        "llm_agents": 6,
        "trajectory_agents": 12,
        "plots": False,
        "brain": {"name": "counting"},
        "memory": {"name": "working", "max_items": 50},  # as the CLI's memory=working preset
    }
    ref = run_society(cfg(tmp_path / "ref", **args))
    ref_calls = CountingBrain.calls
    CountingBrain.reset_counts()

    out = tmp_path / "killed"
    cli = [
        f"scenario={args['scenario']}", f"agents={args['agents']}", f"rounds={args['rounds']}", f"seed={args['seed']}",
        f"llm_agents={args['llm_agents']}", f"trajectory_agents={args['trajectory_agents']}", "plots=false",
        "brain=counting", "memory=working", f"out={out}",
    ]  # fmt: skip
    code = (
        "import sys; from tests.societies.brains import register; register(); "
        "from societies.run import main; sys.argv = ['societies.run', *sys.argv[1:]]; main()"
    )
    env = {**os.environ, "AGENTSIM_TEST_BRAIN_DELAY": "0.02", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", code, *cli], cwd=ROOT, env=env, stderr=subprocess.PIPE)
    killed_after = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        ck = load_checkpoint(out) if (out / CHECKPOINT).exists() else None
        if ck is not None and ck["env"][0]["round"] >= 4:
            os.kill(proc.pid, signal.SIGKILL)
            killed_after = ck["env"][0]["round"]
            break
        time.sleep(0.02)
    proc.wait()
    assert killed_after is not None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
    assert proc.returncode == -signal.SIGKILL
    ck = load_checkpoint(out)
    assert ck is not None and 4 <= ck["env"][0]["round"] < 30 and not (out / "summary.json").exists()
    proc.stderr.close() if proc.stderr else None

    resumed = run_society(cfg(out, resume=True, **args))
    assert resumed["resumed_from_round"] >= 4
    assert resumed["final_metrics"] == ref["final_metrics"]
    assert metrics(out) == metrics(tmp_path / "ref")
    assert records(out) == records(tmp_path / "ref")
    with sqlite3.connect(out / "events.sqlite") as a, sqlite3.connect(tmp_path / "ref" / "events.sqlite") as b:
        q = "SELECT round, agent, action, value FROM events ORDER BY round, agent"
        assert a.execute(q).fetchall() == b.execute(q).fetchall()
        q = "SELECT round, name, value FROM metrics ORDER BY round, name"
        assert a.execute(q).fetchall() == b.execute(q).fetchall()
    # the resumed process paid only for the rounds after the checkpoint (cached calls of the cut round are free)
    seat_steps_left = 6 * (30 - resumed["resumed_from_round"])
    assert CountingBrain.calls <= seat_steps_left < ref_calls
    print(
        f"\nresume: killed after round {killed_after}, resumed from {resumed['resumed_from_round']}, "
        f"brain calls {CountingBrain.calls} (uninterrupted {ref_calls}), cache {resumed['brain']['cache']}"
    )
    assert not (out / CHECKPOINT).exists()  # a finished run leaves its outputs, not a checkpoint


def test_resume_refuses_another_config(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run = SocietyRun(cfg(out, scenario="opinion", agents=6, rounds=5, brain={"name": "counting"}))
    run.play_round()
    run.close()
    assert (out / CHECKPOINT).exists()
    with pytest.raises(ConfigError, match="another config"):
        SocietyRun(cfg(out, scenario="opinion", agents=6, rounds=5, seed=9, brain={"name": "counting"}, resume=True))


def test_rule_runs_resume_too(tmp_path: Path) -> None:
    """No brain (checkpoints asked for): the checkpoint carries the rule's generator and the Parquet buffer."""
    kw: dict[str, Any] = dict(
        scenario="diffusion", agents=200, rounds=12, seed=4, diffusion={"p": 0.5, "seeds": 3}, checkpoint_every=1
    )
    ref = run_society(cfg(tmp_path / "ref", event_log="parquet", **kw))
    out = tmp_path / "cut"
    run = SocietyRun(cfg(out, event_log="parquet", **kw))
    for _ in range(5):
        run.play_round()
    run.close()  # as if killed: only the checkpoint survives
    resumed = run_society(cfg(out, event_log="parquet", resume=True, **kw))
    assert resumed["resumed_from_round"] == 5 and resumed["final_metrics"] == ref["final_metrics"]
    import pyarrow.parquet as pq

    for name in ("events.parquet", "metrics.parquet"):  # pandas' equals: NaN values (no value) compare equal
        assert pq.read_table(out / name).to_pandas().equals(pq.read_table(tmp_path / "ref" / name).to_pandas())
    assert records(out) == records(tmp_path / "ref")


def test_cli_brain_group_and_config_errors(tmp_path: Path) -> None:
    out = tmp_path / "cli"
    r = subprocess.run(
        [sys.executable, "-m", "societies.run", "scenario=cooperation", "agents=6", "rounds=4", "brain=scripted",
         "memory=working", "llm_fraction=0.5", "agent.mode=choose", "plots=false", f"out={out}"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["brain"]["seats"] == 3 and s["config"]["memory"]["name"] == "working"
    assert s["config"]["agent"]["mode"] == "choose" and s["config"]["agent"]["slot_fill"] == "generate"
    bad = subprocess.run(
        [sys.executable, "-m", "societies.run", "brain=nope", f"out={tmp_path / 'bad'}"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert bad.returncode != 0


def test_local_brain_seats_and_interview(tmp_path: Path) -> None:
    """The embedded model in two seats of a small society: valid moves, cached calls, an interview answer."""
    pytest.importorskip("llama_cpp")
    c = cfg(
        tmp_path / "run",
        scenario="cooperation",
        agents=4,
        rounds=2,
        cooperation={"match_length": 2},
        brain={"name": "local", "n_ctx": 2048, "temperature": 0.0},
        llm_agents=2,
        max_concurrency=2,
    )
    run = SocietyRun(c)
    run.play_round()
    assert run.seats is not None
    answer = run.interview(int(run.seats.seats[0]), "Do you trust the others?")
    assert isinstance(answer, str) and answer
    run.run()
    recs = [r for r in records(Path(c.out)) if r["brain"].startswith("local")]
    assert len(recs) == 2
    for r in recs:
        assert all(s["action"] in {"cooperate", "defect"} and s["env_error"] is None for s in r["steps"])
        assert all(s["candidates"] and s["tokens_in"] > 0 for s in r["steps"])
    s = json.loads((Path(c.out) / "summary.json").read_text())
    assert s["brain"]["agent_steps"] == 4 and s["brain"]["cache"]["brain_calls"] == 5  # 4 moves + the interview


def test_seats_are_drawn_by_the_seed() -> None:
    from societies.seats import choose_seats

    a = choose_seats(100, 0.1, None, 0)
    assert a.size == 10 and np.all(np.diff(a) > 0) and np.array_equal(a, choose_seats(100, 0.1, None, 0))
    assert choose_seats(100, 0.1, 3, 0).size == 3 and choose_seats(5, 1.0, None, 0).tolist() == [0, 1, 2, 3, 4]
