"""Search and MC labels branch from env snapshots: every chosen trajectory must replay exactly."""

from __future__ import annotations

import numpy as np
import pytest

from envs.webshop.env import WebShopEnv
from envs.webshop.render import render
from prm.episodes import from_record
from prm.policy import Sample, apply, rollout, start, to_episode
from prm.search import beam_search, best_of_n, ended, rerank
from prm.targets.mc import mc_labels, replay
from tests.prm.conftest import collect_run, scripted_sampler


class FakeScorer:
    """Scores a node's last step by a fixed rule (no model): enough to drive and check the search."""

    def __init__(self, rule):
        self.rule = rule
        self.calls = 0

    def score_last(self, items):
        self.calls += len(items)
        return np.array([self.rule(instr, obs, acts) for instr, obs, acts in items], dtype=float)


def assert_replays(env: WebShopEnv, node, goal: int) -> None:
    """A fresh env given the node's actions reproduces its observations and rewards exactly."""
    obs, _ = env.reset(options={"goal_index": goal})
    assert node.observations[0] == obs
    for step in node.steps:
        obs, r, term, _, _ = env.step(step.action)
        assert obs == step.observation and r == step.reward and term == step.terminated


def test_apply_restores_the_parent_state_between_siblings(webshop):
    root = start(webshop, options={"goal_index": 1})
    search = Sample(webshop.expert_action(), "")
    child = apply(webshop, root, search, max_steps=15)
    first = apply(webshop, child, Sample(child.info["available_actions"][-1], ""), max_steps=15)
    second = apply(webshop, child, Sample(child.info["available_actions"][-2], ""), max_steps=15)
    fresh = WebShopEnv(split="test", num_products=webshop.config.num_products)
    for node in (child, first, second):
        assert_replays(fresh, node, 1)
    assert first.observation != second.observation
    assert len(second.steps) == 2 and second.steps[0] == child.steps[0]


def test_beam_search_results_replay_exactly(webshop):
    sampler = scripted_sampler(0.5)
    scorer = FakeScorer(lambda instr, obs, acts: -len(acts) + 0.01 * (hash(acts[-1]) % 7))
    res = beam_search(webshop, sampler, scorer, n=2, m=3, seed=0, max_steps=15, options={"goal_index": 2})
    assert len(res.finished) >= 1 and res.best in res.finished
    assert res.best.score == max(n.score for n in ended(res.finished))
    assert res.samples >= 3 and res.scored == scorer.calls
    fresh = WebShopEnv(split="test", num_products=webshop.config.num_products)
    for node in res.finished:
        assert node.done
        assert_replays(fresh, node, 2)


def test_an_early_finish_does_not_take_a_live_beam_slot(webshop):
    """A scorer that loves `buy now` must not end a 2-wide beam at the first purchase: finished
    children are set aside as candidates and the search goes on until 2 have finished."""
    scorer = FakeScorer(lambda instr, obs, acts: 1.0 if acts[-1] == "click[buy now]" else 0.01 * len(acts))
    res = beam_search(webshop, scripted_sampler(0.5), scorer, n=2, m=3, seed=0, max_steps=15, options={"goal_index": 2})
    assert len(res.finished) >= 2
    assert res.best.score == max(n.score for n in ended(res.finished))


def test_guided_search_follows_the_scorer(webshop):
    """With a scorer that prefers the expert's action, reranking a noisy policy finishes the task."""
    expert = WebShopEnv(split="test", num_products=webshop.config.num_products)

    def rule(instr, obs, acts):  # replay the prefix in a second env and ask its expert
        expert.reset(options={"goal_index": 3})
        for a in acts[:-1]:
            expert.step(a)
        return float(acts[-1] == expert.expert_action())

    res = rerank(webshop, scripted_sampler(0.9), FakeScorer(rule), m=6, seed=1, max_steps=15, options={"goal_index": 3})
    assert res.best.terminated and res.best.outcome() == 1.0


def test_best_of_n_picks_the_highest_promise_and_random_needs_no_scorer(webshop):
    sampler = scripted_sampler(0.5)
    scorer = FakeScorer(lambda instr, obs, acts: float(len(acts)))
    res = best_of_n(webshop, sampler, scorer, n=4, seed=0, max_steps=15, options={"goal_index": 4})
    assert len(res.finished) == 4 and len(res.best.steps) == max(len(n.steps) for n in ended(res.finished))
    rnd = best_of_n(webshop, sampler, None, n=4, seed=0, max_steps=15, options={"goal_index": 4})
    assert [len(n.steps) for n in rnd.finished] == [len(n.steps) for n in res.finished]  # same samples, same seed


