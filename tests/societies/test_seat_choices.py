"""Seats that choose: a scenario's free slot offered as discrete ranked actions (`Scenario.choices`,
`SocietyEnv.offer_choices`, `seat_actions=ranked`), with the real embedded model, and rule runs left as they were."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agents.config import ConfigError, validate_config
from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
from societies.config import SocietyRunConfig
from societies.env import WAIT, SocietyEnv
from societies.graphs import complete_graph
from societies.run import config_hash, run_society
from societies.scenarios.opinion import CHOICES, OpinionScenario
from societies.scenarios.public_goods import PublicGoodsScenario


def cfg(out: Path, **kw: Any) -> SocietyRunConfig:
    return validate_config(SocietyRunConfig, {"out": str(out), "plots": False, **kw})


def outputs(out: Path) -> tuple[list[dict], Any, list[tuple]]:
    """Trajectories (less wall-clock fields), the metrics file and every event row of a run."""
    recs = []
    for r in TrajectoryStore(out / TRAJECTORIES).read(strict=True):
        d = r.model_dump(exclude={"started_at", "finished_at"})
        d["stats"].pop("wall_time_s")
        d["stats"].pop("brain_time_s")
        recs.append(d)
    with sqlite3.connect(out / "events.sqlite") as db:
        tables = [t for (t,) in db.execute("select name from sqlite_master where type='table' order by name")]
        rows = [(t, *row) for t in tables for row in db.execute(f"select * from {t} order by rowid")]
    return recs, json.loads((out / "metrics.json").read_text()), rows


def test_opinion_offers_a_grid_in_place_of_its_template() -> None:
    env = SocietyEnv(OpinionScenario(complete_graph(4)), 3, offer_choices=True)
    env.reset(seed=0)
    info = env.info("agent_0")
    assert info["available_actions"] == ["keep", "compromise", *CHOICES]
    assert CHOICES[0] == "opinion[0.0]" and CHOICES[-1] == "opinion[1.0]" and len(CHOICES) == 11
    assert info["action_templates"] == []  # nothing left to write
    moves, errors = env.parse_actions({"agent_0": "opinion[0.3]", "agent_1": "opinion[0.35]"})
    assert errors == {} and moves.values().tolist() == [0.3, 0.35]  # a written value is still a valid move
    env.scenario.is_active[2] = False
    assert env.info("agent_2")["available_actions"] == [WAIT] and env.info("agent_2")["action_templates"] == []
    plain = SocietyEnv(OpinionScenario(complete_graph(4)), 3)
    plain.reset(seed=0)
    assert plain.info("agent_0")["available_actions"] == ["keep", "compromise"]
    assert plain.info("agent_0")["action_templates"] == ["opinion[...]"]


def test_public_goods_offers_the_missing_quarters() -> None:
    env = SocietyEnv(PublicGoodsScenario(8, group_size=4, endowment=20.0), 3, offer_choices=True)
    env.reset(seed=0)
    i = int(env.scenario.active[0])
    info = env.info(f"agent_{i}")
    assert info["available_actions"][-2:] == ["contribute[5]", "contribute[15]"] and info["action_templates"] == []
    moves, errors = env.parse_actions({f"agent_{i}": "contribute[15]"})
    assert errors == {} and moves.values().tolist() == [15.0]


def test_seat_actions_rejects_an_unknown_value(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="seat_actions"):
        cfg(tmp_path, seat_actions="grid")


def test_a_rule_run_is_unchanged_by_ranked_seats(tmp_path: Path) -> None:
    """brain=rule renders no seat text: ranked and free give the same trajectories, metrics, events and config hash."""
    base = {"scenario": "opinion", "agents": 16, "rounds": 5, "seed": 3, "trajectory_agents": 6}
    a, b = cfg(tmp_path / "ranked", **base), cfg(tmp_path / "free", seat_actions="free", **base)
    assert config_hash(a) == config_hash(b)
    assert run_society(a)["final_metrics"] == run_society(b)["final_metrics"]
    assert outputs(tmp_path / "ranked") == outputs(tmp_path / "free")


def test_scripted_seats_make_the_same_moves_ranked_or_free(tmp_path: Path) -> None:
    """Rule seats played through Agents (brain=scripted, DeGroot writes opinion[<x>]) move exactly as before."""
    base = {"scenario": "opinion", "agents": 12, "rounds": 4, "seed": 1, "trajectory_agents": 0}
    base |= {"opinion": {"model": "degroot"}, "brain": {"name": "scripted"}, "llm_fraction": 0.5}
    run_society(cfg(tmp_path / "ranked", **base))
    run_society(cfg(tmp_path / "free", seat_actions="free", **base))
    (ra, ma, ea), (rb, mb, eb) = outputs(tmp_path / "ranked"), outputs(tmp_path / "free")
    assert ma == mb and ea == eb
    assert [[s["action"] for s in r["steps"]] for r in ra] == [[s["action"] for s in r["steps"]] for r in rb]
    assert all(s["action"].startswith("opinion[") for r in ra for s in r["steps"])


@pytest.mark.timeout(1800)  # four model decisions take seconds; a machine shared by a training run took minutes
def test_local_brain_ranked_seats_move_only_within_the_offered_set(tmp_path: Path) -> None:
    """The embedded model in two opinion seats for two rounds: every move is one of the listed actions, none refused."""
    pytest.importorskip("llama_cpp")
    c = cfg(
        tmp_path / "run",
        scenario="opinion",
        agents=5,
        rounds=2,
        seed=4,
        trajectory_agents=0,
        brain={"name": "local", "kv_slots": 2, "n_ctx": 2048, "n_threads": 1},
        llm_agents=2,
        cache="off",
    )
    assert c.seat_actions == "ranked"  # the default
    run_society(c)
    recs = [r for r in outputs(Path(c.out))[0] if r["brain"].startswith("local")]
    offered = {"keep", "compromise", *CHOICES}
    assert len(recs) == 2 and all(len(r["steps"]) == 2 for r in recs)
    for r in recs:
        for s in r["steps"]:
            assert s["action"] in offered and s["env_error"] is None and s["parse_error"] is None
            assert {x["text"] for x in s["candidates"]} == offered
