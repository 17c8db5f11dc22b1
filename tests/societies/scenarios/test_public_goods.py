"""Public goods with reputation: the game's exact payoff facts and two classic results of rule societies.

Every run is seeded, so each check is deterministic. Known results checked:
(a) exact: with r / G < 1 a free rider earns strictly more than a contributor in the same group,
    unilateral free riding always pays c (1 - r / G), and the payoffs conserve the pot;
(b) the decay of contributions under random regrouping (conditional cooperators with a
    self-serving bias plus free riders; Fischbacher & Gächter 2010);
(c) reputation (public image, contribution-based grouping) sustains cooperation in the same population.
"""

from __future__ import annotations

import json
import sqlite3
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

from agents.config import ConfigError, validate_config
from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
from envs.contract import check_text_env
from societies.config import SocietyRunConfig
from societies.env import Moves, SocietyEnv
from societies.rules import play_round, text_actions
from societies.run import run_society
from societies.scenarios.public_goods import (
    ALL,
    CONTRIBUTE,
    DEFAULT_PG_STRATEGIES,
    HALF,
    NONE,
    PublicGoodsScenario,
    PublicGoodsStrategies,
)

SEAT_ID = "societies-test/PublicGoodsSeat-v0"
if SEAT_ID not in gym.registry:
    gym.register(id=SEAT_ID, entry_point="societies.gym_conversions:SocietyAgentEnv", max_episode_steps=200)


def pg_env(n: int = 12, rounds: int = 8, reputation: bool = False, labels: list[str] | None = None) -> SocietyEnv:
    return SocietyEnv(PublicGoodsScenario(n, reputation=reputation, labels=labels), rounds)


def society(
    strategies: list[str], n: int, rounds: int, reputation: bool, seed: int
) -> tuple[PublicGoodsScenario, list[dict[str, float]]]:
    """A rule society played to the end with the config's defaults (bias 0.9, start 0.6 +- 0.2)."""
    labels = [strategies[i % len(strategies)] for i in range(n)]
    sc = PublicGoodsScenario(n, reputation=reputation, labels=labels)
    env = SocietyEnv(sc, rounds)
    env.start(seed)
    rule = PublicGoodsStrategies(labels, bias=0.9, start=0.6, spread=0.2)
    rng = np.random.default_rng([seed, 1])
    series = []
    while env.agents:
        play_round(env, rule, rng)
        series.append(sc.metrics())
    return sc, series


# ------------------------------------------------------------------------------ (a) exact payoffs
@pytest.mark.parametrize("reputation", [False, True])
def test_free_riding_dominates_and_payoffs_conserve_the_pot(reputation: bool) -> None:
    n, g, r, e = 40, 4, 1.6, 20.0
    env = SocietyEnv(PublicGoodsScenario(n, group_size=g, r=r, endowment=e, reputation=reputation), 5)
    env.start(3)
    draw = np.random.default_rng(0)
    for _ in range(4):
        sc = env.scenario
        idx = sc.active
        tokens = draw.integers(0, 21, size=idx.size).astype(float)
        tokens[draw.random(idx.size) < 0.25] = 0.0  # some free riders in most groups
        members = sc.members.copy()
        snap = env.snapshot()
        pay = env.step_moves(Moves(idx, np.full(idx.size, CONTRIBUTE, np.int8), tokens)).rewards
        c = np.zeros(n)
        c[idx] = tokens
        cm, pm = c[members], pay[members]
        pots = cm.sum(axis=1)
        # conservation: the group's payoffs are its endowments plus what the multiplier added to the pot
        assert np.allclose(pm.sum(axis=1), g * e + (r - 1) * pots, rtol=0, atol=1e-9)
        # same share for everyone in a group: payoff differences are exactly the contribution differences
        assert np.allclose(pm - pm[:, :1], -(cm - cm[:, :1]), rtol=0, atol=1e-9)
        free, gives = cm == 0, cm > 0
        for k in np.flatnonzero(free.any(axis=1) & gives.any(axis=1)):
            assert pm[k][free[k]].min() > pm[k][gives[k]].max()
        # unilateral deviation: the same round with one contributor giving nothing pays it c (1 - r / G) more
        j = int(idx[np.argmax(tokens)])
        env.restore(snap)
        dev = tokens.copy()
        dev[np.searchsorted(idx, j)] = 0.0
        pay_dev = env.step_moves(Moves(idx, np.full(idx.size, CONTRIBUTE, np.int8), dev)).rewards
        assert pay_dev[j] - pay[j] == pytest.approx(c[j] * (1 - r / g), abs=1e-9) and pay_dev[j] > pay[j]


