"""The society env keeps PettingZoo's Parallel API and, per agent, the single-agent text contract."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

from envs.contract import MAX_ACTION_CHARS
from societies.env import WAIT, Moves, SocietyEnv
from societies.graphs import complete_graph, gnm
from societies.rules import text_actions
from societies.scenarios.cooperation import IPDStrategies
from societies.scenarios.diffusion import DiffusionScenario, IndependentCascade
from societies.scenarios.opinion import COMPROMISE, Deffuant, DeGroot, OpinionScenario
from tests.societies.conftest import MAKERS, cooperation_env, diffusion_env, opinion_env


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_parallel_api_test_passes(name: str) -> None:
    env = MAKERS[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PettingZoo reports API slips as warnings: count them as failures
        parallel_api_test(env, num_cycles=100)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_parallel_seed_test_passes(name: str) -> None:
    parallel_seed_test(MAKERS[name], num_cycles=20)


def test_every_info_keeps_the_contract(make_env) -> None:
    env = make_env()
    obs, infos = env.reset(seed=0)
    assert set(obs) == set(infos) == set(env.possible_agents) == set(env.agents)
    for a in env.agents:
        info = infos[a]
        assert isinstance(obs[a], str) and obs[a]
        assert info["instruction"] and isinstance(info["instruction"], str)
        assert info["available_actions"] and all(isinstance(x, str) for x in info["available_actions"])
        assert isinstance(info["action_templates"], list)
        assert "error" not in info
        assert env.observation_space(a).contains(obs[a])
        if not info["active"]:
            assert info["available_actions"] == [WAIT]


def _first_active(env: SocietyEnv, infos: dict) -> str:
    return next(a for a in env.agents if infos[a]["active"])


@pytest.mark.parametrize("bad", ["fly", "", 3, None, "x" * (MAX_ACTION_CHARS + 1), "opinion[2]", "opinion[abc]"])
def test_a_bad_action_is_an_error_and_changes_nothing_for_that_agent(bad: object) -> None:
    env = opinion_env(n=6)
    _, infos = env.reset(seed=1)
    agent = _first_active(env, infos)
    i = env.index(agent)
    before = env.scenario.x[i]
    others = {a: "compromise" for a in env.agents if a != agent}
    obs, rewards, terms, truncs, infos = env.step({**others, agent: bad})
    assert "error" in infos[agent] and infos[agent]["error"].startswith("Invalid action")
    assert "Allowed actions" in infos[agent]["error"] and len(infos[agent]["error"]) < 400
    assert env.scenario.x[i] == before
    assert rewards[agent] == 0.0
    assert not any("error" in infos[a] for a in others)


def test_an_inactive_agent_may_only_wait() -> None:
    env = diffusion_env()
    _, infos = env.reset(seed=0)
    idle = next(a for a in env.agents if not infos[a]["active"] and not env.scenario.adopted[env.index(a)])
    _, _, _, _, infos = env.step({idle: "share"})
    assert "not active" in infos[idle]["error"]
    assert not env.scenario.adopted[env.index(idle)]


def test_missing_agents_make_no_move() -> None:
    env = opinion_env()
    env.reset(seed=2)
    x = env.scenario.x.copy()
    env.step({})
    assert np.array_equal(env.scenario.x, x)


def test_after_the_end_every_step_is_refused_with_the_same_flags() -> None:
    env = opinion_env(rounds=2)
    env.reset(seed=0)
    env.step({})
    _, _, terms, truncs, _ = env.step({})
    assert all(truncs.values()) and not any(terms.values()) and env.agents == []
    obs, rewards, terms, truncs, infos = env.step({"agent_0": "keep"})
    assert truncs == {"agent_0": True} and terms == {"agent_0": False} and rewards == {"agent_0": 0.0}
    assert "reset()" in infos["agent_0"]["error"]


def test_same_seed_same_run_and_snapshot_restore(make_env) -> None:
    def play(env: SocietyEnv, seed: int, k: int) -> list[dict]:
        rng = np.random.default_rng(seed)
        obs, infos = env.reset(seed=seed)
        out = [obs]
        for _ in range(k):
            if not env.agents:
                break
            acts = {a: str(rng.choice(infos[a]["available_actions"] + ["junk"])) for a in env.agents}
            obs, _, _, _, infos = env.step(acts)
            out.append(obs)
        return out

    a, b = make_env(), make_env()
    assert play(a, 5, 4) == play(b, 5, 4)
    env = make_env()
    env.reset(seed=3)
    env.step({})
    snap = env.snapshot()
    acts = {a: env.info(a)["available_actions"][0] for a in env.agents}
    first = env.step(acts)
    env.restore(snap)
    assert env.step(acts)[0] == first[0]


@pytest.mark.parametrize(
    "make,rule",
    [
        (lambda: SocietyEnv(OpinionScenario(complete_graph(30)), 15), Deffuant(0.3)),
        (lambda: SocietyEnv(OpinionScenario(gnm(30, 4, np.random.default_rng(1))), 15), DeGroot()),
        (lambda: SocietyEnv(DiffusionScenario(gnm(60, 4, np.random.default_rng(2))), 15), IndependentCascade(0.5)),
        (lambda: cooperation_env(n=6, rounds=15), IPDStrategies(["tit_for_tat", "random", "pavlov"] * 2)),
    ],
    ids=["deffuant", "degroot", "cascade", "ipd"],
)
def test_text_path_and_array_path_give_the_same_run(make, rule) -> None:
    """A rule's moves written as text and sent through `step` give the run `step_moves` gives."""
    fast, text = make(), make()
    fast.start(7)
    text.reset(seed=7)
    r1, r2 = np.random.default_rng(9), np.random.default_rng(9)
    while fast.agents:
        m1 = rule.decide(fast.scenario, fast.scenario.active, r1)
        res = fast.step_moves(m1)
        m2 = rule.decide(text.scenario, text.scenario.active, r2)
        _, rewards, terms, truncs, infos = text.step(text_actions(text, m2))
        assert not any("error" in i for i in infos.values())
        assert np.array_equal(
            text.scenario.node_state(), fast.scenario.node_state()
        )  # exact: moves are written losslessly
        assert [rewards[a] for a in sorted(rewards, key=text.index)] == res.rewards.tolist()
        assert all(terms.values()) == res.terminated and all(truncs.values()) == res.truncated
    assert not text.agents