def test_a_trajectory_cut_by_the_step_limit_is_never_the_answer_when_one_really_ended(webshop):
    """A scorer that prefers long trajectories would pick one cut at max_steps; that is a known failure."""
    scorer = FakeScorer(lambda instr, obs, acts: float(len(acts)))
    res = best_of_n(webshop, scripted_sampler(0.7), scorer, n=8, seed=3, max_steps=6, options={"goal_index": 4})
    cut = [n for n in res.finished if n.truncated]
    real = [n for n in res.finished if n.terminated]
    assert cut and real, "the seed must give both kinds for this test to mean anything"
    assert max(n.score for n in cut) > max(n.score for n in real)
    assert res.best.terminated and res.best.score == max(n.score for n in real)
    beam = beam_search(webshop, scripted_sampler(0.7), scorer, n=3, m=3, seed=3, max_steps=6, options={"goal_index": 4})
    if any(n.terminated for n in beam.finished):
        assert beam.best.terminated
    only_cut = best_of_n(webshop, scripted_sampler(1.0), scorer, n=2, seed=0, max_steps=1, options={"goal_index": 4})
    assert only_cut.best.truncated  # nothing ended: the best of the cut ones is still an answer


def test_branch_rollouts_share_the_path_prefix_and_differ_at_the_branch(webshop):
    from prm.policy import branch_rollouts

    root = start(webshop, options={"goal_index": 2})
    ends, steps = branch_rollouts(
        webshop, scripted_sampler(0.0), scripted_sampler(0.5), root, branches=3, seed=1, max_steps=15
    )
    path, branches = ends[0], ends[1:]
    assert len(branches) == 3
    fresh = WebShopEnv(split="test", num_products=webshop.config.num_products)
    sampled = len(path.steps)
    for b in branches:
        k = next(i for i, (x, y) in enumerate(zip(b.actions, path.actions)) if x != y)  # the branch point
        assert b.actions[:k] == path.actions[:k] and b.steps[k].raw_output == "(branch)"
        assert_replays(fresh, b, 2)
        sampled += len(b.steps) - k
    assert steps == sampled  # the shared prefix is not counted again


def test_mc_labels_replay_and_expert_policy_labels_are_its_outcome(tmp_path, webshop, shop_kwargs):
    [ep] = collect_run(tmp_path, "test", [5], 1, 0.0, shop_kwargs)
    nodes = replay(webshop, ep, max_steps=15)
    assert [n.observation for n in nodes] == [s.observation for s in ep.steps]
    labels = mc_labels(webshop, ep, scripted_sampler(0.0), k=2, seed=0, max_steps=15)
    assert ep.outcome.reward == 1.0
    assert labels.q.tolist() == [1.0] * len(ep.steps)  # the deterministic expert always finishes
    assert labels.sampled_steps > 0


def test_mc_labels_of_a_noisy_policy_are_mean_outcomes(tmp_path, webshop, shop_kwargs):
    [ep] = collect_run(tmp_path, "test", [6], 1, 0.5, shop_kwargs, seed=3)
    labels = mc_labels(webshop, ep, scripted_sampler(0.5), k=3, seed=0, max_steps=15)
    assert labels.q.shape == (len(ep.steps),)
    assert ((labels.q >= 0) & (labels.q <= 1)).all()
    assert labels.q[-1] == pytest.approx(ep.outcome.reward if ep.outcome.terminated else 0.0)


@pytest.mark.slow
def test_search_with_the_embedded_llm_as_policy(webshop, local_brain):
    """Any brain that can sample drives the search: the local llama.cpp model ranking WebShop's actions."""
    from prm.policy import BrainSampler

    sampler = BrainSampler(local_brain, temperature=1.0, agent_cfg={"mode": "choose"})
    samples = sampler.sample(webshop, *_state(webshop), n=3, seed=0)
    assert all(s.action is not None and s.action.startswith("search[") for s in samples)
    res = rerank(
        webshop,
        sampler,
        FakeScorer(lambda i, o, a: float(len(set(a)))),
        m=2,
        seed=0,
        max_steps=3,
        options={"goal_index": 7},
    )
    assert len(res.best.steps) == 3 and res.samples == 6
    fresh = WebShopEnv(split="test", num_products=webshop.config.num_products)
    assert_replays(fresh, res.best, 7)