def test_shortcuts_absent_members_and_bad_actions() -> None:
    """Shortcuts give 0, E/2, E; a member with no move earns 0 and the pot is still split by G."""
    env = pg_env(n=4, rounds=3)
    _, infos = env.reset(seed=0)
    assert infos["agent_0"]["available_actions"] == ["contribute_none", "contribute_half", "contribute_all"]
    assert infos["agent_0"]["action_templates"] == ["contribute[...]"]
    sc = env.scenario
    assert sc.amounts(Moves(np.arange(3), np.array([NONE, HALF, ALL], np.int8))).tolist() == [0.0, 10.0, 20.0]
    acts = {"agent_0": "contribute_all", "agent_1": "contribute[5]", "agent_2": "contribute_none", "agent_3": "give 3"}
    _, rewards, _, _, infos = env.step(acts)
    assert "error" in infos["agent_3"] and rewards["agent_3"] == 0.0
    share = 1.6 * 25 / 4
    assert [rewards[f"agent_{i}"] for i in range(3)] == pytest.approx([share, 15 + share, 20 + share])
    for bad, why in (("contribute[25]", "between 0 and 20"), ("contribute[lots]", "not a number")):
        _, _, _, _, infos = env.step({"agent_0": bad})
        assert why in infos["agent_0"]["error"]


# ------------------------------------------------------------------- (b) decay, (c) reputation
def test_contributions_decay_under_random_regrouping() -> None:
    """Conditional cooperators (self-serving bias 0.9) and 20% free riders, 100 agents, random groups of 4.

    Measured (seed 0): 0.475 of the endowment in round 1, 0.34 in round 2, 0.10 in round 10, 0.007
    over rounds 26-30; the conditional cooperators alone start at 0.59."""
    _, s = society(["conditional"] * 4 + ["free_rider"], 100, 30, reputation=False, seed=0)
    mean = np.array([m["mean_contribution"] for m in s])
    assert 0.4 <= mean[0] <= 0.55  # starts near half the endowment
    assert mean[9] < 0.5 * mean[0]  # halved within ten rounds
    assert mean[-5:].mean() < 0.05  # and nearly gone by round 30
    assert np.all(np.diff(mean) < 0)  # falling every round
    assert s[0]["contribution_conditional"] == pytest.approx(0.6, abs=0.05) and s[0]["contribution_free_rider"] == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reputation_sustains_cooperation(seed: int) -> None:
    """The default population (40% conditional, 40% reputation-aware conditional, 20% free riders), 100 agents.

    Measured, mean contribution over rounds 26-30 with / without reputation: seed 0 0.28 / 0.007,
    seed 1 0.29 / 0.007, seed 2 0.30 / 0.007. With reputation, round 30: reputation-aware cooperators
    0.55-0.59, plain conditional cooperators 0.14, mean payoff 23.3-23.5 (20.06 without)."""
    strategies = list(DEFAULT_PG_STRATEGIES)
    _, off = society(strategies, 100, 30, reputation=False, seed=seed)
    sc, on = society(strategies, 100, 30, reputation=True, seed=seed)
    last_on = np.mean([m["mean_contribution"] for m in on[-5:]])
    last_off = np.mean([m["mean_contribution"] for m in off[-5:]])
    assert last_on > 0.2 and last_on > 10 * last_off
    assert on[0]["mean_contribution"] == pytest.approx(off[0]["mean_contribution"])  # same first round: no record
    assert on[-1]["contribution_reputation_conditional"] > 0.4
    assert on[-1]["contribution_free_rider"] == 0 and on[-1]["reputation_correlation"] > 0.9
    # the groups are sorted by reputation: no free rider shares a group with a reputation-aware cooperator
    kind = np.array([strategies[i % len(strategies)] for i in range(100)])
    groups = kind[sc.members]
    assert not np.any((groups == "free_rider").any(axis=1) & (groups == "reputation_conditional").any(axis=1))