def test_moves_by_inactive_agents_are_dropped_on_the_fast_path() -> None:
    env = diffusion_env()
    env.start(0)
    idle = np.flatnonzero(~env.scenario.is_active & ~env.scenario.adopted)[:2]
    env.step_moves(Moves(idle, np.full(idle.size, 1, np.int8)))
    assert not env.scenario.adopted[idle].any()


def test_sparse_activation_follows_persona_activity() -> None:
    from societies.personas import make_personas

    env = SocietyEnv(OpinionScenario(complete_graph(2000), personas=make_personas(2000, activity=0.1)), 5)
    env.start(0)
    share = env.scenario.active.size / 2000
    assert 0.07 < share < 0.13  # Binomial(2000, 0.1): 0.1 +- 5 standard deviations
    moves = Deffuant(1.0).decide(env.scenario, env.scenario.active, np.random.default_rng(0))
    assert np.all(moves.code == COMPROMISE)


def test_mixed_step_text_for_one_agent_rules_for_the_rest() -> None:
    """An LLM seat's text action wins over the rule's move for that seat; everyone else follows the rule."""
    env = opinion_env(n=10)
    env.reset(seed=4)
    x = env.scenario.x.copy()
    moves = Deffuant(1.0).decide(env.scenario, env.scenario.active, np.random.default_rng(0))  # all compromise
    obs, _, _, _, infos = env.step_mixed({"agent_0": "keep", "agent_1": "sing"}, moves)
    assert env.scenario.x[0] == x[0] and env.scenario.x[1] == x[1] and "error" in infos["agent_1"]
    assert np.all(env.scenario.x[2:] != x[2:]) and set(obs) == set(env.possible_agents)