def _state(env):
    obs, info = env.reset(options={"goal_index": 7})
    return info["instruction"], obs, info


def test_mc_labels_with_gamma_discount_by_the_steps_to_the_end(tmp_path, webshop, shop_kwargs):
    """With gamma < 1 an outcome n steps away is worth gamma**n: what TD targets with that gamma estimate."""
    [ep] = collect_run(tmp_path, "test", [5], 1, 0.0, shop_kwargs)
    labels = mc_labels(webshop, ep, scripted_sampler(0.0), k=2, seed=0, max_steps=15, gamma=0.9)
    # from the state after step t the deterministic expert walks the rest of its own path: len - 1 - t steps
    expected = [0.9 ** (len(ep.steps) - 1 - t) for t in range(len(ep.steps))]
    assert labels.q.tolist() == pytest.approx(expected)
    assert labels.q[-1] == 1.0 and labels.q[0] < 0.9**2
    with pytest.raises(ValueError, match="gamma"):
        mc_labels(webshop, ep, scripted_sampler(0.0), k=1, seed=0, max_steps=15, gamma=1.5)


def test_ending_branches_end_early_where_the_path_went_on(webshop):
    """A premature `buy now` off a policy path: one step, really ended, labelled by its own outcome, replayable."""
    from prm.policy import ending_branches

    root = start(webshop, options={"goal_index": 3})
    path = [root]
    end, _ = rollout(webshop, scripted_sampler(0.0), root, seed=0, max_steps=15, path=path)
    kids, probed = ending_branches(webshop, path, branches=2, seed=1, max_steps=15)
    assert kids and probed >= len(kids)
    for kid in kids:
        assert kid.terminated and kid.actions[-1] == "click[buy now]"
        at = len(kid.actions) - 1
        assert kid.actions[:at] == end.actions[:at] and end.actions[at] != "click[buy now]"  # the path went on there
        assert kid.outcome() < 1.0  # the expert buys once, when everything is right: earlier is worse
        replayed = start(webshop, options={"goal_index": 3})
        for a in kid.actions:
            replayed = apply(webshop, replayed, Sample(a, "x"), 15)
        assert replayed.terminated and replayed.last_reward == kid.last_reward


def test_the_prm_reads_states_in_the_envs_compact_form(shop_kwargs):
    """Search scores, and training reads, WebShop's text_rich pages as the env compacts them (no markup in prm/)."""
    env = WebShopEnv(split="test", observation_mode="text_rich", **shop_kwargs)
    root = start(env, options={"goal_index": 0})
    node = apply(env, root, Sample(env.expert_action(), ""), max_steps=15)
    node = apply(env, node, Sample(env.expert_action(), ""), max_steps=15)
    _, states, actions = node.prm_item()
    assert node.observations[0] == root.observation and "button_]" in node.observations[1]  # the policy sees the page
    assert states == [WebShopEnv.compact_observation(o) for o in node.observations] and actions == node.actions
    assert all("button_]" not in s for s in states)
    ep = to_episode(node, episode_id="rich", env_name="webshop", env_id="agentsim/WebShop-v0", seed=0, brain="b")
    assert from_record(ep).observations == states
    assert from_record(ep.model_copy(update={"env_id": "toy"})).observations == node.observations


def test_branches_through_time_limit_keep_their_own_step_count(shop_kwargs):
    """A branch restored mid-episode is cut by `TimeLimit` at its own depth, not after the steps of its siblings."""
    import gymnasium as gym

    env = gym.make("agentsim/WebShop-v0", max_episode_steps=3, split="test", num_products=shop_kwargs["num_products"])
    bad = Sample("click[no such button]", "")  # refused, but a step for the limit
    path = [start(env, options={"goal_index": 1})]
    for _ in range(3):
        path.append(apply(env, path[-1], bad, max_steps=10))
    assert [n.truncated for n in path[1:]] == [False, False, True] and path[-1].steps[-1].env_error
    branch = apply(env, path[1], bad, max_steps=10)
    assert len(branch.steps) == 2 and not branch.truncated
    assert apply(env, branch, bad, max_steps=10).truncated