# ----------------------------------------------------------------------------- env contract
def test_parallel_api_and_seed_tests_pass() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(pg_env(reputation=True), num_cycles=60)
    parallel_seed_test(lambda: pg_env(reputation=True), num_cycles=20)


@pytest.mark.parametrize("reputation", [False, True])
def test_text_path_and_array_path_give_the_same_run(reputation: bool) -> None:
    labels = [DEFAULT_PG_STRATEGIES[i % 5] for i in range(14)] + ["cooperator"] * 2
    fast, text = pg_env(16, 10, reputation, labels), pg_env(16, 10, reputation, labels)
    rule = PublicGoodsStrategies(labels, spread=0.2)
    fast.start(7)
    _, infos = text.reset(seed=7)
    r1, r2 = np.random.default_rng(9), np.random.default_rng(9)
    while fast.agents:
        res = fast.step_moves(rule.decide(fast.scenario, fast.scenario.active, r1))
        _, rewards, _, _, infos = text.step(text_actions(text, rule.decide(text.scenario, text.scenario.active, r2)))
        assert not any("error" in i for i in infos.values())
        assert np.array_equal(text.scenario.node_state(), fast.scenario.node_state())
        assert [rewards[a] for a in sorted(rewards, key=text.index)] == res.rewards.tolist()
    assert not text.agents


def test_observations_show_reputations_only_when_public() -> None:
    env = pg_env(8, 4, reputation=True)
    env.reset(seed=1)
    obs, _, _, _, infos = env.step({a: "contribute_half" for a in env.agents})
    assert "reputation 0.50" in obs["agent_0"] and "Your reputation: 0.50" in obs["agent_0"]
    assert "formed by reputation" in infos["agent_0"]["instruction"]
    env = pg_env(8, 4, reputation=False)
    env.reset(seed=1)
    obs, _, _, _, _ = env.step({a: "contribute_half" for a in env.agents})
    assert "reputation" not in obs["agent_0"] and "earned" in obs["agent_0"]


def test_a_public_goods_seat_keeps_the_single_agent_contract() -> None:
    check_text_env(gym.make(SEAT_ID, scenario="public_goods", agents=6, rounds=12, public_goods={"reputation": True}))


# ------------------------------------------------------------------------------------ runner
def test_the_runner_writes_every_output(tmp_path: Path) -> None:
    out = tmp_path / "pg"
    cfg = validate_config(
        SocietyRunConfig,
        {"out": str(out), "scenario": "public_goods", "agents": 40, "rounds": 30, "public_goods": {"reputation": True}},
    )
    summary = run_society(cfg)
    for name in ("events.sqlite", "metrics.json", "metrics.png", "network.png", "summary.json", TRAJECTORIES):
        assert (out / name).stat().st_size > 0, name
    metrics = json.loads((out / "metrics.json").read_text())
    assert len(metrics["rounds"]) == 31 and summary["rounds_played"] == 30
    assert {f"contribution_{s}" for s in set(DEFAULT_PG_STRATEGIES)} <= set(metrics["series"])
    assert summary["final_metrics"]["mean_contribution"] > 0.15
    with sqlite3.connect(out / "events.sqlite") as db:
        assert {r[0] for r in db.execute("SELECT DISTINCT action FROM events")} == {"contribute"}
    episodes = list(TrajectoryStore(out / TRAJECTORIES).read(strict=True))
    assert len(episodes) == 40 and episodes[0].env == "society-public_goods"
    assert all(s.action.startswith("contribute[") for e in episodes for s in e.steps)
    assert sum(e.outcome.total_reward for e in episodes) == pytest.approx(
        sum(v * 40 for v in metrics["series"]["mean_payoff"][1:])
    )


@pytest.mark.parametrize(
    "bad", [{"r": 4}, {"r": 1}, {"group_size": 1}, {"strategies": ["saint"]}, {"strategies": []}, {"bogus": 1}]
)
def test_config_mistakes_are_named(bad: dict, tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        validate_config(SocietyRunConfig, {"out": str(tmp_path), "scenario": "public_goods", "public_goods": bad})
