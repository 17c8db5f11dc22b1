"""The small-town day: the Parallel API and text contract, the rule's known result (the news passes along
every conversation with an informed agent, the informed come to the party), and the runner with scripted
seats (reflections, report, resume)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

from agents.config import validate_config
from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
from envs.contract import MAX_ACTION_CHARS
from societies.config import SocietyRunConfig, build
from societies.env import SocietyEnv
from societies.personas import Persona
from societies.rules import play_round, text_actions
from societies.run import SocietyRun, run_society
from societies.scenarios.town import PLACES, RoutineStep, TownRoutine, TownScenario, TownTraits, town_personas

QUESTION_PARTY = "Do you know about a party today?"


def town_env(n: int = 8, rounds: int = 50, **kw: Any) -> SocietyEnv:
    return SocietyEnv(TownScenario(town_personas(n), **kw), rounds)


def play(env: SocietyEnv, rule: TownRoutine | None = None, seed: int = 0) -> TownScenario:
    """A whole day of rule agents on the fast path."""
    rule = rule or TownRoutine()
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    while env.agents:
        play_round(env, rule, rng)
    sc = env.scenario
    assert isinstance(sc, TownScenario)
    return sc


def cfg(out: Path, **kw: Any) -> SocietyRunConfig:
    return validate_config(SocietyRunConfig, {"out": str(out), "plots": False, "scenario": "town", **kw})


# -- the env's contract -----------------------------------------------------------------------------
def test_parallel_api_and_seed_tests_pass() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(town_env(5), num_cycles=40)
    parallel_seed_test(lambda: town_env(5), num_cycles=10)


def test_every_info_lists_actions_and_templates() -> None:
    env = town_env(5)
    obs, infos = env.reset(seed=0)
    for a in env.agents:
        info = infos[a]
        assert info["instruction"].startswith("You are ") and "go[place]" in info["instruction"]
        assert "wait" in info["available_actions"] and any(x.startswith("go[") for x in info["available_actions"])
        assert any(x.startswith("do[") for x in info["available_actions"])
        assert info["action_templates"] == ["plan[...]"]  # say[...] only in a conversation
        assert "It is 7:00" in obs[a] and "Your plan for today: 7:00" in obs[a]
    assert (
        "You know this news: Isabella Rodriguez is hosting a Valentine's Day party at the cafe at 17:00."
        in (infos["agent_0"]["instruction"])
    )
    assert "news" not in infos["agent_1"]["instruction"]
    # Tom and Sam share Cedar house: each may talk with the other, and then say[...] is offered
    obs, _, _, _, infos = env.step({"agent_3": "talk[Sam Moore]"})
    assert "talk[Sam Moore]" not in infos["agent_3"]["available_actions"]
    assert infos["agent_3"]["action_templates"] == ["say[...]", "plan[...]"]
    assert "You are in a conversation with Tom Moreno." in obs["agent_4"]
    obs, _, _, _, infos = env.step({"agent_3": "say[Lovely morning, Sam!]", "agent_4": "wait"})
    assert 'Tom Moreno: "Lovely morning, Sam!"' in obs["agent_4"] and 'You: "Lovely morning, Sam!"' in obs["agent_3"]


@pytest.mark.parametrize(
    "bad, says",
    [
        ("fly[moon]", "unknown action"),
        ("go[Paris]", "unknown place 'Paris'"),
        ("go[library]", "is not next to the Willow house"),
        ("talk[Klaus Mueller]", "is not at the Willow house"),
        ("talk[Isabella]", "cannot talk with yourself"),
        ("talk[Nobody]", "nobody called 'Nobody'"),
        ("say[hello]", "not in a conversation"),
        ("do[jog]", "is not something to do at the Willow house"),
        ("plan[]", "needs a plan"),
        ("plan[" + "x" * 400 + "]", "at most 300 characters"),
        ("x" * (MAX_ACTION_CHARS + 1), "too long"),
        (42, "must be a string"),
    ],
)
def test_a_bad_action_is_a_clear_error_and_changes_nothing(bad: object, says: str) -> None:
    env = town_env(5)
    env.reset(seed=0)
    sc = env.scenario
    assert isinstance(sc, TownScenario)
    before = (sc.loc.copy(), sc.partner.copy(), sc.plan_line.copy())
    obs, rewards, terms, truncs, infos = env.step({"agent_0": bad})
    err = infos["agent_0"]["error"]
    assert err.startswith("Invalid action") and says in err and "Allowed actions" in err
    assert len(err) < 1500
    assert sc.loc[0] == before[0][0] and sc.partner[0] == before[1][0] and sc.plan_line[0] == before[2][0]
    assert "error" not in infos["agent_1"]


def test_say_is_bounded_and_names_work_three_ways() -> None:
    env = town_env(5, max_say_chars=20)
    env.reset(seed=0)
    env.step({"agent_3": "talk[Sam]"})  # first name
    _, _, _, _, infos = env.step({"agent_3": "say[" + "a" * 21 + "]"})
    assert "at most 20 characters" in infos["agent_3"]["error"]
    env.reset(seed=0)
    _, _, _, _, infos = env.step({"agent_3": "talk[agent_4]"})  # agent id
    assert "error" not in infos["agent_3"] and env.scenario.partner[3] == 4


def test_plans_show_in_the_observation() -> None:
    env = town_env(5)
    env.reset(seed=0)
    obs, *_ = env.step({"agent_1": "plan[Study all day, then the party at 17:00.]"})
    assert "Your plan: Study all day, then the party at 17:00." in obs["agent_1"]
    assert "Your plan for today: 7:00" in obs["agent_2"]


def test_text_path_and_moves_path_give_the_same_day() -> None:
    a = play(town_env(8))
    env = town_env(8)
    env.reset(seed=0)
    rule = TownRoutine()
    rng = np.random.default_rng(0)
    while env.agents:
        sc = env.scenario
        env.step(text_actions(env, rule.decide(sc, sc.active, rng)))
    b = env.scenario
    assert isinstance(b, TownScenario)
    assert a.metrics() == b.metrics() and a.report() == b.report()
    assert np.array_equal(a.learned, b.learned) and np.array_equal(a.attended, b.attended)


def test_snapshot_and_restore_branch_the_day() -> None:
    env = town_env(8)
    env.reset(seed=0)
    rule, rng = TownRoutine(), np.random.default_rng(0)
    for _ in range(6):
        play_round(env, rule, rng)
    snap, rng_state = env.snapshot(), rng.bit_generator.state
    while env.agents:
        play_round(env, rule, rng)
    first = env.scenario.report()
    env.restore(snap)
    rng.bit_generator.state = rng_state
    assert env.round == 6
    while env.agents:
        play_round(env, rule, rng)
    assert env.scenario.report() == first


# -- the known result ------------------------------------------------------------------------------
def same_place_path(n: int) -> list[Persona]:
    """n people who spend the whole day at one house and know only their neighbours on a path 0-1-...-(n-1)."""
    names = [f"P{k}" for k in range(n)]
    out = []
    for k in range(n):
        known = [names[j] for j in (k - 1, k + 1) if 0 <= j < n]
        traits = TownTraits(
            occupation="a neighbour",
            home="Willow house",
            routine=[RoutineStep(hour=7, place="Willow house", activity="relax")],
            acquaintances=known,
        )
        out.append(Persona(name=names[k], traits=traits.model_dump()))
    return out


def test_news_walks_a_path_two_rounds_per_hop_and_everyone_comes() -> None:
    """Everyone together all day, acquaintances on a path: agent k hears the news at round 2k - 1 from k - 1
    (a conversation takes a round to open and one to speak), and all of them are at the party."""
    n = 6
    sc = play(SocietyEnv(TownScenario(same_place_path(n), party_location="Willow house", party_hour=17), 50))
    assert sc.knows.all()
    assert sc.learned.tolist() == [0] + [2 * k - 1 for k in range(1, n)]
    assert sc.told_by.tolist() == [-1] + list(range(n - 1))
    assert sc.attended_knowing.all() and sc.metrics()["party_attendance"] == n


def test_default_town_news_spreads_only_through_conversations_and_the_informed_come() -> None:
    """The cast of 8 on the default day (seeded, deterministic): every conversation in which an informed agent
    speaks informs the listener; the news travels only along acquaintances; everyone who knew in time and goes
    to parties is at the party; the others present were there by their routine."""
    sc = play(town_env(8))
    rep = sc.report()
    knew_at = np.where(sc.knows, sc.learned, 10**9)
    for u in rep["utterances"]:
        r = int(u["time"].split(":")[0]) - 7
        s, j = sc.names.index(u["speaker"]), sc.names.index(u["listener"])
        if knew_at[s] < r or (knew_at[s] == 0 and s < sc.n_informed):
            assert knew_at[j] <= r, u  # a conversation with an informed agent always passes the news on
    for k in np.flatnonzero(sc.told_by >= 0).tolist():
        j = int(sc.told_by[k])
        assert sc.know[k, j] and sc.learned[j] < sc.learned[k]  # told by an acquaintance who knew before
    assert sc.mentions_uninformed == 0  # rule agents never make the news up
    in_time = sc.knows & (sc.learned <= sc.party_round - 3)
    assert np.array_equal(sc.attended_knowing & in_time, in_time & sc.willing)
    assert not (sc.attended_knowing & ~sc.willing).any()
    window = slice(sc.party_round - 1, sc.party_end)  # one round of leaving early for the next routine place
    by_routine = (sc.route_loc[:, window] == sc.party_loc).any(axis=1)
    assert np.all(by_routine[sc.attended & ~sc.attended_knowing])
    # the measured day (regression values, documented in docs/societies.md)
    m = sc.metrics()
    assert (m["informed"], m["party_attendance"], m["party_guests_informed"]) == (4, 5, 4)
    assert 1 < sc.knows.sum() < sc.n  # neither nobody nor everybody: the routines decide who meets whom


def test_config_and_scenario_mistakes_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="end_hour"):
        cfg(tmp_path, town={"start_hour": 10, "end_hour": 9})
    with pytest.raises(ValueError, match="party_hour"):
        cfg(tmp_path, town={"party_hour": 23.5})
    with pytest.raises(ValueError, match="unknown party_location"):
        build(cfg(tmp_path, town={"party_location": "moon"}))
    with pytest.raises(ValueError, match="30-minute step"):
        TownScenario(town_personas(4), step_minutes=30, party_hour=17.25)
    assert set(PLACES) >= {"cafe", "park", "library", "town hall"}


def test_more_agents_than_the_cast_stay_connected() -> None:
    sc = TownScenario(town_personas(30, seed=3))
    assert len(set(sc.names)) == 30
    import networkx as nx

    assert nx.is_connected(sc.graph.to_networkx())


# -- the runner: scripted seats, reflections, resume ----------------------------------------------
SCRIPTED = {
    "agents": 6,
    "brain": {"name": "scripted"},
    "memory": {"name": "working+reflective", "reflective": {"reflect_every": 8}},
    "trajectory_agents": 6,
}


def records(out: Path) -> list[dict]:
    recs = []
    for r in TrajectoryStore(out / TRAJECTORIES).read(strict=True):
        d = r.model_dump(exclude={"started_at", "finished_at"})
        d["stats"].pop("wall_time_s")
        d["stats"].pop("brain_time_s")
        for step in d["steps"]:
            step.pop("latency_s")  # the scripted brain's measured time
        recs.append(d)
    return recs


def test_scripted_seats_live_the_rule_day_and_reflect(tmp_path: Path) -> None:
    rule = run_society(cfg(tmp_path / "rule", agents=6))
    seats = run_society(cfg(tmp_path / "seats", **SCRIPTED))
    assert seats["final_metrics"] == rule["final_metrics"] and seats["rounds_played"] == 16 and seats["terminated"]
    assert (
        json.loads((tmp_path / "seats" / "metrics.json").read_text())["series"]
        == json.loads((tmp_path / "rule" / "metrics.json").read_text())["series"]
    )
    # 32 trace events a seat (action + observation per round): 4 reflections in the day, 1 at its end
    assert seats["brain"]["reflections"] == 6 * 5
    refl = json.loads((tmp_path / "seats" / "reflections.json").read_text())
    assert set(refl) == {f"agent_{k}" for k in range(6)} and all(r["lessons"] for r in refl.values())
    rep = json.loads((tmp_path / "seats" / "report.json").read_text())
    assert rep["news"].startswith("Isabella Rodriguez is hosting") and rep["utterances"]
    assert (tmp_path / "rule" / "report.json").read_text() == (tmp_path / "seats" / "report.json").read_text()


def test_a_resumed_day_equals_the_uninterrupted_one(tmp_path: Path) -> None:
    """Cut after round 7 (only the checkpoint survives, with mid-day reflections in it), resumed: same day."""
    ref = run_society(cfg(tmp_path / "ref", **SCRIPTED))
    out = tmp_path / "cut"
    run = SocietyRun(cfg(out, **SCRIPTED))
    for _ in range(7):
        run.play_round()
    run.close()
    resumed = run_society(cfg(out, resume=True, **SCRIPTED))
    assert resumed["resumed_from_round"] == 7 and resumed["final_metrics"] == ref["final_metrics"]
    assert records(out) == records(tmp_path / "ref")
    for name in ("metrics.json", "report.json", "reflections.json"):
        assert (out / name).read_text() == (tmp_path / "ref" / name).read_text(), name


def test_interviews_read_the_day(tmp_path: Path) -> None:
    run = SocietyRun(cfg(tmp_path / "run", **SCRIPTED))
    for _ in range(3):
        run.play_round()
    answer = run.interview("agent_1", "Do you know about a party?")
    assert answer.startswith("You are Klaus Mueller.") and "It is 10:00" in answer
    run.close()


def test_a_seat_whose_memory_reflects_with_its_brain_can_be_interviewed(tmp_path: Path) -> None:
    """The reflective memory holds the seat's brain (a model, not copyable): the interview's memory copy shares
    it, reads the day, and leaves the memory as it was."""
    from agents.brains.registry import BRAIN_REGISTRY
    from tests.societies.brains import register

    register()
    try:
        c = cfg(tmp_path / "run", agents=4, brain={"name": "counting"}, llm_agents=2, memory=SCRIPTED["memory"])
        run = SocietyRun(c)
        for _ in range(5):  # 10 trace events: one reflection in the day so far
            run.play_round()
        assert run.seats is not None
        i = int(run.seats.seats[0])
        memory = run.seats.agents[i].memory
        assert memory is not None
        before = json.dumps(memory.save_state(), sort_keys=True)
        answer = run.interview(i, QUESTION_PARTY)
        assert isinstance(answer, str) and answer
        assert json.dumps(memory.save_state(), sort_keys=True) == before
        assert run.seats.reflections()[i]["reflections"] == 1
        run.close()
    finally:
        BRAIN_REGISTRY.unregister("counting")