def test_sibling_rollouts_step_every_listed_action_at_a_state(webshop):
    """Sibling sets: at a path state, the path's own action and others listed there, each continued to the end."""
    from prm.policy import sibling_rollouts

    root = start(webshop, options={"goal_index": 2})
    ends, steps = sibling_rollouts(
        webshop, scripted_sampler(0.0), scripted_sampler(0.0), root, states=2, max_siblings=4, seed=3, max_steps=15
    )
    path, sibs = ends[0], ends[1:]
    assert path.terminated and 2 <= len(sibs) <= 8
    at_state: dict[int, list] = {}
    sampled = len(path.steps)
    for s in sibs:
        k = next((i for i, n in enumerate(s.steps) if n.raw_output == "(sibling)"), None)
        assert k is not None and s.actions[:k] == path.actions[:k]  # the shared prefix
        at_state.setdefault(k, []).append(s.actions[k])
        assert s.done
        sampled += len(s.steps) - k
    for k, acts in at_state.items():
        assert path.actions[k] in acts and len(set(acts)) == len(acts)  # the path's own action, then other ones
    fresh = WebShopEnv(split="test", num_products=webshop.config.num_products)
    for s in sibs[:3]:
        assert_replays(fresh, s, 2)
    assert steps == sampled  # the shared prefix is not counted again


class StateProbe:
    """A policy that checks, at every draw, that the env stands at the state it is asked to act in: a brain bound
    to the env (the scripted expert) reads the live env, so a search that leaves it at another node corrupts it."""

    def __init__(self, inner):
        self.inner, self.calls, self.elsewhere = inner, 0, 0

    def sample(self, env, instruction, observation, info, n, seed):
        base = env.unwrapped
        self.calls += 1
        self.elsewhere += render(base.view(), base.config.observation_mode) != observation
        return self.inner.sample(env, instruction, observation, info, n, seed)


def test_every_search_samples_with_the_env_at_the_node_it_expands(tmp_path, webshop, shop_kwargs):
    """Beam search expands beam b after stepping the children of beam b - 1, Best-of-N and MC labels roll out
    again from a node the last rollout left: each must put the env back first (this once corrupted every beam,
    rerank and MC label of the scripted policy)."""
    scorer = FakeScorer(lambda instr, obs, acts: 0.01 * (hash(acts[-1]) % 7) - 0.1 * len(acts))
    opts = {"goal_index": 2}
    for run in (
        lambda p: beam_search(webshop, p, scorer, n=3, m=3, seed=0, max_steps=15, options=opts),
        lambda p: rerank(webshop, p, scorer, m=4, seed=1, max_steps=15, options=opts),
        lambda p: best_of_n(webshop, p, scorer, n=4, seed=2, max_steps=15, options=opts),
    ):
        probe = StateProbe(scripted_sampler(0.5))
        run(probe)
        assert probe.calls > 4 and probe.elsewhere == 0
    [ep] = collect_run(tmp_path, "test", [5], 1, 0.3, shop_kwargs)
    probe = StateProbe(scripted_sampler(0.3))
    mc_labels(webshop, ep, probe, k=3, seed=0, max_steps=15)
    assert probe.calls > len(ep.steps) and probe.elsewhere == 0


def test_a_rollout_from_an_earlier_node_follows_that_nodes_expert(webshop):
    """The deterministic expert rolled out from a node of its own path repeats the rest of that path, wherever
    the env was left."""
    root = start(webshop, options={"goal_index": 4})
    path = [root]
    end, _ = rollout(webshop, scripted_sampler(0.0), root, seed=0, max_steps=15, path=path)
    again, n = rollout(webshop, scripted_sampler(0.0), path[1], seed=0, max_steps=15)  # the env stands at `end`
    assert again.actions == end.actions and n == len(end.actions) - 1


class SkewedSampler:
    """Draws the expert's action `k` times and every other listed action once (cycled), so the share of the
    draws is known exactly: the policy prior the search may weigh."""

    def __init__(self, k: int):
        self.k = k

    def sample(self, env, instruction, observation, info, n, seed):
        best = env.unwrapped.expert_action()
        others = [a for a in info["available_actions"] if a != best] or [best]
        draws = [best] * min(self.k, n) + [others[i % len(others)] for i in range(max(0, n - self.k))]
        return [Sample(a, a) for a in draws]


def test_the_vote_without_a_prm_takes_the_most_drawn_action_at_every_step(webshop):
    res = rerank(webshop, SkewedSampler(3), None, m=5, seed=0, max_steps=15, options={"goal_index": 3}, prior=1.0)
    assert res.scored == 0 and res.best.terminated and res.best.outcome() == 1.0
    assert_replays(WebShopEnv(split="test", num_products=webshop.config.num_products), res.best, 3)
    with pytest.raises(ValueError, match="prior"):
        rerank(webshop, SkewedSampler(3), None, m=5, seed=0, max_steps=15, options={"goal_index": 3})


def test_the_prior_outweighs_a_small_prm_error_but_not_a_large_one(webshop):
    """Promise + w * log share: a wrong action the PRM prefers by 0.05 loses to an action drawn three times as
    often at w = 0.1 (0.1 * log 3 = 0.11), and still wins when the PRM prefers it by 0.5."""

    def second_action(margin: float, prior: float) -> str:  # the first page lists only the search
        def rule(instr, obs, acts):
            return 0.0 if acts[-1] in expert else margin

        res = rerank(
            webshop,
            SkewedSampler(3),
            FakeScorer(rule),
            m=5,
            seed=0,
            max_steps=2,
            options={"goal_index": 3},
            prior=prior,
        )
        return res.best.actions[1]

    webshop.reset(options={"goal_index": 3})
    expert = [webshop.unwrapped.expert_action()]
    webshop.step(expert[0])
    expert.append(webshop.unwrapped.expert_action())
    assert second_action(0.05, 0.0) != expert[1]  # the PRM alone takes its error
    assert second_action(0.05, 0.1) == expert[1]
    assert second_action(0.5, 0.1) != expert[1]


def test_python_m_prm_search_runs_the_unguided_vote_without_a_model(tmp_path):
    """strategy=vote needs no PRM: the command's driver runs it end to end and writes the chosen trajectories."""
    from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
    from prm.run_search import run_search

    cfg = {
        "strategy": "vote",
        "m": 5,
        "episodes": 2,
        "out": str(tmp_path / "vote"),
        "env": {"name": "webshop", "id": "agentsim/WebShop-v0", "max_steps": 15, "kwargs": {"split": "test"}},
        "brain": {"name": "scripted", "epsilon": 0.5},
    }
    results = run_search(cfg)
    assert len(results) == 2 and all(r.scored == 0 and r.meta["prior"] == 1.0 for r in results)
    episodes = list(TrajectoryStore(tmp_path / "vote" / TRAJECTORIES).read(strict=True))
    assert [e.meta["search"]["strategy"] for e in episodes] == ["rerank", "rerank"]


def test_a_cut_search_resumes_with_the_same_settings_and_refuses_others(tmp_path):
    """resume=true plays only the seeds `out` lacks; another strategy into the same folder, or a rerun without resume,
    is refused with what differs, and nothing stored is lost."""
    from agents.config import ConfigError
    from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
    from prm.run_search import run_search

    out = tmp_path / "vote"
    cfg = {
        "strategy": "vote",
        "m": 3,
        "episodes": 2,
        "out": str(out),
        "env": {"name": "webshop", "id": "agentsim/WebShop-v0", "max_steps": 15, "kwargs": {"split": "test"}},
        "brain": {"name": "scripted", "epsilon": 0.5},
    }
    assert len(run_search(cfg)) == 2  # seeds 0, 1 (the run that was cut)
    first = list(TrajectoryStore(out / TRAJECTORIES).read(strict=True))
    with pytest.raises(ConfigError, match="already holds 2 searched episodes; resume=true"):
        run_search(cfg | {"episodes": 4})
    with pytest.raises(ConfigError, match=r"changed: m\)"):
        run_search(cfg | {"episodes": 4, "m": 5, "resume": True})
    assert len(run_search(cfg | {"episodes": 4, "resume": True})) == 2  # only seeds 2, 3 are played
    episodes = list(TrajectoryStore(out / TRAJECTORIES).read(strict=True))
    assert [e.seed for e in episodes] == [0, 1, 2, 3] and episodes[:2] == first
